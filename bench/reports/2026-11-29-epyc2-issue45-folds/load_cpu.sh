#!/usr/bin/env bash
# Subscribes fabret-10m (or PRESET) over gRPC into cohortd with its default
# flags plus --data_dir, once per build named, builds alternating, ROUNDS
# rounds; prints per run the load's wall time, the server's CPU seconds
# (user + system from /proc, the load and the folds it started), its RSS
# at the load's end and 10 s later, its peak RSS (VmHWM), and the
# snapshots written.
#
#   bench/reports/2026-11-29-epyc2-issue45-folds/load_cpu.sh DIR...
#
# Each DIR holds service/cohortd and client/cohort (built -c opt).
set -euo pipefail
cd "$(dirname "$0")/../../.."
readonly PRESET=${PRESET:-fabret-10m} ROUNDS=${ROUNDS:-3}
source tools/testing/cohortd.sh
work=$(mktemp -d "${TMPDIR:-/tmp}/load_cpu.XXXXXX")
trap 'rm -rf "${work}"' EXIT
peak_mb() {  # VmHWM of PID, in MB
  echo $(($(awk '/VmHWM/ {print $2}' "/proc/$1/status") / 1024))
}
cpu_s() {  # utime + stime of PID, in seconds
  awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$1/stat"
}
echo "date: $(date -u +%FT%TZ); $(nproc) CPUs; preset ${PRESET}"
for round in $(seq "${ROUNDS}"); do
  for bin in "$@"; do
    rm -rf "${work}/data"
    start_cohortd "${work}/log" "${bin}/service/cohortd" \
      --listen=127.0.0.1:0 --data_dir="${work}/data" || exit 1
    pid=${COHORTD_PID}
    wall=$("${bin}/client/cohort" load --server="127.0.0.1:${COHORTD_PORT}" \
      --preset="${PRESET}" --events=100 --mode=none |
      sed -n 's/.* in \([0-9.]*\) s = .*/\1/p')
    cpu=$(cpu_s "${pid}")
    rss=$(($(ps -o rss= -p "${pid}") / 1024))
    sleep 10
    echo "round ${round} ${bin}: load ${wall} s, server CPU ${cpu} s," \
      "RSS ${rss} MB, 10 s later $(($(ps -o rss= -p "${pid}") / 1024)) MB," \
      "server CPU then $(cpu_s "${pid}") s," \
      "peak RSS $(peak_mb "${pid}") MB," \
      "snapshots $(ls "${work}/data" | tr '\n' ' ')"
    kill -9 "${pid}"
    wait "${pid}" 2>/dev/null || true
  done
done
