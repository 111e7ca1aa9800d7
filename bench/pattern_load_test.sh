#!/usr/bin/env bash
# pattern_load and bench/eventruler_workload.py together: every pattern the
# generator writes loads into Cohort (ParsePatternSpec, the server's validation
# and lowering, the index), the JSON line counts them, and the typed
# workload it writes holds them and the flattened events, which
# matcher_bench matches on every path alike. A pattern Cohort refuses
# exits 1 naming its line.
set -uo pipefail
readonly LOAD="$1"
readonly BENCH="$2"
readonly GENERATOR="$3"
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/tools/testing/checks.sh"

dir=$(mktemp -d)
trap 'rm -rf "${dir}"' EXIT
python3 "${GENERATOR}" --rules=400 --events=60 --seed=7 --arrays=0 \
  --out="${dir}"
check "the generator writes 400 patterns" \
  test "$(wc -l <"${dir}/rules.jsonl")" -eq 400
out=$("${LOAD}" --rules="${dir}/rules.jsonl" --events="${dir}/events.txt" \
  --workload_out="${dir}/workload.txt" --repetitions=2)
check "every pattern loads (${out})" grep -q '"patterns": 400,' <<<"${out}"
check "... each part timed" \
  grep -q '"parse_s": [0-9.]*, "lower_s": [0-9.]*, "index_s": [0-9.]*' \
  <<<"${out}"
check "the workload holds 400 subscriptions" \
  test "$(grep -c '^S ' "${dir}/workload.txt")" -eq 400
check "... and 60 events" test "$(grep -c '^E ' "${dir}/workload.txt")" -eq 60
check "... events by path" grep -q '^E .*detail\.user\.' "${dir}/workload.txt"
counts=$("${BENCH}" --workload="${dir}/workload.txt" --cohort_max=event,1,64 \
  --repetitions=1 --format=json |
  sed -n 's/.*"matches_per_event": \([0-9.]*\),.*/\1/p' | sort -u)
check "matcher_bench: every path the same matches (${counts})" \
  test "$(wc -l <<<"${counts}")" -eq 1
check "... and some" test "${counts}" != "0.000"

echo '{"a": [1]}' >"${dir}/bad.jsonl"
echo '{"p": [1e300]}' >>"${dir}/bad.jsonl"
out=$("${LOAD}" --rules="${dir}/bad.jsonl" 2>&1)
check "a pattern Cohort refuses exits 1" test $? -eq 1
check "... naming its line" grep -q \
  'pattern_load: line 2: pattern: at p\[0\]: 1e+300 is beyond the int64' \
  <<<"${out}"
out=$("${LOAD}" --rules="${dir}/missing.jsonl" 2>&1)
check "an unreadable --rules exits 2" test $? -eq 2
finish_checks pattern_load_test
