#!/bin/bash
# Two matcher_bench builds at once, one on each CPU, swapped each round:
#   EV=30000 paired.sh ROUNDS PRESET COHORTS DIR_A DIR_B
# Each DIR holds bench/matcher_bench (a script that sets an environment
# variable and runs a binary will do). Prints each path's events/s and B/A.
r=$1; p=$2; c=$3; a=$4; b=$5
ev=${EV:-30000}
run() {
  taskset -c "$2" "$1/bench/matcher_bench" --preset="${p}" --cohort_max="${c}" \
    --repetitions=3 --events="${ev}" --load_batch=0 --format=text 2>&1 |
    grep -E '^(cohort_max|MatchEvent)' | sed 's/^MatchEvent/cohort_max event/' |
    awk '{print $2, $3}' > "/tmp/paired.$3"
}
for ((i = 0; i < r; i++)); do
  run "${a}" $((i % 2)) a & run "${b}" $((1 - i % 2)) b & wait
  paste /tmp/paired.a /tmp/paired.b |
    awk '{printf "%s %s | %s | ratio %.3f\n", $1, $2, $4, $4 / $2}'
done
