#!/bin/bash
# Mask buffers (--cohorts_in_flight) at 16 partitions on the lent 16-core
# machine, from a bundle (tools/bundle.sh), and a stage profile of the
# partitioned and threaded servers under both loads of experiment 3.
#
#   bench/reports/2026-11-26-xeon16-buffers/run.sh OUT
#
# Matcher only: locality_probe --threads (the server's CohortPipeline, P
# pinned threads), P = 1 with its default 2 buffers and P = 16 with 4, 5,
# 6 and 8, repetitions interleaved. End to end: cohortd at 16 partitions
# with 4, 6 and 8 buffers, threaded, and 1 partition, each with fabret-1m
# (1M subscriptions); experiment 3's loads (stream: 4 clients, batches of
# 32, window 8; closed16: 16 unary clients), 2 s warmup + 4 s, repetitions
# interleaved, `cohort stats --json` before and after every run.
# SUBS, EVENTS, REPS and P shrink it for a smoke run.
set -u
cd "$(dirname "$0")/../../.."
readonly B=dist/bundle/bin O="${1:-results/buffers}"
readonly SUBS="${SUBS:--1}" EVENTS="${EVENTS:-100000}" REPS="${REPS:-3}"
readonly P="${P:-16}"
mkdir -p "${O}/raw" "${O}/logs"
source tools/testing/cohortd.sh
{ date -u +%FT%TZ; nproc; grep -m1 "model name" /proc/cpuinfo; } >"${O}/machine.txt"

# --- matcher only ---
"${B}/cohort" workload --preset=fabret-1m --subscriptions="${SUBS}" \
  --events=16000 --out=/tmp/buffers.workload >/dev/null
echo "partitions,buffers,rep,match_seconds,matches" >"${O}/matcher.csv"
for rep in $(seq "${REPS}"); do
  for pk in 1:2 "${P}":4 "${P}":5 "${P}":6 "${P}":8; do
    p=${pk%:*} k=${pk#*:}
    "${B}/locality_probe" --workload=/tmp/buffers.workload --partitions="${p}" \
      --layout=partitioned --cohort_max=64 --threads --cohorts_in_flight="${k}" |
      python3 -c "import json,sys; d=json.load(sys.stdin); print('${p},${k},${rep},%s,%s' % (d['match_seconds'], d['matches']))" \
      >>"${O}/matcher.csv"
  done
done
echo "matcher done at ${SECONDS} s"

# --- end to end ---
W=(--preset=fabret-1m --subscriptions="${SUBS}" --events="${EVENTS}")
declare -A port
pids=()
trap 'kill -TERM "${pids[@]}" 2>/dev/null; wait' EXIT
start() {
  local name=$1
  shift
  start_cohortd "${O}/logs/${name}.log" "${B}/cohortd" --listen=127.0.0.1:0 \
    "$@" || exit 1
  pids+=("${COHORTD_PID}")
  port[${name}]=${COHORTD_PORT}
  "${B}/cohort" load --server="127.0.0.1:${COHORTD_PORT}" "${W[@]}" \
    --mode=none >"${O}/logs/load_${name}.log" 2>&1 || exit 1
  echo "${name}: $(head -1 "${O}/logs/${name}.log")"
}
start b4 --partitions="${P}" --cohorts_in_flight=4
start b6 --partitions="${P}" --cohorts_in_flight=6
start b8 --partitions="${P}" --cohorts_in_flight=8
start threaded --mode=threaded --threads="${P}"
start p1 --partitions=1
measure() {  # SERVER LOADNAME FLAGS...
  local s=$1 l=$2 f="${O}/raw/$1_$2_${rep}"
  shift 2
  "${B}/cohort" stats --server="127.0.0.1:${port[${s}]}" --json >"${f}.before.json"
  "${B}/cohort" load --server="127.0.0.1:${port[${s}]}" "${W[@]}" --skip_load \
    --warmup=2 --duration=4 "$@" --out="${f}.json" >/dev/null 2>&1
  "${B}/cohort" stats --server="127.0.0.1:${port[${s}]}" --json >"${f}.after.json"
  python3 -c "import json; d=json.load(open('${f}.json')); print('${s},${l},${rep},%s,%s' % (d['events_per_s'], d['latency_us']['mean'] if 'mean' in d['latency_us'] else ''))" \
    >>"${O}/e2e.csv"
}
echo "server,load,rep,events_per_s,mean_us" >"${O}/e2e.csv"
for rep in $(seq "${REPS}"); do
  for s in b4 b6 b8 threaded; do
    measure "${s}" stream --mode=stream --clients=4 --batch=32 --window=8
    measure "${s}" closed16 --mode=unary --batch=1 --clients=16
  done
  measure p1 stream --mode=stream --clients=4 --batch=32 --window=8
  echo "rep ${rep} done at ${SECONDS} s"
done
# The device tool brings back a limited number of files: the raw JSON and
# logs travel as one tarball.
tar czf "${O}/raw.tgz" -C "${O}" raw logs && rm -rf "${O}/raw" "${O}/logs"
