#!/usr/bin/env bash
# locality_probe plays the cores of a P-core server. Summed over the P
# cores, every layout must find the same matches (and some): the
# partitioned layout's timed run reports each core's partition; an
# --all_cores run (the callgrind mode) finds them all at once, in every
# layout, under every phase-1 split, and so does the --threads run on P
# real threads; bad flags exit 2 naming the flag.
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
by_id=$(total --layout=partitioned --spread_rows=0)
all_cores() {
  "${PROBE}" "${small[@]}" --all_cores "$@" | field matches
}
share_tasks=$(all_cores --layout=partitioned --phase1_split=tasks)
share_cohorts=$(all_cores --layout=partitioned --phase1_split=cohorts)
share_attributes=$(all_cores --layout=partitioned --phase1_split=attributes)
sharded=$(total --layout=sharded_phase1 --cohort_max=64)
replicated=$(total --layout=replicated --cohort_max=10)
threaded=$(total --layout=threaded)
check "partitioned finds matches" test "${partitioned:-0}" -gt 0
check "cohort size does not change the matches" \
  test "${partitioned}" = "${partitioned_1}"
check "placing rows by id finds the same" test "${by_id}" = "${partitioned}"
for split in tasks cohorts attributes; do
  var="share_${split}"
  check "--all_cores (${split}) finds the same" \
    test "${!var}" = "${partitioned}"
done
for layout in sharded_phase1 replicated threaded; do
  check "--all_cores (${layout}) finds the same" \
    test "$(all_cores --layout="${layout}")" = "${partitioned}"
done
check "sharded_phase1 finds what partitioned finds" \
  test "${sharded}" = "${partitioned}"
check "replicated finds what partitioned finds" \
  test "${replicated}" = "${partitioned}"
check "threaded finds what partitioned finds" \
  test "${threaded}" = "${partitioned}"
# --threads: the server's CohortPipeline on P threads. From 4 partitions
# on, a cohort of a few events queued while other threads are busy runs
# solo, every partition's match on one thread; each repetition here has
# some, at random points (a probe that matched only the former's partition
# lost a share of them in most runs).
threads_small=(--preset=fabret-1m --subscriptions=3000 --events=200
               --layout=partitioned --threads)
for p in 1 4 16; do
  for rep in 1 2 3; do
    check "--threads at P=${p} finds the same (run ${rep})" \
      test "$("${PROBE}" "${threads_small[@]}" --partitions="${p}" |
              field matches)" = "${partitioned}"
  done
done
# Index copies (each event to one copy of P / G partitions) and phase 2
# owned by its partition only find the same.
for copies in 2 4; do
  check "--threads at P=4 in ${copies} copies finds the same" \
    test "$("${PROBE}" "${threads_small[@]}" --partitions=4 \
            --copies="${copies}" | field matches)" = "${partitioned}"
done
check "--threads at P=16 without stealing finds the same" \
  test "$("${PROBE}" "${threads_small[@]}" --partitions=16 --steal=false |
          field matches)" = "${partitioned}"
# Steal units: each share cut into runs of its cluster lists, on the
# server's pipeline and in the work model (which fails unless the units'
# matches equal the shares').
for units in 2 5; do
  check "--threads at P=4 in ${units} steal units finds the same" \
    test "$("${PROBE}" "${threads_small[@]}" --partitions=4 \
            --steal_units="${units}" | field matches)" = "${partitioned}"
done
out=$("${PROBE}" --preset=fabret-1m --subscriptions=3000 --events=200 \
      --layout=partitioned --partitions=4 --steal_units=3)
check "the work model in 3 steal units schedules them" \
  python3 -c 'import json, sys
d = json.loads(sys.argv[1])
assert d["steal_units"] == 3 and len(d["core_seconds_phase2_units"]) == 4
assert d["all_matches"] == int(sys.argv[2]), d["all_matches"]' \
    "${out}" "${partitioned}"
