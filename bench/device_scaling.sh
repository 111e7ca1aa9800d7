#!/usr/bin/env bash
# Issue 17 item 6 on a lent many-core machine, from a bundle (tools/bundle.sh)
# and no Bazel: matcher-only scaling (bench/partition_work.sh --concurrent,
# P = 1, 2, 4, 8, 16, every layout) and the end-to-end locality experiment
# (bench/experiment.sh --only=3: partitioned, sharded_phase1, replicated and
# threaded at all cores, and the partitioned server at 1, 2, 4, 8
# partitions), the same forms as the 2026-11-23 Xeon reports; and, as a
# part of its own, experiment 1 (closed-loop response time at 1 to 16
# clients, staged against threaded) at all cores.
#
#   tools/bundle.sh                       # here, builds dist/bundle
#   bench/device_scaling.sh PART DEST     # there; PART: matcher, e2e,
#                                         # copies, all (those three),
#                                         # exp1, diag or next
#
# copies (issue 43, a few minutes) runs locality_probe --preemption at
# P = min(16, CPUs): one thread, P threads with and without phase-2
# stealing, with shares in 2 and 4 steal units (--steal_units), and P
# threads in every index-copy count dividing P, each in
# turn for COPIES_ROUNDS (default 5) rounds, then bench/preemption.sh
# --check=REAL on two of the CPUs.
#
# DEST (default results/device) gets machine.txt and one tarball per part
# (matcher.tgz, e2e.tgz, copies.tgz, exp1.tgz), whole even when a run fails part way,
# so that a lease of a few minutes brings back what it measured (the device
# tool returns a limited number of files: keep them in tarballs). Reports
# are written here afterwards: tools/partition_work_report.py for the
# matcher (the run writes its own when python3 is there) and
# tools/experiment_report.py for experiments 1 and 3 (exp1 takes about four
# minutes at E1_REPS=2, E1_DURATION=3). COHORT_COMMIT names the commit the
# bundle was built from;
# MATCHER_LAYOUTS (default all three) trims the matcher part's layouts when
# a lease is short. next (about six minutes; what the 2026-11-29 lease
# left open, bench/reports/2026-11-29-xeon16-issue43-item6) runs the
# copies probe's p1, p16 and every G over 32,000 and 128,000 events in
# alternation (NEXT_ROUNDS probes of each, COPIES_ROUNDS rounds a probe;
# one thread was 37% slower in the 128,000-event call there), then
# experiment 3 with the load generator on CPUs of its own (the server on
# all but the last 4, `--server_cpus`/`--client_cpus`), since there 8
# partitions served as much as 16 beside the generator.
# diag (about two minutes) is bench/pipeline_diag.sh
# --e2e: where the partitioned layout's threads spend their time at 1, 8
# and 16 partitions, and, with OLD_PROBE (an earlier build's
# locality_probe, put in the bundle beside the others), that build's at 16
# in the same repetitions.
set -uo pipefail
cd "$(dirname "$0")/.."
readonly PART="${1:-all}" DEST="${2:-results/device}"
readonly BIN=dist/bundle/bin
readonly EVENTS="${EVENTS:-16000}" MATCHER_REPS="${MATCHER_REPS:-3}"
readonly E2E_REPS="${E2E_REPS:-2}" E2E_DURATION="${E2E_DURATION:-4}"
readonly E1_REPS="${E1_REPS:-2}" E1_DURATION="${E1_DURATION:-3}"
readonly MATCHER_LAYOUTS="${MATCHER_LAYOUTS:-\
partitioned,sharded_phase1,replicated}"
mkdir -p "${DEST}"
{
  echo "date: $(date -u +%FT%TZ)"
  echo "commit: ${COHORT_COMMIT:-unknown}"
  echo "nproc: $(nproc)"
  lscpu
  "${BIN}/numactl" --hardware
  free -g
  uname -a
} >"${DEST}/machine.txt" 2>&1
# Without taskset the probes and servers run unpinned; say so.
if ! command -v taskset >/dev/null; then
  mkdir -p /tmp/device_shim
  printf '#!/bin/sh\nshift 2\nexec "$@"\n' >/tmp/device_shim/taskset
  chmod +x /tmp/device_shim/taskset
  export PATH="/tmp/device_shim:${PATH}"
  echo "taskset: missing, probes unpinned" >>"${DEST}/machine.txt"
fi
# The matcher probes' thread count: min(16, CPUs).
probe_cores() { echo $(($(nproc) < 16 ? $(nproc) : 16)); }
# ",pP-cG" for every index-copy count G > 1 dividing P (locality_probe
# --preemption's names).
copy_configs() {
  local p=$1 g out=""
  for ((g = 2; g <= p; g *= 2)); do
    ((p % g == 0)) && out+=",p${p}-c${g}"
  done
  echo "${out}"
}
status=0
if [[ "${PART}" == matcher || "${PART}" == all ]]; then
  rm -rf results/device-matcher
  bench/partition_work.sh --concurrent --bin="${BIN}" --events="${EVENTS}" \
    --reps="${MATCHER_REPS}" --layouts="${MATCHER_LAYOUTS}" \
    --out=results/device-matcher || status=1
  tar czf "${DEST}/matcher.tgz" -C results device-matcher
