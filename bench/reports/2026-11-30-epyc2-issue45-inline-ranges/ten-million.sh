#!/bin/bash
for p in fabret-10m events-10m; do
  for b in base new; do
    echo "== $b $p"
    /usr/bin/time -v /work/bins/$b/matcher_bench --preset=$p --cohort_max=64 --load_batch=0 --repetitions=2 --events=20000 --format=text 2>&1 | grep -E "loaded|cohort_max|Maximum resident"
  done
done
