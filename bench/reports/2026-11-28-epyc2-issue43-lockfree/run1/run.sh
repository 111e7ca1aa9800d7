#!/usr/bin/env bash
# A/B of issue 43 item 1: old = 384bb86 (one mutex), new = lock-free hand-offs.
cd "$(dirname "$0")/../../../.."  # the repository
for r in 1 2; do
  for b in old new; do
    bench/preemption.sh --bin=/tmp/ab/$b --configs=p1,p2,p16,p2-hog,c2,c2-hog \
      --out=/tmp/ab/res/preemption-$b-$r > /tmp/ab/res/preemption-$b-$r.log 2>&1
  done
done
bench/pipeline_diag.sh --bin=/tmp/ab/new --old_probe=/tmp/ab/old/locality_probe \
  --partitions=1,2 --reps=3 --out=/tmp/ab/res/diag-p2 > /tmp/ab/res/diag-p2.log 2>&1
bench/pipeline_diag.sh --bin=/tmp/ab/new --old_probe=/tmp/ab/old/locality_probe \
  --partitions=1,16 --reps=3 --out=/tmp/ab/res/diag-p16 > /tmp/ab/res/diag-p16.log 2>&1
echo done > /tmp/ab/res/DONE
