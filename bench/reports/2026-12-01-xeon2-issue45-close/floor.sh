#!/bin/bash
# ranges-1m's load, REIN's and Cohort's planning alone, one after another
# on CPU 1, ROUNDS times:
#   floor.sh ROUNDS COHORT_DIR PLAN_ONLY_DIR REIN_DRIVER
# COHORT_DIR/bench holds matcher_bench and interval_export; PLAN_ONLY_DIR
# holds matcher_bench built with plan-only.patch (EXP_PLANONLY set skips
# the rows: Index::Add plans and interns, and writes nothing to the
# clusters). REIN_DRIVER: public_matchers.sh's bin/rein_driver.
set -euo pipefail
r=$1; cohort=$2; plan=$3; rein=$4
w=$(mktemp -d); trap 'rm -rf "${w}"' EXIT
"${cohort}/bench/interval_export" --preset=ranges-1m --events=200 \
  --ne=drop_predicates --out_workload="${w}/w.txt" \
  --out_intervals="${w}/w.intervals" > /dev/null
load() {
  taskset -c 1 "$1/bench/matcher_bench" --workload="${w}/w.txt" --events=1 \
    --cohort_max=64 --repetitions=1 --load_batch=0 --load_repetitions=3 \
    --format=text 2>&1 | grep -o 'loaded in [0-9.]* s ([^)]*)'
}
for ((i = 1; i <= r; i++)); do
  echo "round ${i} cohort: $(load "${cohort}")"
  echo "round ${i} plan only: $(EXP_PLANONLY=1 load "${plan}")"
  echo "round ${i} rein: $(taskset -c 1 "${rein}" "${w}/w.intervals" 1 |
    grep -o '"load_s": [0-9.]*')"
done
