#!/usr/bin/env bash
# Data directories written by earlier versions of cohortd still recover:
# service/storage/testdata/format-v1 (before strings), format-v2 (issue
# 19: strings, lists, prefixes, ranges, existence) and format-v3 (issue
# 44: "or" subscriptions; their READMEs say how they were written) are
# copied, recovered by this cohortd, and must give back their 24 live
# subscriptions with the same ids and the same answers, then go on
# numbering (from 30, 29 and 29); restarted once more, the directory it
# has rewritten recovers the same.
#
#   format_test.sh COHORTD COHORT
set -uo pipefail
readonly COHORTD="$1" COHORT="$2"
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/tools/testing/checks.sh"
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/tools/testing/cohortd.sh"
readonly V1="${TEST_SRCDIR}/${TEST_WORKSPACE}/service/storage/testdata/format-v1"
readonly V2="${TEST_SRCDIR}/${TEST_WORKSPACE}/service/storage/testdata/format-v2"
readonly V3="${TEST_SRCDIR}/${TEST_WORKSPACE}/service/storage/testdata/format-v3"

work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/format.XXXXXX")
trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "${work}"' EXIT

# serve NAME: starts cohortd on the copy; its log is ${work}/NAME.log.
serve() {
  start_cohortd "${work}/$1.log" "${COHORTD}" --listen=127.0.0.1:0 \
    --partitions=2 --data_dir="${work}/data"
}

# recovers FORMAT DIR RECOVERED NEXT_ID SUBSCRIPTION: a copy of DIR/data
# recovers with the log line RECOVERED (a grep pattern), answers DIR's
# events as DIR/expected.txt says, numbers SUBSCRIPTION NEXT_ID, and,
# restarted, recovers one subscription more and answers the same.
recovers() {
  local format=$1 dir=$2 recovered=$3 next_id=$4 subscription=$5 events
  rm -rf "${work}/data"
  cp -rL "${dir}/data" "${work}/data"
  chmod -R u+w "${work}/data"
  mapfile -t events <"${dir}/events.txt"
  if serve "v${format}"; then
    check "format ${format}: the snapshot and the journal after it recover" \
      grep -q "^cohortd: recovered ${recovered}" "${work}/v${format}.log"
    "${COHORT}" --server="127.0.0.1:${COHORTD_PORT}" publish --ids \
      "${events[@]}" >"${work}/answers.txt"
    check "format ${format}: every event matches the same ids as before" \
      diff "${work}/answers.txt" "${dir}/expected.txt"
    check "format ${format}: ids go on from ${next_id}" test "$("${COHORT}" \
      --server="127.0.0.1:${COHORTD_PORT}" subscribe --subscriber=frank \
      "${subscription}" | cut -f1)" = "${next_id}"
    stop_cohortd "${COHORTD_PID}"
  else
    check "format ${format}: cohortd starts on the directory" false
  fi
  if serve "again${format}"; then
    check "format ${format} rewritten: 25 subscriptions recover" \
      grep -q "^cohortd: recovered 25 subscriptions" \
      "${work}/again${format}.log"
    "${COHORT}" --server="127.0.0.1:${COHORTD_PORT}" publish --ids \
      "${events[@]}" >"${work}/answers.txt"
    check "format ${format} rewritten: the same answers" \
      diff "${work}/answers.txt" "${dir}/expected.txt"
    stop_cohortd "${COHORTD_PID}"
  else
    check "format ${format} rewritten: cohortd starts on the directory" false
  fi
}

recovers 1 "${V1}" \
  "24 subscriptions .*(snapshot-3, 5 journal records replayed, journal tail end, 0 bytes discarded" \
  30 'kind = 77'
recovers 2 "${V2}" \
  "24 subscriptions .*(snapshot-5, 7 journal records replayed, journal tail end, 0 bytes discarded" \
  29 'color = "teal"'
recovers 3 "${V3}" \
  "24 subscriptions .*(snapshot-6, 2 journal records replayed, journal tail end, 0 bytes discarded" \
  29 'kind = 77 or (kind = 78 and exists ok)'
finish_checks format_test
