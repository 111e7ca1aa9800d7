#!/bin/bash
# Load times of two builds at once, one on each CPU, swapped each round:
#   lp.sh ROUNDS PRESET BEFORE_DIR AFTER_DIR   # each DIR holds bench/matcher_bench
# PRESET "pub" loads the public comparison's file (WL, default /tmp/pub.txt;
# loadtime.sh in ../2026-11-30-xeon2-issue45-load says how it is made).
# Prints each round's two medians (of 3 loads a process) and before/after.
r=$1; p=$2; a=$3; b=$4
src="--preset=${p}"; [[ ${p} == pub ]] && src="--workload=${WL:-/tmp/pub.txt}"
run() {
  taskset -c "$2" "$1/bench/matcher_bench" ${src} --events=200 --cohort_max=64 \
    --repetitions=1 --load_batch=0 --load_repetitions=3 --format=text 2>&1 |
    grep -o 'loaded in [0-9.]*' | awk '{print $3}' > "/tmp/lp.$3"
}
for ((i = 0; i < r; i++)); do
  run "${a}" $((i % 2)) before & run "${b}" $((1 - i % 2)) after & wait
  x=$(cat /tmp/lp.before); y=$(cat /tmp/lp.after)
  echo "${p} before ${x} after ${y} ratio $(echo "${x} / ${y}" | bc -l | cut -c1-5)"
done
