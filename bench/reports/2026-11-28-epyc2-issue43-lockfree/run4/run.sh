#!/usr/bin/env bash
cd "$(dirname "$0")/../../../.."  # the repository
R=/tmp/ab/res4; mkdir -p $R
bench/experiment.sh --only=1 --reps=3 --duration=5 --bin=/tmp/ab/new --out=$R/exp1 > $R/exp1.log 2>&1
for b in old new; do
  bench/preemption.sh --bin=/tmp/ab/$b --configs=p1,p2,p16,p2-hog,c2,c2-hog \
    --out=$R/preemption-$b-3 > $R/preemption-$b-3.log 2>&1
done
echo done > $R/DONE
