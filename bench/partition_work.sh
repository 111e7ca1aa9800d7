#!/usr/bin/env bash
# Matcher-only scaling: how much matching work the cores of a P-core staged
# server do, for P = 1, 2, 4, 8, 16, in each index layout (issue #17).
#
#   bench/partition_work.sh [--quick] [--concurrent] [--reps=N] [--events=N]
#                           [--partitions=LIST] [--layouts=LIST]
#                           [--copies=LIST] [--steal_units=K] [--out=DIR]
#                           [--bin=DIR]
#
# Layouts (bench/locality_probe, no valgrind):
#   partitioned     the default: one predicate table, each cohort's phase 1
#                   done once and split over the cores, phase 2 of partition
#                   p on core p (matcher::PartitionedIndex);
#   sharded_phase1  a core's own index of every P-th subscription against
#                   every event (phase 1 and 2), the earlier layout;
#   replicated      the whole index against every P-th event.
# All in cohorts of 64.
#
# Default, the work model (one core's share): sharded_phase1 and replicated
# time core 0 alone; partitioned times every piece of every cohort on one
# thread and adds up each core's share (bench/work_model.h), under the
# three splits of phase 1 the issue compares (tasks: the server's; cohorts;
# attributes), reporting the slowest core. With P cores working in parallel
# and nothing shared, the machine's throughput would be the events over
# that core's seconds, so T(1) / T(P) bounds the speedup P cores can reach:
# it shows how the work divides, on any machine, not what a many-core
# machine does. The report also gives each layout's index memory at every P
# (partitioned: the whole index with its mask buffers, as many as the
# server keeps in flight at P (CohortPipeline::DefaultBuffers); sharded_phase1:
# P x core 0's shard; replicated: P x the whole index) against P = 1.
#
# --concurrent (real parallel runs; P at most the usable CPUs): for each P
# all P cores work at once. sharded_phase1 and replicated run P probes, probe
# i pinned to CPU i (taskset), their matching loops started together once
# every index is built; throughput = events / the slowest core's seconds.
# partitioned runs one probe with P pinned threads scheduled by the server's
# CohortPipeline (locality_probe --threads); throughput = events / its wall
# time. Shared caches and memory bandwidth are in the figures. The report
# checks that the matches add up to the same total for every P and layout.
#
# Repetitions are interleaved. Output: results/partition-work-<time>/
# (report.md, work.csv, raw JSON). --quick: 100k subscriptions, 2,000
# events, 1 rep. --partitions: comma-separated P values (default
# 1,2,4,8,16); --layouts: comma-separated (default all three).
#
# --copies (comma-separated G values, default 1,2,4,16; with partitioned):
# the server's --index_copies=G, G copies of the index each split over
# P / G cores, each cohort matched by one copy. The work model derives
# (P, G) from its P / G run: each core of a copy does a P / G core's share
# of every G-th cohort, so the bound is G x the bound at P / G and the
# memory G x the index at P / G (reported only where P / G is among
# --partitions). --concurrent runs each G dividing P for real (one probe,
# P threads on G pipelines: locality_probe --copies), as layout
# partitioned-cG in the report. G = P is the replicated layout of the
# server (--index=replicated).
#
# --steal_units=K (1 to 32): the work model also times each partition's
# share cut into K steal units (the server's --steal_units; default 4, 1:
# not) and reports the phase-2 stealing schedule by unit beside the one by
# share; --concurrent runs the server's pipeline with K units (default:
# the server's default).
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
concurrent=0
counts="1,2,4,8,16"
layouts="partitioned,sharded_phase1,replicated"
copies="1,2,4,16"
steal_units=""
reps=3
events=8000
out=""
bin=""
for arg in "$@"; do
  case "${arg}" in
    --quick) quick=1 ;;
    --concurrent) concurrent=1 ;;
    --steal_units=*) steal_units="${arg#*=}" ;;
    --partitions=*) counts="${arg#*=}" ;;
    --layouts=*) layouts="${arg#*=}" ;;
    --copies=*) copies="${arg#*=}" ;;
    --reps=*) reps="${arg#*=}" ;;
    --events=*) events="${arg#*=}" ;;
    --out=*) out="${arg#*=}" ;;
    --bin=*) bin="${arg#*=}" ;;
    *) echo "partition_work.sh: unknown argument ${arg}" >&2; exit 2 ;;
  esac
done
if [[ -n "${steal_units}" ]] &&
   ! [[ "${steal_units}" =~ ^[0-9]+$ && "${steal_units}" -ge 1 &&
        "${steal_units}" -le 32 ]]; then
  echo "partition_work.sh: --steal_units: ${steal_units} is not 1 to 32" >&2
  exit 2
fi
if [[ -z "${steal_units}" ]]; then
  if ((concurrent)); then steal_units=0; else steal_units=4; fi
