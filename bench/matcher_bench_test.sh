#!/usr/bin/env bash
# matcher_bench measures MatchEvent ('event') and MatchCohort of each size in
# one run: every path finds the same matches per event on each preset, the
# JSON names the path, and bad --cohort_max values exit 2 naming the flag.
set -uo pipefail
readonly BENCH="$1"
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/tools/testing/checks.sh"

field() { sed -n "s/.*\"$1\": \"\{0,1\}\([^,\"]*\)\"\{0,1\},.*/\1/p"; }

# selective-1m matches about 6 subscriptions of a million per event.
for preset in fabret-1m:3000 selective-1m:50000 ranges-1m:3000 \
  eventbridge-1m:50000; do
  subscriptions=${preset#*:}
  preset=${preset%:*}
  out=$("${BENCH}" --preset="${preset}" --subscriptions="${subscriptions}" \
    --events=150 \
    --cohort_max=event,1,4,16,64 --repetitions=1 --format=json)
  check "${preset}: five JSON lines" test "$(wc -l <<<"${out}")" -eq 5
  paths=$(field path <<<"${out}" | tr '\n' ' ')
  check "${preset}: the paths are named (${paths})" \
    test "${paths}" = "MatchEvent MatchCohort MatchCohort MatchCohort MatchCohort "
  check "${preset}: MatchEvent reports cohort_max 1" \
    test "$(field cohort_max <<<"${out}" | head -1)" = 1
  counts=$(field matches_per_event <<<"${out}" | sort -u)
  check "${preset}: every path finds the same matches per event (${counts})" \
    test "$(wc -l <<<"${counts}")" -eq 1
  check "${preset}: and some" test "${counts}" != "0.000"
  check "${preset}: the workload is named" \
    test "$(field workload <<<"${out}" | sort -u)" = "${preset}"
done

# eventbridge-1m's JSON events are flattened in the pass: several records
# an event, an event's matches its distinct patterns (the API's count).
out=$("${BENCH}" --preset=eventbridge-1m --subscriptions=50000 --events=150 \
  --cohort_max=1 --repetitions=1 --format=json)
check "eventbridge-1m: JSON events" test "$(field json_events <<<"${out}")" = true
check "eventbridge-1m: more records than events" \
  awk -v r="$(field records_per_event <<<"${out}")" 'BEGIN { exit !(r > 1.5) }'
check "eventbridge-1m: rows beside subscriptions (\"or\" branches)" \
  test "$(field rows <<<"${out}")" -gt 50000
check "eventbridge-1m: the flattening is timed" \
  awk -v f="$(field flatten_us_per_event <<<"${out}")" 'BEGIN { exit !(f > 0) }'
out=$("${BENCH}" --preset=fabret-1m --subscriptions=1000 --events=10 \
  --repetitions=1 --format=json)
check "fabret-1m: no JSON events" test "$(field json_events <<<"${out}")" = false

text=$("${BENCH}" --preset=selective-1m --subscriptions=500 --events=20 \
  --cohort_max=event,2 --repetitions=1 --format=text)
check "text names MatchEvent" grep -q "^MatchEvent " <<<"${text}"
check "text names the cohort size" grep -q "^cohort_max 2 " <<<"${text}"

err=$("${BENCH}" --preset=selective-1m --subscriptions=10 --events=1 \
  --cohort_max=1,evnt 2>&1)
check "a bad --cohort_max exits 2" test $? -eq 2
check "and names the flag and the value" \
  grep -q -- "--cohort_max: 'evnt'" <<<"${err}"
"${BENCH}" --preset=fabret-2m --events=1 >/dev/null 2>&1
check "an unknown preset exits 2" test $? -eq 2

finish_checks matcher_bench_test
