#!/usr/bin/env bash
# Experiment 2 (cohort limits under a saturating stream) with two builds
# side by side: for each limit a server of each build, fabret-1m loaded
# once, then in every repetition each limit measured on both builds in
# turn (the order swapped every repetition), so that drift hits both.
#   run.sh OLD_BIN NEW_BIN OUT [REPS] [DURATION_S]
# (each BIN a folder with cohortd and cohort; limits 4, 10, 20 and 64;
# the load of experiment 2: 4 streaming clients, 32 events a request,
# 8 requests in flight, after a 2 s warm-up)
set -euo pipefail
old=$1 new=$2 out=$3 reps=${4:-3} duration=${5:-5}
old=$(realpath "${old}") new=$(realpath "${new}") out=$(realpath -m "${out}")
cd "$(dirname "$0")/../../../.."  # the repository: tools/testing/cohortd.sh
source tools/testing/cohortd.sh
mkdir -p "${out}/raw" "${out}/logs"
limits=(4 10 20 64)
declare -A port
pids=()
trap 'for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; for p in "${pids[@]}"; do stop_cohortd "$p"; done' EXIT
workload=(--preset=fabret-1m --subscriptions=1000000 --events=100000)
for build in old new; do
  bin=${old}; [[ ${build} == new ]] && bin=${new}
  for l in "${limits[@]}"; do
    start_cohortd "${out}/logs/${build}-c${l}.log" "${bin}/cohortd" \
      --listen=127.0.0.1:0 --cohort_max="${l}" || exit 1
    pids+=("${COHORTD_PID}")
    port[${build}-${l}]=${COHORTD_PORT}
    "${bin}/cohort" load --server="127.0.0.1:${COHORTD_PORT}" "${workload[@]}" \
      --mode=none >"${out}/logs/load-${build}-c${l}.log" 2>&1
    echo "loaded ${build} c${l}"
  done
done
echo "build,limit,rep,events_per_s,p50_ms,p99_ms" >"${out}/runs.csv"
for rep in $(seq "${reps}"); do
  order=(old new); ((rep % 2 == 0)) && order=(new old)
  for l in "${limits[@]}"; do
    for build in "${order[@]}"; do
      bin=${old}; [[ ${build} == new ]] && bin=${new}
      f="${out}/raw/${build}-c${l}-${rep}.json"
      "${bin}/cohort" load --server="127.0.0.1:${port[${build}-${l}]}" \
        "${workload[@]}" --skip_load --warmup=2 --duration="${duration}" \
        --mode=stream --clients=4 --batch=32 --window=8 --out="${f}" \
        >"${out}/logs/${build}-c${l}-${rep}.log" 2>&1
      python3 -c 'import json,sys
d=json.load(open(sys.argv[1])); l=d["latency_us"]
print("%s,%s,%s,%.0f,%.2f,%.2f" % (sys.argv[2], sys.argv[3], sys.argv[4], d["events_per_s"], l["p50"]/1000, l["p99"]/1000))' \
        "${f}" "${build}" "${l}" "${rep}" | tee -a "${out}/runs.csv"
    done
  done
done
