#!/usr/bin/env bash
# Checks the cohortd binary as an operator runs it: --help documents every
# flag with its default, bad flags exit 2 with a message naming the flag, the
# server prints its ports, serves Prometheus metrics, and on SIGTERM shuts
# down in order and exits 0.
set -uo pipefail
readonly COHORTD="$1"
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/tools/testing/checks.sh"
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/tools/testing/cohortd.sh"

help=$("${COHORTD}" --help 2>&1)
for flag in listen mode partitions index pin_cores cohort_max cohort_wait_us \
  queue_limit threads listener_queue_limit slow_listener max_predicates \
  max_event_attributes max_payload_bytes max_batch max_streams stream_window \
  max_message_bytes max_attributes max_subscribers metrics_port metrics_host \
  data_dir fsync snapshot_every snapshot_growth_percent journal_group_max \
  journal_group_wait_us numa \
  tls_cert tls_key tls_client_ca auth_tokens latency_target_us \
  max_concurrent_streams cohorts_in_flight; do
  check "--help documents --${flag} with a default" \
    grep -qzE -- "--${flag} \([^)]*(\([^)]*\)[^)]*)*\);[[:space:]]+default:" <<<"${help}"
done

out=$("${COHORTD}" --slow_listener=maybe 2>&1)
check "bad --slow_listener exits 2" test $? -eq 2
check "bad --slow_listener names the flag" grep -q -- "--slow_listener" <<<"${out}"
out=$("${COHORTD}" --index=shared 2>&1)
check "bad --index exits 2" test $? -eq 2
check "bad --index names the flag and the choices" \
  grep -q -- "--index: unknown layout \"shared\"; use partitioned, sharded_phase1 or replicated" <<<"${out}"
out=$("${COHORTD}" --numa=on 2>&1)
check "bad --numa exits 2" test $? -eq 2
check "bad --numa names the flag and the choices" \
  grep -q -- '--numa: "on" is not auto or off' <<<"${out}"
out=$("${COHORTD}" --latency_target_us=-5 2>&1)
check "negative --latency_target_us exits 2" test $? -eq 2
check "bad --latency_target_us names the flag and the range" \
  grep -q -- "--latency_target_us: between 0 (off) and 60000000" <<<"${out}"
out=$("${COHORTD}" --max_concurrent_streams=2000000 2>&1)
check "too large --max_concurrent_streams exits 2" test $? -eq 2
check "bad --max_concurrent_streams names the flag and the limit" \
  grep -q -- "--max_concurrent_streams: at most 1048576" <<<"${out}"
out=$("${COHORTD}" --cohorts_in_flight=65 2>&1)
check "too large --cohorts_in_flight exits 2" test $? -eq 2
check "bad --cohorts_in_flight names the flag and the limit" \
  grep -q -- "--cohorts_in_flight: at most 64" <<<"${out}"
out=$("${COHORTD}" --steal_units=33 2>&1)
check "too large --steal_units exits 2" test $? -eq 2
check "bad --steal_units names the flag and the limit" \
  grep -q -- "--steal_units: at most 32" <<<"${out}"
out=$("${COHORTD}" --partitions=4 --index_copies=3 2>&1)
check "--index_copies not dividing --partitions exits 2" test $? -eq 2
check "bad --index_copies names the flag and the partitions" \
  grep -q -- "--index_copies: 3 does not divide --partitions (4)" <<<"${out}"
out=$("${COHORTD}" --mode=fast --listen=127.0.0.1:0 2>&1)
check "bad --mode exits 1" test $? -eq 1
check "bad --mode names the flag" grep -q -- "--mode" <<<"${out}"

log=$(mktemp)
"${COHORTD}" --listen=127.0.0.1:0 --metrics_port=0 --partitions=2 >"${log}" 2>&1 &
pid=$!
for _ in $(seq 100); do
  grep -q "metrics on" "${log}" && break
  sleep 0.1
done
metrics_port=$(sed -n 's|.*metrics on http://127.0.0.1:\([0-9]*\)/metrics|\1|p' "${log}")
check "prints the gRPC port" grep -q "serving on port [1-9]" "${log}"
check "names the staged engine: $(grep 'serving on' "${log}")" \
  grep -qE "\(mode staged, 2 partitions, index partitioned, cohort_max 64, cohort_wait_us 0, index_copies 1, cohorts_in_flight 2; TLS off, auth off\)$" "${log}"
