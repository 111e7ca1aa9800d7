#!/usr/bin/env bash
cd "$(dirname "$0")/../../../.."  # the repository
R=/tmp/ab/res3; mkdir -p $R
for r in 2 3; do
bench/latency_sweep.sh --config=--partitions=2 --bin=/tmp/ab/new --baseline=/tmp/ab/old \
  --rates=8000,12000,16000 --out=$R/latency-$r > $R/latency-$r.log 2>&1
done
bench/pipeline_diag.sh --bin=/tmp/ab/new --old_probe=/tmp/ab/old/locality_probe \
  --partitions=1,2 --reps=5 --out=$R/diag-p2 > $R/diag-p2.log 2>&1
echo done > $R/DONE
