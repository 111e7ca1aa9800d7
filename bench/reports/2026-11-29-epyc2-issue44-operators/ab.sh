#!/usr/bin/env bash
# Paired A/B: events-1m PublishStream throughput, old (/tmp/b0: cohortd and
# cohort built at 41dca1f)
# against new (/tmp/b1: built at b997f87, whose server
# code is 0cecfd0's), both servers up with 2
# partitions, 3 runs of 10 s each, the order alternating.
#   ab.sh OUT
set -euo pipefail
cd "$(dirname "$0")/../../.."
source tools/testing/cohortd.sh
OUT=${1:?usage: ab.sh OUT}; mkdir -p $OUT
declare -A port pid
for b in b0 b1; do
  start_cohortd $OUT/$b.log /tmp/$b/cohortd --listen=127.0.0.1:0 --partitions=2 >/dev/null
  port[$b]=$COHORTD_PORT; pid[$b]=$COHORTD_PID
  /tmp/$b/cohort load --server=127.0.0.1:${port[$b]} --preset=events-1m --mode=none >/dev/null
done
trap 'stop_cohortd ${pid[b0]}; stop_cohortd ${pid[b1]}' EXIT
for r in 1 2 3; do
  order=(b0 b1); ((r % 2 == 0)) && order=(b1 b0)
  for b in "${order[@]}"; do
    /tmp/$b/cohort load --server=127.0.0.1:${port[$b]} --preset=events-1m --skip_load \
      --mode=stream --batch=64 --window=4 --clients=1 --warmup=1 --duration=10 \
      --out=$OUT/$b-$r.json >/dev/null
    python3 -c "import json;d=json.load(open('$OUT/$b-$r.json'));print('$b run $r', round(d['events_per_s']))"
  done
done