"${PROBE}" "${threads_small[@]}" --partitions=4 --copies=3 >/dev/null 2>&1
check "--copies not dividing --partitions exits 2" test $? -eq 2
# --preemption: configurations in turn over indexes built once; every one
# finds the same matches in every round.
out=$("${PROBE}" --preset=fabret-1m --subscriptions=3000 --events=200 \
      --preemption=p1,p4-c2,c2,p2-nosteal,p4-u3 --rounds=2)
check "--preemption: every configuration and round finds the same" \
  python3 -c 'import json, sys
d = json.loads(sys.argv[1])
m = {x for c in d["configs"].values() for x in c["matches"]}
assert m == {int(sys.argv[2])}, m
assert all(len(c["events_per_s"]) == 2 for c in d["configs"].values())' \
    "${out}" "${partitioned}"
"${PROBE}" --preset=fabret-1m --subscriptions=300 --events=20 \
  --preemption=p4-c3 >/dev/null 2>&1
check "--preemption with copies not dividing the threads exits 2" \
  test $? -eq 2
"${PROBE}" --preset=fabret-1m --subscriptions=300 --events=20 \
  --preemption=p4-u0 >/dev/null 2>&1
check "--preemption with 0 steal units exits 2" test $? -eq 2
# Phase-1 tasks handed out alone and in batches of a few.
for batch in 1 500; do
  check "--threads at P=4 with batches of ${batch} positions finds the same" \
    test "$("${PROBE}" "${threads_small[@]}" --partitions=4 \
            --task_batch_positions="${batch}" | field matches)" = \
         "${partitioned}"
done
out=$("${PROBE}" "${threads_small[@]}" --partitions=2)
check "--threads reports the threads' time by part" \
  python3 -c 'import json, sys
d = json.loads(sys.argv[1])
parts = ("next", "form", "task", "match", "report")
assert all(d["thread_seconds_" + p] >= 0 for p in parts)
assert d["thread_calls_form"] > 0 and d["thread_calls_match"] > 0
assert sum(d["thread_seconds_" + p] for p in parts) <= 2 * d["match_seconds"] * 1.01 + 0.01' "${out}"

out=$("${PROBE}" "${small[@]}" --layout=partitioned)
check "partitioned builds the whole index" \
  test "$(field subscriptions <<<"${out}")" = 3000
check "partitioned: each event costs 3 cores" \
  test "$(field cores_per_event <<<"${out}")" = 3
check "partitioned reports every core's share under every split" \
  python3 -c 'import json, sys
d = json.loads(sys.argv[1])
assert all(len(d["core_seconds_" + s]) == 3 for s in ("tasks", "cohorts", "attributes"))
assert d["all_matches"] >= d["matches"] > 0' "${out}"
out=$("${PROBE}" "${small[@]}" --layout=sharded_phase1)
check "sharded_phase1 core 0 indexes a third" \
  test "$(field subscriptions <<<"${out}")" = 1000
out=$("${PROBE}" "${small[@]}" --layout=threaded)
check "threaded core 0 matches a third of the events" \
  test "$(field events <<<"${out}")" = 67

out=$("${PROBE}" "${small[@]}" --layout=shared 2>&1)
check "bad --layout exits 2" test $? -eq 2
check "bad --layout names the choices" \
  grep -q "use partitioned, sharded_phase1, replicated or threaded" <<<"${out}"
out=$("${PROBE}" "${small[@]}" --core=3 2>&1)
check "--core beyond --partitions exits 2" test $? -eq 2
out=$("${PROBE}" "${small[@]}" --phase1_split=rows 2>&1)
check "bad --phase1_split exits 2" test $? -eq 2
out=$("${PROBE}" "${small[@]}" --cohort_max=65 2>&1)
check "partitioned cohorts over 64 exit 2" test $? -eq 2
finish_checks locality_probe_test
