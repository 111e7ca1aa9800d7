#!/usr/bin/env bash
# fabret-10m (or another preset) over gRPC into one cohortd with default
# flags and a data directory (--fsync=always, the default), then SIGKILL
# and a restart (recovery from the snapshots the server wrote and the
# journal's tail), then SIGTERM (a snapshot of everything) and a restart
# from it. Prints the load report, the server's RSS after the load, the
# data directory's size, each recovery's "recovered" line, the wall time
# from start to serving, and the subscription count after each restart.
#
#   bench/reports/2026-11-29-epyc2-issue45-10m/load_recover.sh [preset]
set -euo pipefail
cd "$(dirname "$0")/../../.."
readonly BIN=${COHORT_BIN:-.bazel/out/k8-opt/bin}
readonly PRESET=${1:-fabret-10m}
work=$(mktemp -d "${TMPDIR:-/tmp}/load_recover.XXXXXX")
pid=""
port=""
cleanup() {
  [[ -n "${pid}" ]] && kill -9 "${pid}" 2>/dev/null
  rm -rf "${work}"
}
trap cleanup EXIT

source tools/testing/cohortd.sh
# start LOG: cohortd on 127.0.0.1 with --data_dir; waits up to 600 s for
# it to serve (recovery comes first).
start() {
  COHORTD_START_TIMEOUT_S=600 start_cohortd "$1" "${BIN}/service/cohortd" \
    --listen=127.0.0.1:0 --data_dir="${work}/data" || exit 1
  pid=${COHORTD_PID}
  port=${COHORTD_PORT}
}
count() {
  "${BIN}/client/cohort" stats --server="127.0.0.1:${port}" |
    sed -n 's/^\([0-9]*\) subscriptions,.*/\1/p'
}

echo "date: $(date -u +%FT%TZ); $(nproc) CPUs; preset ${PRESET}"
start "${work}/load.log"
head -1 "${work}/load.log"
"${BIN}/client/cohort" load --server="127.0.0.1:${port}" --preset="${PRESET}" \
  --events=100 --mode=none | grep -v "^subscribing"
echo "after the load: RSS $(($(ps -o rss= -p "${pid}") / 1024)) MB," \
  "$(count) subscriptions"
kill -9 "${pid}"
wait "${pid}" 2>/dev/null || true
echo "SIGKILL; data dir $(du -sm "${work}/data" | cut -f1) MB"
for how in kill term; do
  started=$(date +%s.%N)
  start "${work}/${how}.log"
  serving=$(date +%s.%N)
  grep -m1 "recovered" "${work}/${how}.log" || true
  echo "restart after ${how}: serving after" \
    "$(echo "${serving} - ${started}" | bc) s, RSS" \
    "$(($(ps -o rss= -p "${pid}") / 1024)) MB, $(count) subscriptions"
  kill -TERM "${pid}"
  wait "${pid}" 2>/dev/null || true
  [[ "${how}" == kill ]] &&
    echo "SIGTERM; data dir $(du -sm "${work}/data" | cut -f1) MB"
done
pid=""