fi
if [[ "${PART}" == e2e || "${PART}" == all ]]; then
  rm -rf results/device-e2e
  bench/experiment.sh --only=3 --reps="${E2E_REPS}" \
    --duration="${E2E_DURATION}" --bin="${BIN}" --no_report \
    --out=results/device-e2e || status=1
  tar czf "${DEST}/e2e.tgz" -C results device-e2e
fi
if [[ "${PART}" == copies || "${PART}" == all ]]; then
  # Issue 43: matcher only at P = min(16, CPUs) in one probe process, every
  # configuration in turn for COPIES_ROUNDS rounds (medians and ratios
  # paired by round against one thread): one index with and without
  # phase-2 stealing and in 2 and 4 steal units, and every index-copy
  # count G dividing P; then the
  # 2-CPU preemption check with the issue's bounds.
  rm -rf results/device-copies
  mkdir -p results/device-copies
  p=$(probe_cores)
  configs="p1,p${p},p${p}-nosteal,p${p}-u2,p${p}-u4$(copy_configs "${p}")"
  "${BIN}/cohort" workload --preset=fabret-1m --events="${EVENTS}" \
    --out=results/device-copies/workload >results/device-copies/workload.txt &&
    { echo "date: $(date -u +%FT%TZ)"; echo "commit: ${COHORT_COMMIT:-unknown}"
      echo "machine: $(nproc) CPUs"; echo "configurations: ${configs}"
      echo "rounds: ${COPIES_ROUNDS:-5}"; } >results/device-copies/meta.txt &&
    "${BIN}/locality_probe" --workload=results/device-copies/workload \
      --preemption="${configs}" --rounds="${COPIES_ROUNDS:-5}" \
      >results/device-copies/probe.json &&
    python3 tools/preemption_report.py results/device-copies "" ||
    status=1
  rm -f results/device-copies/workload
  bench/preemption.sh --bin="${BIN}" --check=REAL \
    --out=results/device-copies/preemption || status=1
  tar czf "${DEST}/copies.tgz" -C results device-copies
fi
if [[ "${PART}" == diag ]]; then
  rm -rf results/device-diag
  bench/pipeline_diag.sh --bin="${BIN}" --e2e --out=results/device-diag \
    ${OLD_PROBE:+--old_probe="${OLD_PROBE}"} || status=1
  tar czf "${DEST}/diag.tgz" -C results device-diag
fi
if [[ "${PART}" == next ]]; then
  rm -rf results/device-next
  mkdir -p results/device-next
  p=$(probe_cores)
  configs="p1,p${p}$(copy_configs "${p}")"
  { echo "date: $(date -u +%FT%TZ)"; echo "commit: ${COHORT_COMMIT:-unknown}"
    echo "machine: $(nproc) CPUs"; echo "configurations: ${configs}"
    echo "rounds: ${COPIES_ROUNDS:-5} a probe, ${NEXT_ROUNDS:-2} probes of" \
      "each event count, alternating"; } >results/device-next/meta.txt
  for events in 32000 128000; do
    "${BIN}/cohort" workload --preset=fabret-1m --events="${events}" \
      --out="results/device-next/workload-${events}" \
      >"results/device-next/workload-${events}.txt" || status=1
  done
  for ((round = 1; round <= ${NEXT_ROUNDS:-2}; ++round)); do
    for events in 32000 128000; do
      out="results/device-next/probe-${events}-${round}"
      mkdir -p "${out}"
      { cat results/device-next/meta.txt; echo "events: ${events}"; } \
        >"${out}/meta.txt"
      "${BIN}/locality_probe" \
        --workload="results/device-next/workload-${events}" \
        --preemption="${configs}" --rounds="${COPIES_ROUNDS:-5}" \
        >"${out}/probe.json" &&
        python3 tools/preemption_report.py "${out}" "" >/dev/null ||
        status=1
    done
  done
  rm -f results/device-next/workload-32000 results/device-next/workload-128000
  if (($(nproc) >= 8)); then
    bench/experiment.sh --only=3 --reps="${E2E_REPS}" \
      --duration="${E2E_DURATION}" --bin="${BIN}" --no_report \
      --server_cpus="0-$(($(nproc) - 5))" \
      --client_cpus="$(($(nproc) - 4))-$(($(nproc) - 1))" \
      --out=results/device-next/e2e-pinned || status=1
  fi
  tar czf "${DEST}/next.tgz" -C results device-next
fi
if [[ "${PART}" == exp1 ]]; then
  rm -rf results/device-exp1
  bench/experiment.sh --only=1 --reps="${E1_REPS}" \
    --duration="${E1_DURATION}" --bin="${BIN}" --no_report \
    --out=results/device-exp1 || status=1
  tar czf "${DEST}/exp1.tgz" -C results device-exp1
fi
exit "${status}"
