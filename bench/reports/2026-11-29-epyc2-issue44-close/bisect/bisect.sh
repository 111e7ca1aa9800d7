#!/bin/bash
set -e
cd /work/main
for c in 4ee2791 9a7487c fd02765 5204ab8 384582e e5cab8a; do
  git checkout -q $c
  bazel build -c opt //bench:matcher_bench >/dev/null 2>&1
  mkdir -p /tmp/s7/bis/$c
  cp -f .bazel/out/k8-opt/bin/bench/matcher_bench /tmp/s7/bis/$c/
done
git checkout -q main
for c in 4ee2791 9a7487c fd02765 5204ab8 384582e e5cab8a; do
  echo "== $c"
  bench/matcher_presets.sh --bin=/tmp/s7/bis/$c --baseline=/tmp/s7/base --paired --reps=3 --cohorts=event,64 --presets=selective-1m,ranges-1m --out=/tmp/s7/bis/out_$c 2>&1 | grep -A6 "before -> after" | grep -v "^$\|---\|path"
done