fi
for layout in ${layouts//,/ }; do
  case "${layout}" in
    partitioned | sharded_phase1 | replicated) ;;
    *) echo "partition_work.sh: unknown layout ${layout}" >&2; exit 2 ;;
  esac
done
for g in ${copies//,/ }; do
  if ! [[ "${g}" =~ ^[1-9][0-9]*$ ]]; then
    echo "partition_work.sh: --copies: ${g} is not a positive integer" >&2
    exit 2
  fi
done
subs=-1
if ((quick)); then
  subs=100000
  events=2000
  [[ "${reps}" == 3 ]] && reps=1
fi
if [[ -z "${bin}" ]]; then
  tools/setup.sh
  bazel build -c opt //client:cohort //bench:locality_probe
  cohort=.bazel/out/k8-opt/bin/client/cohort
  probe=.bazel/out/k8-opt/bin/bench/locality_probe
else
  cohort="${bin}/cohort"
  probe="${bin}/locality_probe"
fi
if [[ -z "${out}" ]]; then
  out="results/partition-work-$(date -u +%Y%m%dT%H%M%SZ)$( ((quick)) && echo -quick)$( ((concurrent)) && echo -concurrent)"
fi
mkdir -p "${out}/runs"
workload=$(mktemp "${TMPDIR:-/tmp}/partition_work.XXXXXX")
sync_dir=$(mktemp -d "${TMPDIR:-/tmp}/partition_work_sync.XXXXXX")
trap 'rm -rf "${workload}" "${sync_dir}"' EXIT
"${cohort}" workload --preset=fabret-1m --subscriptions="${subs}" \
  --events="${events}" --out="${workload}" >"${out}/workload.txt"
{
  echo "date: $(date -u +%FT%TZ)"
  echo "machine: $(nproc) CPUs, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (modified)')"
  echo "workload: fabret-1m, subscriptions ${subs} (-1: 1,000,000), events ${events}, $(grep sha256 "${out}/workload.txt")"
  if ((concurrent)); then
    echo "reps: ${reps}; cohorts of 64; all P cores at once; steal units ${steal_units} (0: the server's default)"
  else
    echo "reps: ${reps}; cohorts of 64; the work model (one core's share); steal units ${steal_units}"
  fi
} >"${out}/meta.txt"
cpus=$(nproc)

# run_probe LAYOUT P REP [G]: one measurement of layout LAYOUT at P cores
# (partitioned: in G index copies, concurrent only).
run_probe() {
  local layout=$1 p=$2 rep=$3 g=${4:-1} core last=0 pids=() i
  local common=(--workload="${workload}" --partitions="${p}"
                --layout="${layout}" --cohort_max=64
                --steal_units="${steal_units}")
  if [[ "${layout}" == partitioned ]]; then
    # One process: every core's share (model) or P threads (concurrent).
    local mode=() name="${layout}"
    ((concurrent)) && mode=(--threads --copies="${g}")
    ((g > 1)) && name="${layout}-c${g}"
    "${probe}" "${common[@]}" "${mode[@]}" \
      >"${out}/runs/${name}-${p}-${rep}-0.json"
    return
  fi
  ((concurrent)) && last=$((p - 1))
  rm -f "${sync_dir}"/*
  for core in $(seq 0 "${last}"); do
    local run=()
    ((concurrent)) && run=(taskset -c "$((core % cpus))")
    "${run[@]}" "${probe}" "${common[@]}" --core="${core}" \
      --ready_file="${sync_dir}/ready.${core}" --go_file="${sync_dir}/go" \
      >"${out}/runs/${layout}-${p}-${rep}-${core}.json" &
    pids+=($!)
  done
  # Start the loops together once every index is built. A probe only
  # exits before the go file on an error.
  until (($(find "${sync_dir}" -name 'ready.*' | wc -l) == last + 1)); do
    for i in "${pids[@]}"; do
      if ! kill -0 "${i}" 2>/dev/null; then
        echo "partition_work.sh: a probe exited before it was ready" >&2
        exit 1
      fi
    done
    sleep 0.05
  done
  touch "${sync_dir}/go"
  for i in "${pids[@]}"; do wait "${i}"; done
}

for rep in $(seq "${reps}"); do
  for p in ${counts//,/ }; do
    for layout in ${layouts//,/ }; do
      echo "==> P=${p} ${layout} rep ${rep}"
      run_probe "${layout}" "${p}" "${rep}"
      if [[ "${layout}" == partitioned ]] && ((concurrent)); then
        for g in ${copies//,/ }; do
          ((g > 1 && g <= p && p % g == 0)) || continue
          echo "==> P=${p} ${layout} in ${g} copies rep ${rep}"
          run_probe "${layout}" "${p}" "${rep}" "${g}"
        done
      fi
    done
  done
done

python3 tools/partition_work_report.py "${out}" "${counts}" "${layouts}" \
  "${concurrent}" "${copies}"
