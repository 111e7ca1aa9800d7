#!/bin/bash
# Load time of builds alternated on the public comparison's ranges-1m file
# (ranges-1m without its NEs, as bench/public_matchers.sh keeps it):
#   .bazel/bin/bench/interval_export --preset=ranges-1m --events=2000 \
#     --ne=drop_predicates --out_workload=/tmp/pub.txt --out_intervals=/tmp/pub.intervals
#   REPS=3 LOADS=5 loadtime.sh DIR...   # each DIR holds bench/matcher_bench
# LOADS=N: --load_repetitions (the median of N loads in one process);
# LOADS=1: one cold load a process, as public_matchers.sh measures.
reps=${REPS:-2}; n=${LOADS:-5}
for r in $(seq "${reps}"); do
  for d in "$@"; do
    t=$("${d}/bench/matcher_bench" --workload="${WL:-/tmp/pub.txt}" \
      --cohort_max=64 --repetitions=1 --load_batch=0 --format=text \
      --load_repetitions="${n}" 2>&1 | grep -o 'loaded in .*(batches')
    echo "$(basename "${d}") ${t}"
  done
done
