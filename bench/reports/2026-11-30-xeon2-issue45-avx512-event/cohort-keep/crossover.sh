#!/bin/bash
# crossover.sh BIN OUT: matcher_bench --keep=per_event and --keep=masks at
# cohorts of 2 to 32 on each preset, one run at a time on CPU 0, into
# OUT (crossover.csv). BIN: a folder holding matcher_bench.
bin=$1; out=$2
sizes=2,3,4,6,8,12,16,24,32
echo "preset,events,per_event_events_per_s,masks_events_per_s" > $out
for spec in fabret-1m:12000:3 selective-1m:12000:3 events-1m:12000:3 eventbridge-1m:12000:3 ranges-1m:960:2 ranges-100k:3000:2; do
  IFS=: read p ev reps <<< "$spec"
  args="--preset=$p"; name=$p
  [[ $p == ranges-100k ]] && args="--preset=ranges-1m --subscriptions=100000"
  for k in per_event masks; do
    taskset -c 0 $bin/matcher_bench $args --cohort_max=$sizes --keep=$k --repetitions=$reps --events=$ev --load_batch=0 --format=text 2>&1 | grep "^cohort_max" | awk '{print $2, $3}' > /tmp/xo.$k
  done
  paste -d' ' /tmp/xo.per_event /tmp/xo.masks | awk -v p=$name '{print p "," $1 "," $2 "," $4}' >> $out
done
