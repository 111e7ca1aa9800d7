#!/bin/bash
# Load time of every preset, two builds alternated, two rounds: one
# AddBatch (--load_batch=0), the median, min and max of 3 loads a process.
#   load_presets.sh BASE_DIR NEW_DIR OUT   # each DIR holds bench/matcher_bench
base=$1; new=$2; out=$3; mkdir -p "${out}"
for round in 1 2; do
  for p in fabret-1m selective-1m ranges-1m events-1m eventbridge-1m; do
    for d in "${base}" "${new}"; do
      n=$(basename "${d}")
      "${d}/bench/matcher_bench" --preset="${p}" --events=2000 --cohort_max=64 \
        --repetitions=1 --load_batch=0 --load_repetitions=3 --format=json \
        >"${out}/${p}.${n}.${round}.json" 2>"${out}/${p}.${n}.${round}.err"
      echo "${round} ${p} ${n} $(grep -o '"load_s": [0-9.]*, "load_s_min": [0-9.]*, "load_s_max": [0-9.]*' "${out}/${p}.${n}.${round}.json") $(grep -o '"bytes_per_subscription": [0-9.]*' "${out}/${p}.${n}.${round}.json")"
    done
  done
done
