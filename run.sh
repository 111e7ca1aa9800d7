#!/usr/bin/env bash
# The server end to end on the Fabret workload: builds cohortd and the cohort
# CLI (-c opt), starts cohortd on 127.0.0.1 (a free port, default flags),
# loads fabret-1m's 1,000,000 subscriptions with batched Subscribe, publishes
# its events for 10 s from 4 PublishStreams (32 events per request, 8 requests
# in flight each), prints the load report and the server's stage profile
# (`cohort stats`), and stops the server (SIGTERM).
#
#   ./run.sh [cohort load flags]   # later flags win, e.g.
#   ./run.sh --mode=unary --clients=16      # closed loop, 16 clients
#   ./run.sh --subscriptions=100000 --duration=3
#   COHORTD_FLAGS="--cohort_max=1" ./run.sh # server flags
#
# The matcher alone: bazel run -c opt //bench:matcher_bench -- --help.
# The paper's experiments: bench/experiment.sh [--quick].
set -euo pipefail
cd "$(dirname "$0")"

tools/setup.sh
bazel build -c opt //service:cohortd //client:cohort
readonly BIN=.bazel/out/k8-opt/bin
source tools/testing/cohortd.sh
log=$(mktemp)
server_pid=""
cleanup() {
  if [[ -n "${server_pid}" ]]; then
    stop_cohortd "${server_pid}"
    echo "run.sh: $(tail -1 "${log}")"
  fi
  rm -f "${log}"
}
trap cleanup EXIT

# shellcheck disable=SC2086  # COHORTD_FLAGS holds several flags
start_cohortd "${log}" "${BIN}/service/cohortd" --listen=127.0.0.1:0 \
  ${COHORTD_FLAGS:-} || exit 1
server_pid=${COHORTD_PID}
port=${COHORTD_PORT}
head -1 "${log}"

cmd=("${BIN}/client/cohort" load --server="127.0.0.1:${port}" --preset=fabret-1m
  --mode=stream --clients=4 --batch=32 --window=8 --warmup=2 --duration=10 "$@")
echo "run.sh: ${cmd[*]}" >&2
"${cmd[@]}"
echo
"${BIN}/client/cohort" stats --server="127.0.0.1:${port}"
