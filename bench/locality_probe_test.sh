#!/usr/bin/env bash
# locality_probe plays one core of P. Summed over the P cores, the
# partitioned, replicated and threaded layouts must find the same matches
# (and some); --nomatch finds none; bad flags exit 2 naming the flag.
set -uo pipefail
readonly PROBE="$1"
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/tools/testing/checks.sh"

small=(--preset=fabret-1m --subscriptions=3000 --events=200 --partitions=3)
field() { sed -n "s/.*\"$1\": \([0-9]*\).*/\1/p"; }
total() {
  local sum=0 core out
  for core in 0 1 2; do
    out=$("${PROBE}" "${small[@]}" --core="${core}" "$@") || return 1
    sum=$((sum + $(field matches <<<"${out}")))
  done
  echo "${sum}"
}

partitioned=$(total --layout=partitioned --cohort_max=64)
partitioned_1=$(total --layout=partitioned --cohort_max=1)
replicated=$(total --layout=replicated --cohort_max=10)
threaded=$(total --layout=threaded)
check "partitioned finds matches" test "${partitioned:-0}" -gt 0
check "cohort size does not change the matches" \
  test "${partitioned}" = "${partitioned_1}"
check "replicated finds what partitioned finds" \
  test "${replicated}" = "${partitioned}"
check "threaded finds what partitioned finds" \
  test "${threaded}" = "${partitioned}"

out=$("${PROBE}" "${small[@]}" --layout=partitioned --nomatch)
check "--nomatch matches nothing" test "$(field matches <<<"${out}")" = 0
check "partitioned core 0 indexes a third" \
  test "$(field subscriptions <<<"${out}")" = 1000
check "partitioned: each event costs 3 cores" \
  test "$(field cores_per_event <<<"${out}")" = 3
check "--nomatch takes no matching time" \
  python3 -c 'import json, sys; sys.exit(json.loads(sys.argv[1])["match_seconds"] > 0.01)' "${out}"
out=$("${PROBE}" "${small[@]}" --layout=threaded --nomatch)
check "threaded core 0 matches a third of the events" \
  test "$(field events <<<"${out}")" = 67

out=$("${PROBE}" "${small[@]}" --layout=shared 2>&1)
check "bad --layout exits 2" test $? -eq 2
check "bad --layout names the choices" \
  grep -q "use partitioned, replicated or threaded" <<<"${out}"
out=$("${PROBE}" "${small[@]}" --core=3 2>&1)
check "--core beyond --partitions exits 2" test $? -eq 2
finish_checks locality_probe_test
