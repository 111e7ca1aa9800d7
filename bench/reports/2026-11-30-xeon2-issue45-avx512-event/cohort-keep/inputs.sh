#!/bin/bash
# inputs.sh BIN OUT: the cost model's inputs at cohorts of 2 to 32 on each
# preset (model-inputs.csv), from a build with model-inputs.patch applied
# (a throwaway: it prints them when the process ends). On CPU 1.
bin=$1; out=$2
echo "preset,events,cohorts,rows_sum,lead_rows_sum,inline_lead_rows_sum,positions_sum,positions_all,rows_union,rows_present,slots_uncached,searches_sum,set_ids_sum" > $out
for spec in fabret-1m:4000 selective-1m:4000 events-1m:4000 eventbridge-1m:4000 ranges-1m:400 ranges-100k:1000; do
  IFS=: read p ev <<< "$spec"
  args="--preset=$p"; name=$p
  [[ $p == ranges-100k ]] && args="--preset=ranges-1m --subscriptions=100000"
  taskset -c 1 $bin/matcher_bench $args --cohort_max=2,3,4,6,8,12,16,24,32 --keep=masks --repetitions=1 --events=$ev --load_batch=0 --format=text 2>&1 | grep "^MODEL [0-9]" | sed "s/^MODEL /$name,/" >> $out
done
