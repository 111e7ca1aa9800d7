#!/usr/bin/env bash
# Data directories written by earlier versions of cohortd still recover:
# service/storage/testdata/format-v1 (before strings) and format-v2 (issue
# 19: strings, lists, prefixes, ranges, existence; their READMEs say how
# they were written) are copied, recovered by this cohortd, and must give
# back their 24 live subscriptions with the same ids and the same answers,
# then go on numbering (from 30 and 29); restarted once more, the
# directory it has rewritten recovers the same.
#
#   format_test.sh COHORTD COHORT
set -uo pipefail
readonly COHORTD="$1" COHORT="$2"
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/tools/testing/checks.sh"
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/tools/testing/cohortd.sh"
readonly V1="${TEST_SRCDIR}/${TEST_WORKSPACE}/service/storage/testdata/format-v1"
readonly V2="${TEST_SRCDIR}/${TEST_WORKSPACE}/service/storage/testdata/format-v2"

work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/format.XXXXXX")
trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "${work}"' EXIT
cp -rL "${V1}/data" "${work}/data"
chmod -R u+w "${work}/data"
mapfile -t events <"${V1}/events.txt"

# serve NAME: starts cohortd on the copy; its log is ${work}/NAME.log.
serve() {
  start_cohortd "${work}/$1.log" "${COHORTD}" --listen=127.0.0.1:0 \
    --partitions=2 --data_dir="${work}/data"
}

if serve v1; then
  check "format 1: the snapshot and the journal after it recover" \
    grep -q "^cohortd: recovered 24 subscriptions .*(snapshot-3, 5 journal records replayed, journal tail end, 0 bytes discarded" \
    "${work}/v1.log"
  "${COHORT}" --server="127.0.0.1:${COHORTD_PORT}" publish --ids \
    "${events[@]}" >"${work}/answers.txt"
  check "format 1: every event matches the same ids as before" \
    diff "${work}/answers.txt" "${V1}/expected.txt"
  check "format 1: ids go on from 30" test "$("${COHORT}" \
    --server="127.0.0.1:${COHORTD_PORT}" subscribe --subscriber=frank \
    'kind = 77' | cut -f1)" = 30
  stop_cohortd "${COHORTD_PID}"
else
  check "format 1: cohortd starts on the directory" false
fi

if serve again; then
  check "rewritten: 25 subscriptions recover" \
    grep -q "^cohortd: recovered 25 subscriptions" "${work}/again.log"
  "${COHORT}" --server="127.0.0.1:${COHORTD_PORT}" publish --ids \
    "${events[@]}" >"${work}/answers.txt"
  check "rewritten: the same answers" \
    diff "${work}/answers.txt" "${V1}/expected.txt"
  stop_cohortd "${COHORTD_PID}"
else
  check "rewritten: cohortd starts on the directory" false
fi
# Format 2, the same way.
rm -rf "${work}/data"
cp -rL "${V2}/data" "${work}/data"
chmod -R u+w "${work}/data"
mapfile -t events <"${V2}/events.txt"
if serve v2; then
  check "format 2: the snapshot and the journal after it recover" \
    grep -q "^cohortd: recovered 24 subscriptions .*(snapshot-5, 7 journal records replayed, journal tail end, 0 bytes discarded" \
    "${work}/v2.log"
  "${COHORT}" --server="127.0.0.1:${COHORTD_PORT}" publish --ids \
    "${events[@]}" >"${work}/answers.txt"
  check "format 2: every event matches the same ids as before" \
    diff "${work}/answers.txt" "${V2}/expected.txt"
  check "format 2: ids go on from 29" test "$("${COHORT}" \
    --server="127.0.0.1:${COHORTD_PORT}" subscribe --subscriber=frank \
    'color = "teal"' | cut -f1)" = 29
  stop_cohortd "${COHORTD_PID}"
else
  check "format 2: cohortd starts on the directory" false
fi
if serve again2; then
  check "format 2 rewritten: 25 subscriptions recover" \
    grep -q "^cohortd: recovered 25 subscriptions" "${work}/again2.log"
  "${COHORT}" --server="127.0.0.1:${COHORTD_PORT}" publish --ids \
    "${events[@]}" >"${work}/answers.txt"
  check "format 2 rewritten: the same answers" \
    diff "${work}/answers.txt" "${V2}/expected.txt"
  stop_cohortd "${COHORTD_PID}"
else
  check "format 2 rewritten: cohortd starts on the directory" false
fi
finish_checks format_test
