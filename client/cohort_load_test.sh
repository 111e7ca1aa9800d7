#!/usr/bin/env bash
# `cohort workload` and `cohort load` against a real cohortd on 127.0.0.1:
# write a small fabret-1m workload, load it and publish closed loop with a
# JSON report, then open loop at a fixed rate with a CSV report; check the
# numbers (events/s > 0, matches/event > 0, no errors) and the usage errors.
set -uo pipefail
readonly COHORTD=$1
readonly COHORT=$2
readonly TMP=${TEST_TMPDIR:-$(mktemp -d)}
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/tools/testing/checks.sh"
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/tools/testing/cohortd.sh"

out=$("${COHORT}" workload --preset=fabret-1m --subscriptions=2000 --events=200 \
  --out="${TMP}/w.txt")
check "workload exits 0" test $? -eq 0
check "workload prints the report" grep -q "^subscriptions: 2000$" <<<"${out}"
check "... with matches per event" grep -q "^matches per event" <<<"${out}"
check "workload file has the header" \
  grep -q "^# cohort-workload v1 preset=fabret-1m+custom seed=1$" "${TMP}/w.txt"
check "workload file has 2000 subscriptions" \
  test "$(grep -c '^S ' "${TMP}/w.txt")" -eq 2000
check "workload file has 200 events" test "$(grep -c '^E ' "${TMP}/w.txt")" -eq 200

log="${TMP}/cohortd.log"
start_cohortd "${log}" "${COHORTD}" --listen=127.0.0.1:0 --partitions=2
pid=${COHORTD_PID}
port=${COHORTD_PORT}
trap 'kill -TERM ${pid} 2>/dev/null' EXIT
cohort() { "${COHORT}" --server="127.0.0.1:${port}" "$@"; }

# json_field FILE EXPRESSION: prints EXPRESSION evaluated on the JSON as `d`.
json_field() {
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

out=$(cohort load --workload="${TMP}/w.txt" --clients=2 --duration=1 \
  --out="${TMP}/r.json")
check "closed-loop load exits 0" test $? -eq 0
check "... prints a plain progress line (not a terminal)" \
  grep -q "^subscribing: 100% (2000 of 2000)" <<<"${out}"
check "... prints the subscribe phase" \
  grep -q "^load: 2000 subscriptions in .*; 0 failed; errors: none$" <<<"${out}"
check "... prints latency percentiles" grep -q "latency us: p50 .* p99.9 " <<<"${out}"
check "JSON: events_per_s > 0" test "$(json_field "${TMP}/r.json" 'd["events_per_s"] > 0')" = True
check "JSON: matches_per_event > 0" \
  test "$(json_field "${TMP}/r.json" 'd["matches_per_event"] > 0')" = True
check "JSON: no errors" test "$(json_field "${TMP}/r.json" 'd["errors"]')" = "{}"
check "JSON: 2000 subscriptions loaded" \
  test "$(json_field "${TMP}/r.json" 'd["load"]["subscriptions"]')" = 2000
check "JSON: latency p99 > 0" \
  test "$(json_field "${TMP}/r.json" 'd["latency_us"]["p99"] > 0')" = True

out=$(cohort load --workload="${TMP}/w.txt" --skip_load --clients=2 \
  --duration=1 --rate=200 --out="${TMP}/r.csv")
check "open-loop load exits 0" test $? -eq 0
check "... says rate 200" grep -q "rate 200" <<<"${out}"
check "CSV has a header and one row" test "$(wc -l <"${TMP}/r.csv")" -eq 2
check "CSV header" grep -q "^phase,mode,server,clients,batch,window,rate," "${TMP}/r.csv"
check "CSV row: open-loop publish" grep -q "^publish,unary,127.0.0.1:${port},2,1,4,200," "${TMP}/r.csv"
csv_column() {  # csv_column NAME: the row's value in column NAME
  python3 -c 'import csv, sys; r = list(csv.DictReader(open(sys.argv[1]))); print(r[0][sys.argv[2]])' \
    "${TMP}/r.csv" "$1"
}
check "CSV: events_per_s > 0" test "$(csv_column events_per_s)" -gt 0
check "CSV: no errors" test "$(csv_column errors)" -eq 0

out=$(cohort load --workload="${TMP}/w.txt" --out="${TMP}/r.txt" 2>&1)
check "--out with another ending exits 2" test $? -eq 2
out=$(cohort load --workload="${TMP}/w.txt" --mode=stream --rate=10 2>&1)
check "--rate with --mode=stream exits 2" test $? -eq 2
out=$(cohort load --workload="${TMP}/missing.txt" 2>&1)
check "a missing workload file exits 2" test $? -eq 2
out=$("${COHORT}" --server=127.0.0.1:1 --deadline_ms=500 load \
  --workload="${TMP}/w.txt" 2>&1)
check "load from an unreachable server exits 1" test $? -eq 1
check "... naming the target" grep -q "127.0.0.1:1" <<<"${out}"
out=$("${COHORT}" workload --preset=nope 2>&1)
check "workload with an unknown preset exits 2" test $? -eq 2

# eventbridge-1m: Event Ruler patterns ("P" lines) and JSON events ("J"
# lines), loaded as specs and published as Event.json; every event counted
# once however many records its arrays make.
"${COHORT}" workload --preset=eventbridge-1m --subscriptions=20000 \
  --events=300 --out="${TMP}/eb.txt" >/dev/null
check "eventbridge-1m: 20000 patterns as P lines" \
  test "$(grep -c '^P {' "${TMP}/eb.txt")" -eq 20000
check "eventbridge-1m: 300 JSON events as J lines" \
  test "$(grep -c '^J {"version":"0"' "${TMP}/eb.txt")" -eq 300
out=$(cohort load --workload="${TMP}/eb.txt" --clients=2 --duration=1 \
  --mode=stream --batch=16 --out="${TMP}/eb.json")
check "eventbridge-1m: load exits 0" test $? -eq 0
check "eventbridge-1m: 20000 subscriptions, none failed" \
  grep -q "^load: 20000 subscriptions in .*; 0 failed; errors: none$" \
  <<<"${out}"
check "eventbridge-1m: events published, no errors" \
  test "$(json_field "${TMP}/eb.json" \
    'd["events_per_s"] > 0 and d["errors"] == {}')" = True
check "eventbridge-1m: some matches" \
  test "$(json_field "${TMP}/eb.json" 'd["matches_per_event"] > 0')" = True

finish_checks cohort_load_test
