#!/usr/bin/env bash
# Restart time of cohortd over one data directory holding PRESET
# (fabret-10m), builds alternating, ROUNDS rounds: the first build named
# subscribes the preset over gRPC and stops with SIGTERM (one snapshot);
# then each build in turn starts on it and is timed from start to serving
# (recovery: read the snapshot, hand the subscriptions to the engine in
# chunks of 1M), its "recovered" line printed, then stopped with SIGTERM.
#
#   bench/reports/2026-11-29-epyc2-issue45-folds/restart.sh DIR...
#
# Each DIR holds service/cohortd and client/cohort (built -c opt).
set -euo pipefail
cd "$(dirname "$0")/../../.."
readonly PRESET=${PRESET:-fabret-10m} ROUNDS=${ROUNDS:-4}
source tools/testing/cohortd.sh
work=$(mktemp -d "${TMPDIR:-/tmp}/restart.XXXXXX")
trap 'rm -rf "${work}"' EXIT
start() {  # start BIN: cohortd on the data directory; sets pid
  COHORTD_START_TIMEOUT_S=600 start_cohortd "${work}/log" \
    "$1/service/cohortd" --listen=127.0.0.1:0 --data_dir="${work}/data" ||
    exit 1
  pid=${COHORTD_PID}
}
stop() {
  kill -TERM "${pid}"
  wait "${pid}" 2>/dev/null || true
}
echo "date: $(date -u +%FT%TZ); $(nproc) CPUs; preset ${PRESET}"
start "$1"
"$1/client/cohort" load --server="127.0.0.1:${COHORTD_PORT}" \
  --preset="${PRESET}" --events=100 --mode=none | grep -v "^subscribing"
stop
for round in $(seq "${ROUNDS}"); do
  for bin in "$@"; do
    started=$(date +%s.%N)
    start "${bin}"
    serving=$(date +%s.%N)
    echo "round ${round} ${bin}: serving after" \
      "$(echo "${serving} - ${started}" | bc) s; $(grep -m1 recovered \
      "${work}/log" | sed 's/ from [^ ]* / /')"
    stop
  done
done
