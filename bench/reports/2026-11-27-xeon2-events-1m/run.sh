#!/bin/bash
# Interleaved matcher_bench: events-1m and fabret-1m, 3 rounds.
# Run from a directory holding a matcher_bench binary (bazel build -c opt
# //bench:matcher_bench; copy .bazel/out/k8-opt/bin/bench/matcher_bench).
cd "${1:-.}"
for r in 1 2 3; do
  for p in events-1m fabret-1m; do
    /usr/bin/time -f "$p round $r: wall %e s, max RSS %M KB" ./matcher_bench --preset=$p --events=20000 --cohort_max=1,64 --repetitions=3 --format=json > $p.$r.json 2>> time.log
  done
done