check "prints the metrics port" test -n "${metrics_port}"
# Two partitions on this (at least 2-CPU) machine: pinned, and with the
# default --numa=auto their memory placed on their CPUs' nodes.
check "prints where the partitions run: $(grep 'partitions on' "${log}")" \
  grep -qE "partitions on cpus [0-9]+,[0-9]+, memory on nodes [0-9]+,[0-9]+ \(--pin_cores=true --numa=auto; NUMA: [1-9][0-9]* nodes? " "${log}"
# (policy 3 in field 41 of /proc/PID/task/TID/stat)
batch_threads() {
  for stat in /proc/"$1"/task/*/stat; do
    sed 's/.*) //' "${stat}" | awk '{print $39}'
  done | grep -c '^3$'
}
check "no thread under SCHED_BATCH with a CPU per partition" \
  test "$(batch_threads "${pid}")" -eq 0
if [[ -n "${metrics_port}" ]]; then
  exec 3<>"/dev/tcp/127.0.0.1/${metrics_port}"
  printf 'GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n' >&3
  body=$(cat <&3)
  exec 3<&-
  check "metrics endpoint answers 200" grep -q "HTTP/1.1 200" <<<"${body}"
  check "metrics show 2 partitions" grep -q "^cohort_partitions 2" <<<"${body}"
fi
kill -TERM "${pid}"
wait "${pid}"
check "SIGTERM exits 0" test $? -eq 0
check "SIGTERM shuts down in order" grep -q "SIGTERM received; shutting down" "${log}"
check "reports it stopped" grep -q "cohortd: stopped" "${log}"
rm -f "${log}"

# startup_line NAME REGEX FLAGS...: cohortd started with FLAGS prints a
# startup line that REGEX (grep -E) matches.
startup_line() {
  local name=$1 regex=$2
  shift 2
  start_cohortd "${log}" "${COHORTD}" --listen=127.0.0.1:0 "$@"
  check "${name}: $(grep 'serving on' "${log}")" grep -qE "${regex}" "${log}"
  stop_cohortd "${COHORTD_PID}"
  rm -f "${log}"
}

# An explicit --cohorts_in_flight is the one the engine runs with.
startup_line "names the cohorts in flight" \
  ", cohorts_in_flight 8; TLS off, auth off\)$" \
  --partitions=2 --cohorts_in_flight=8

# Index copies: 4 partitions in 2 copies, each with the cohorts in flight
# of its 2 partitions. 16 partitions by the default rule: 2 copies of 8.
startup_line "names the index copies" \
  ", index_copies 2, cohorts_in_flight 2; TLS off, auth off\)$" \
  --partitions=4 --index_copies=2 --metrics_port=0
startup_line "16 partitions default to 2 copies" \
  ", index_copies 2, cohorts_in_flight 4; TLS off, auth off\)$" \
  --partitions=16
startup_line "replicated is a copy per partition" \
  "index replicated, .*, index_copies 2, cohorts_in_flight 2, phase2_stealing off; TLS off" \
  --partitions=2 --index=replicated --phase2_stealing=false

# Steal units: named when a share is cut (the default, 1, is not).
startup_line "names the steal units" \
  ", cohorts_in_flight 2, steal_units 3; TLS off, auth off\)$" \
  --partitions=2 --steal_units=3

# More partitions than CPUs: the partition threads run under SCHED_BATCH,
# and the line that says where they run says so.
oversubscribed=$(($(nproc) + 1))
start_cohortd "${log}" "${COHORTD}" --listen=127.0.0.1:0 \
  --partitions="${oversubscribed}" --index_copies=1
check "says the partitions outnumber the CPUs: $(grep 'partitions on' "${log}")" \
  grep -qE "; ${oversubscribed} partitions on $(nproc) CPUs: SCHED_BATCH$" "${log}"
batched=$(batch_threads "${COHORTD_PID}")
check "${oversubscribed} partition threads under SCHED_BATCH (${batched})" \
  test "${batched}" -eq "${oversubscribed}"
stop_cohortd "${COHORTD_PID}"
rm -f "${log}"

# The threaded baseline names its workers (it has no partitions or cohorts).
startup_line "names the threaded engine" \
  "\(mode threaded, 3 workers; TLS off, auth off\)$" \
  --mode=threaded --threads=3
finish_checks cohortd_test
