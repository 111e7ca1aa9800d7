#!/bin/bash
# The script of the 2026-11-27 diagnosis on the lent 16-core machine (run 2;
# run 3 was the same with `for p in 1 8 16`, three repetitions, only the
# p16, p16-b1 and old-p16-b1 variants, and E2E=0). It ran from a bundle
# (tools/bundle.sh) of 85add16's parent tree, with one more binary,
# libexec/locality_probe_old, built from 9328c74 (the pipeline before
# batches; its --task_batch_positions=1 is the old hand-out exactly) and a
# wrapper bin/locality_probe_old like the others:
#
#   bash run.sh OUT      # on the lent machine, from the repository root
# One device call: matcher-only breakdown (locality_probe --threads) and a
# short end-to-end stream at 1 and 16 partitions and threaded.
B=${BIN:-dist/bundle/bin}
O=${1:-/tmp/diag2}
SUBS=${SUBS:--1}
EV=${EV:-48000}
mkdir -p "$O"
cd "$(dirname "$0")/.."
source tools/testing/cohortd.sh
$B/cohort workload --preset=fabret-1m --subscriptions=$SUBS --events=$EV --out=/tmp/w >/dev/null
probe() {  # NAME FLAGS...
  local name=$1; shift
  local bin=locality_probe
  [[ $name == old* ]] && bin=locality_probe_old
  timeout 60 $B/$bin --workload=/tmp/w --layout=partitioned \
    --cohort_max=64 --threads "$@" >"$O/probe-$name.json"
  echo "$name $(tr -d '\n' <"$O/probe-$name.json" | grep -o '"match_seconds": [0-9.]*\|"matches": [0-9]*\|"thread_seconds_[a-z]*": [0-9.]*' | sed 's/"thread_seconds_//;s/"//g' | tr '\n' ' ')"
}
for rep in 1 2; do
  for p in 1 2 4 8 16; do probe "p$p-r$rep" --partitions=$p; done
  probe "p16-b1-r$rep" --partitions=16 --task_batch_positions=1
  probe "p16-b32k-r$rep" --partitions=16 --task_batch_positions=32768
  probe "p16-c12-r$rep" --partitions=16 --cohorts_in_flight=12
  probe "old-p16-b1-r$rep" --partitions=16 --task_batch_positions=1
  probe "old-p16-r$rep" --partitions=16
done
date
[[ "${E2E:-1}" == 1 ]] || exit 0
declare -A port pid
start() {  # NAME FLAGS...
  local name=$1; shift
  start_cohortd "$O/$name.log" $B/cohortd --listen=127.0.0.1:0 "$@" || return 1
  port[$name]=$COHORTD_PORT; pid[$name]=$COHORTD_PID
  $B/cohort load --server=127.0.0.1:${port[$name]} --preset=fabret-1m \
    --subscriptions=$SUBS --events=100000 --mode=none >/dev/null 2>&1
  echo "started $name: $(head -1 "$O/$name.log")"
}
start p16 --partitions=16 --threads=16 --index=partitioned
start p1 --partitions=1 --threads=1 --index=partitioned
start threaded --mode=threaded --partitions=16 --threads=16
date
for rep in 1 2; do
  for s in p16 threaded p1; do
    $B/cohort load --server=127.0.0.1:${port[$s]} --preset=fabret-1m \
      --subscriptions=$SUBS --events=100000 --skip_load --warmup=1 \
      --duration=3 --mode=stream --clients=4 --batch=32 --window=8 \
      --out="$O/e2e-$s-$rep.json" >/dev/null 2>&1
    echo "e2e $s $rep $(grep -o '"events_per_s": [0-9.]*' "$O/e2e-$s-$rep.json")"
  done
done
for s in p16 p1 threaded; do stop_cohortd ${pid[$s]}; done
date
