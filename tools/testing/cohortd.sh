# Starting and stopping cohortd from shell scripts (sourced, not run): the
# shell tests, ./run.sh and the bench/ drivers all start servers on port 0
# and need the port it printed.
#
#   source tools/testing/cohortd.sh
#   start_cohortd "${log}" "${COHORTD}" --listen=127.0.0.1:0 ... || exit 1
#   ... 127.0.0.1:${COHORTD_PORT} ...
#   stop_cohortd "${COHORTD_PID}"

# cohort_binaries [BIN]: the cohortd and cohort a bench/ driver runs, in
# COHORTD_BIN and COHORT_BIN: those in BIN (a tools/bundle.sh bundle holds
# both), or without BIN built here (tools/setup.sh, bazel build -c opt).
# Returns non-zero if the build fails.
cohort_binaries() {
  if [[ -n "${1:-}" ]]; then
    COHORTD_BIN="$1/cohortd"
    COHORT_BIN="$1/cohort"
    return 0
  fi
  tools/setup.sh || return 1
  bazel build -c opt //service:cohortd //client:cohort || return 1
  COHORTD_BIN=.bazel/out/k8-opt/bin/service/cohortd
  COHORT_BIN=.bazel/out/k8-opt/bin/client/cohort
}

# start_cohortd LOG COMMAND...: runs COMMAND (cohortd, possibly behind
# taskset) in the background with its output in LOG, waits up to
# COHORTD_START_TIMEOUT_S (default 30) seconds for its "cohortd: serving on
# port N" line (recovery comes first), and sets COHORTD_PID and
# COHORTD_PORT. If it exits or never serves, prints LOG to stderr and
# returns 1.
start_cohortd() {
  local log=$1
  shift
  # Removed first: the background redirection truncates LOG only later, and
  # a port left in it by an earlier server must not be read meanwhile.
  rm -f "${log}"
  "$@" >"${log}" 2>&1 &
  COHORTD_PID=$!
  COHORTD_PORT=""
  for _ in $(seq $((${COHORTD_START_TIMEOUT_S:-30} * 10))); do
    COHORTD_PORT=$(sed -n 's/^cohortd: serving on port \([0-9]*\).*/\1/p' \
      "${log}" 2>/dev/null || true)
    [[ -n "${COHORTD_PORT}" ]] && return 0
    kill -0 "${COHORTD_PID}" 2>/dev/null || break
    sleep 0.1
  done
  echo "cohortd did not start ($*):" >&2
  cat "${log}" >&2
  return 1
}

# stop_cohortd PID: SIGTERM, then waits for it to exit. Never fails (safe
# under set -e): the server may have exited already.
stop_cohortd() {
  kill -TERM "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}
