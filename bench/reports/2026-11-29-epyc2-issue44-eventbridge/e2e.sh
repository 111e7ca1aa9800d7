#!/usr/bin/env bash
# eventbridge-1m end to end: cohortd (default flags, or those given) on
# 127.0.0.1, the preset's 1,000,000 patterns loaded by `cohort load
# --mode=none`, then its JSON events published for 10 s (after 2 s of
# warm-up) from 4 PublishStreams, 32 events a request, 8 in flight each,
# by `cohort load --skip_load` on the same 2 cores. Prints the load
# report, the publish report, and what the server and the load generator
# spent in CPU over the publish call (utime + stime from /proc), and so
# the events published per second of server CPU.
#
#   bench/reports/2026-11-29-epyc2-issue44-eventbridge/e2e.sh [cohortd flags]
#   e.g. ... e2e.sh --cohort_max=1
set -euo pipefail
cd "$(dirname "$0")/../../.."
readonly BIN=${COHORT_BIN:-.bazel/out/k8-opt/bin}
source tools/testing/cohortd.sh
log=$(mktemp)
server_pid=""
trap '[[ -n "${server_pid}" ]] && stop_cohortd "${server_pid}"; rm -f "${log}"' EXIT
start_cohortd "${log}" "${BIN}/service/cohortd" --listen=127.0.0.1:0 "$@" ||
  exit 1
server_pid=${COHORTD_PID}
target="127.0.0.1:${COHORTD_PORT}"
head -1 "${log}"
"${BIN}/client/cohort" load --server="${target}" --preset=eventbridge-1m \
  --mode=none | grep -v "^subscribing"
# CPU seconds of a process: utime + stime (fields 14 and 15, in ticks).
cpu() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' \
  "/proc/$1/stat"; }
published() {
  "${BIN}/client/cohort" stats --server="${target}" |
    sed -n 's/.* subscriptions, \([0-9]*\) events published.*/\1/p'
}
before_cpu=$(cpu "${server_pid}")
before_events=$(published)
start=$(date +%s.%N)
/usr/bin/time -f "load generator: %U s user, %S s system" \
  "${BIN}/client/cohort" load --server="${target}" --preset=eventbridge-1m \
  --skip_load --mode=stream --clients=4 --batch=32 --window=8 --warmup=2 \
  --duration=10
wall=$(awk -v s="${start}" -v e="$(date +%s.%N)" 'BEGIN { print e - s }')
server_cpu=$(awk -v a="${before_cpu}" -v b="$(cpu "${server_pid}")" \
  'BEGIN { print b - a }')
events=$(( $(published) - before_events ))
awk -v e="${events}" -v c="${server_cpu}" -v w="${wall}" 'BEGIN {
  printf "publish call: %d events in %.1f s wall; server CPU %.1f s " \
    "(%.2f cores); %.0f events per server CPU second\n", e, w, c, c / w,
    e / c }'
"${BIN}/client/cohort" stats --server="${target}" | sed -n '/^stage/,/^$/p'
