#!/bin/bash
# Combined upper bound: the head and the direct-slots build (no slot table
# in phase 2) on fabret-1m's file and on it without its subscriptions of
# two or more equalities, cohort 64, both builds at once, CPUs swapped.
#   bound.sh ROUNDS HEAD_DIR DIRECT_DIR   (files in /tmp/bounds)
r=$1; a=$2; b=$3
run() {
  taskset -c "$2" "$1/bench/matcher_bench" --workload="/tmp/bounds/$4.txt" \
    --cohort_max=64 --repetitions=5 --load_batch=0 --format=text 2>&1 |
    grep -E '^cohort_max' | awk '{print $3}' > "/tmp/bound.$3"
}
for ((i = 0; i < r; i++)); do
  for f in fab fab-le1; do
    run "${a}" $((i % 2)) a "${f}" & run "${b}" $((1 - i % 2)) b "${f}" & wait
    echo "${f} round $((i + 1)): head $(cat /tmp/bound.a) direct $(cat /tmp/bound.b)" \
      "ratio $(echo "$(cat /tmp/bound.b) / $(cat /tmp/bound.a)" | bc -l | cut -c1-5)"
  done
done
