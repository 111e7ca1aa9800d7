#!/usr/bin/env bash
# Issue 43 item 6 on the lent 16-core machine, in one device call from a
# bundle (tools/bundle.sh, nats-server left out to fit the transfer):
#
#   tools/bundle.sh && rm dist/bundle/bin/nats-server
#   (device) COHORT_COMMIT=<sha> bench/reports/2026-11-29-xeon16-issue43-item6/run.sh DEST
#
# Parts in order of what the issue asks, each under its own time cap so
# that a short lease brings back what finished, one tarball each in DEST:
#   copies.tgz  matcher only, one locality_probe process: p1, p16 with and
#               without phase-2 stealing, p16 in 2 and 4 steal units, and
#               every index-copy count G dividing 16, COPIES_ROUNDS rounds
#               interleaved (bench/device_scaling.sh copies without its
#               2-CPU preemption check, which ./test.sh and the 2-core
#               reports already cover);
#   e2e.tgz     experiment 3 (bench/experiment.sh --only=3): the default
#               server, sharded_phase1, replicated and threaded at all
#               cores under the saturating stream and 16 closed-loop
#               clients, and the partitioned server at 1, 2, 4, 8;
#   exp1.tgz    experiment 1 (staged against threaded, 1 to 16 clients),
#               if time is left.
set -uo pipefail
cd "$(dirname "$0")/../../.."
readonly DEST="${1:-results/device}" BIN=dist/bundle/bin
readonly EVENTS="${EVENTS:-32000}" ROUNDS="${COPIES_ROUNDS:-7}"
mkdir -p "${DEST}"
started=$(date +%s)
{
  echo "date: $(date -u +%FT%TZ)"
  echo "commit: ${COHORT_COMMIT:-unknown}"
  echo "nproc: $(nproc)"
  lscpu
  "${BIN}/numactl" --hardware
  free -g
  uname -a
} >"${DEST}/machine.txt" 2>&1
if ! command -v taskset >/dev/null; then
  mkdir -p /tmp/device_shim
  printf '#!/bin/sh\nshift 2\nexec "$@"\n' >/tmp/device_shim/taskset
  chmod +x /tmp/device_shim/taskset
  export PATH="/tmp/device_shim:${PATH}"
  echo "taskset: missing, probes unpinned" >>"${DEST}/machine.txt"
fi
elapsed() { echo "$(($(date +%s) - started)) s"; }

# --- copies: matcher only ------------------------------------------------
rm -rf results/device-copies
mkdir -p results/device-copies
p=$(($(nproc) < 16 ? $(nproc) : 16))
configs="p1,p${p},p${p}-nosteal,p${p}-u2,p${p}-u4"
for ((g = 2; g <= p; g *= 2)); do
  ((p % g == 0)) && configs+=",p${p}-c${g}"
done
"${BIN}/cohort" workload --preset=fabret-1m --events="${EVENTS}" \
  --out=results/device-copies/workload >results/device-copies/workload.txt
{ echo "date: $(date -u +%FT%TZ)"; echo "commit: ${COHORT_COMMIT:-unknown}"
  echo "machine: $(nproc) CPUs"; echo "configurations: ${configs}"
  echo "rounds: ${ROUNDS}"; echo "events: ${EVENTS}"; } \
  >results/device-copies/meta.txt
timeout "${COPIES_CAP_S:-170}" "${BIN}/locality_probe" \
  --workload=results/device-copies/workload --preemption="${configs}" \
  --rounds="${ROUNDS}" >results/device-copies/probe.json \
  2>results/device-copies/probe.err
echo "copies: exit $?, $(elapsed)" | tee -a "${DEST}/machine.txt"
python3 tools/preemption_report.py results/device-copies "" \
  >/dev/null 2>&1 || true
rm -f results/device-copies/workload
tar czf "${DEST}/copies.tgz" -C results device-copies

# --- experiment 3: end to end ---------------------------------------------
rm -rf results/device-e2e
timeout "${E2E_CAP_S:-300}" bench/experiment.sh --only=3 \
  --reps="${E2E_REPS:-2}" --duration="${E2E_DURATION:-4}" --bin="${BIN}" \
  --no_report --out=results/device-e2e >results/e2e.log 2>&1
echo "e2e: exit $?, $(elapsed)" | tee -a "${DEST}/machine.txt"
mv results/e2e.log results/device-e2e/ 2>/dev/null
tar czf "${DEST}/e2e.tgz" -C results device-e2e

# --- experiment 1, with what is left ----------------------------------------
left=$((${TOTAL_S:-540} - ($(date +%s) - started)))
if ((left > 60)); then
  rm -rf results/device-exp1
  timeout "${left}" bench/experiment.sh --only=1 --reps=1 --duration=3 \
    --bin="${BIN}" --no_report --out=results/device-exp1 \
    >results/exp1.log 2>&1
  echo "exp1: exit $?, $(elapsed)" | tee -a "${DEST}/machine.txt"
  mv results/exp1.log results/device-exp1/ 2>/dev/null
  tar czf "${DEST}/exp1.tgz" -C results device-exp1
fi
