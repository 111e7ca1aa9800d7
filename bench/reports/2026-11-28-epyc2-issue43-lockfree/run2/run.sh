#!/usr/bin/env bash
# Second A/B batch with the committed build (935bf14+): old = 384bb86.
cd "$(dirname "$0")/../../../.."  # the repository
R=/tmp/ab/res2; mkdir -p $R
for r in 1 2; do
  for b in new old; do
    bench/preemption.sh --bin=/tmp/ab/$b --configs=p1,p2,p16,p2-hog,c2,c2-hog \
      --out=$R/preemption-$b-$r > $R/preemption-$b-$r.log 2>&1
  done
done
bench/latency_sweep.sh --config=--partitions=2 --bin=/tmp/ab/new --baseline=/tmp/ab/old \
  --rates=8000,12000,16000 --out=$R/latency > $R/latency.log 2>&1
bench/experiment.sh --only=1 --reps=3 --duration=5 --bin=/tmp/ab/new --out=$R/exp1 > $R/exp1.log 2>&1
echo done > $R/DONE
