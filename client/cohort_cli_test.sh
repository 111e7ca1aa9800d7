#!/usr/bin/env bash
# The cohort CLI against a real cohortd on 127.0.0.1: subscribe, publish with
# and without ids, listen (delivery printed), unsubscribe, stats (table and
# JSON), and usage errors that point at the offending token (exit 2) or
# server errors (exit 1).
set -uo pipefail
readonly COHORTD=$1
readonly COHORT=$2
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/tools/testing/checks.sh"
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/tools/testing/cohortd.sh"

log=$(mktemp)
start_cohortd "${log}" "${COHORTD}" --listen=127.0.0.1:0 --partitions=2
pid=${COHORTD_PID}
port=${COHORTD_PORT}
trap 'kill -TERM ${pid} 2>/dev/null; rm -f "${log}"' EXIT
cohort() { "${COHORT}" --server="127.0.0.1:${port}" "$@"; }

out=$(cohort subscribe --subscriber=alice 'price <= 500 and kind = 7' 'price between 100 and 200')
check "subscribe prints two ids" test "$(wc -l <<<"${out}")" -eq 2
first_id=$(head -1 <<<"${out}" | cut -f1)
check "first id is 1" test "${first_id}" = 1

listen_out=$(mktemp)
cohort listen --subscriber=alice --count=1 >"${listen_out}" &
listen_pid=$!
for _ in $(seq 100); do
  cohort stats --json | grep -q '"listeners": "1"' && break
  sleep 0.1
done

out=$(cohort publish 'price=150 kind=7' --ids --payload=hello)
check "publish matches both subscriptions" grep -q "matched 2	1 2" <<<"${out}"
out=$(cohort publish 'price=600, kind=7')
check "publish without ids prints the count" grep -q "matched 0$" <<<"${out}"

wait "${listen_pid}"
check "listen exits 0 after --count deliveries" test $? -eq 0
check "listen printed the delivery" grep -q "seq 1	ids 1,2	price=150 kind=7	payload 5 bytes" "${listen_out}"
rm -f "${listen_out}"

out=$(cohort unsubscribe 2)
check "unsubscribe" grep -q "unsubscribed 1" <<<"${out}"
out=$(cohort unsubscribe 2 2>&1)
check "unsubscribe of a removed id exits 1" test $? -eq 1
check "... with NOT_FOUND" grep -q "NOT_FOUND" <<<"${out}"

out=$(cohort stats)
check "stats table lists the partitions" grep -q "^partition/1 " <<<"${out}"
check "stats shows 1 subscription" grep -q "^1 subscriptions, 2 events published" <<<"${out}"
check "stats shows admission" grep -q "^0 events in flight, admission limit [1-9]" <<<"${out}"
check "stats table has an expired column" grep -q " reject expired    drop$" <<<"${out}"

out=$(cohort subscribe --subscriber=alice 'price is 5' 2>&1)
check "parse error exits 2" test $? -eq 2
check "parse error points at the token" grep -q "^ *\^\^$" <<<"${out}"
out=$(cohort publish 'price=1 price=2' 2>&1)
check "duplicate event attribute exits 2" test $? -eq 2
out=$(cohort frobnicate 2>&1)
check "unknown command exits 2" test $? -eq 2
out=$("${COHORT}" --server=127.0.0.1:1 --deadline_ms=500 stats 2>&1)
check "unreachable server exits 1" test $? -eq 1
check "... naming the target" grep -q "127.0.0.1:1" <<<"${out}"

finish_checks cohort_cli_test
