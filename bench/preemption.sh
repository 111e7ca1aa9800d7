#!/usr/bin/env bash
# Matcher-only preemption check on two CPUs (issue #43, "what it must
# show" 1): does a thread that loses its core hold up the others?
#
#   bench/preemption.sh [--quick] [--rounds=N] [--events=N] [--configs=LIST]
#                       [--check=LOOSE|REAL] [--out=DIR] [--bin=DIR]
#
# One bench/locality_probe process (--preemption) on the first two CPUs
# this process may use builds the indexes once, then runs every
# configuration in turn, round after round, over the same fabret-1m events
# (the server's CohortPipeline on real threads, cohorts of 64; only the
# matching is timed), so that a round's figures were taken within a second
# of each other on a noisy machine:
#   p1, p2      partitioned, 1 thread, and 2 threads pinned;
#   p16         partitioned, 16 threads on the same 2 CPUs, unpinned as
#               the server leaves them when partitions outnumber CPUs: a
#               thread preempted while it holds a hand-off (a lock convoy),
#               or owning work only it may do, stalls the rest;
#   p2-hog      p2 with a thread spinning on the second CPU for the whole
#               match: 1.5 of 2 cores are left;
#   c2, c2-hog  2 index copies of one partition each (--index_copies=2
#               with 2 partitions: the replicated layout);
#   -nosteal    the same without phase-2 stealing (--phase2_stealing);
#   -uK         (any configuration, by --configs) each share in K steal
#               units (--steal_units), e.g. p16-u4.
# The report gives each configuration's median events/s with its spread
# and its speedup over p1, and the medians of the ratios paired by round:
# p2 / p1 (the issue asks >= 1.85), p16 / p2 (>= 0.9), p2-hog / p2 (>= 0.7,
# and at least what c2-hog / c2 keeps).
#
# --check=LOOSE (./test.sh) or REAL fails (exit 1) when a ratio misses its
# bound: LOOSE wants p16 / p2 >= 0.6 and p2-hog / p2 >= 0.45, room for a
# noisy shared machine; REAL the issue's 0.9 and 0.7. Either is skipped
# (exit 0, saying so) on fewer than two CPUs.
#
# --quick: 100k subscriptions, 40,000 events, 7 rounds (./test.sh);
# default 1M subscriptions, 32,000 events, 15 rounds. Output:
# results/preemption-<time>/ (report.md, probe.json, meta.txt).
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
rounds=""
events=""
configs="p1,p2,p16,p16-nosteal,p2-hog,p2-hog-nosteal,c2,c2-hog"
check=""
out=""
bin=""
for arg in "$@"; do
  case "${arg}" in
    --quick) quick=1 ;;
    --rounds=*) rounds="${arg#*=}" ;;
    --events=*) events="${arg#*=}" ;;
    --configs=*) configs="${arg#*=}" ;;
    --check=*) check="${arg#*=}" ;;
    --out=*) out="${arg#*=}" ;;
    --bin=*) bin="${arg#*=}" ;;
    *) echo "preemption.sh: unknown argument ${arg}" >&2; exit 2 ;;
  esac
done
case "${check}" in
  "" | LOOSE | REAL) ;;
  *) echo "preemption.sh: --check is LOOSE or REAL" >&2; exit 2 ;;
esac
subs=-1
if ((quick)); then
  subs=100000
  : "${events:=40000}"
  : "${rounds:=7}"
fi
: "${events:=32000}"
: "${rounds:=15}"

# The first two CPUs this process may use.
mapfile -t cpus < <(python3 -c '
import os
for c in sorted(os.sched_getaffinity(0))[:2]: print(c)')
if ((${#cpus[@]} < 2)); then
  echo "preemption.sh: skipped: needs 2 CPUs, this process may use ${#cpus[@]}"
  exit 0
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
  out="results/preemption-$(date -u +%Y%m%dT%H%M%SZ)$( ((quick)) && echo -quick)"
fi
mkdir -p "${out}"
workload=$(mktemp "${TMPDIR:-/tmp}/preemption.XXXXXX")
trap 'rm -f "${workload}"' EXIT
"${cohort}" workload --preset=fabret-1m --subscriptions="${subs}" \
  --events="${events}" --out="${workload}" >"${out}/workload.txt"
{
  echo "date: $(date -u +%FT%TZ)"
  echo "machine: $(nproc) CPUs, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
  echo "cpus used: ${cpus[0]},${cpus[1]}"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (modified)')"
  echo "workload: fabret-1m, subscriptions ${subs} (-1: 1,000,000), events ${events}, $(grep sha256 "${out}/workload.txt")"
  echo "rounds: ${rounds}, every configuration in turn in each; cohorts of 64"
} >"${out}/meta.txt"

taskset -c "${cpus[0]},${cpus[1]}" "${probe}" --workload="${workload}" \
  --preemption="${configs}" --rounds="${rounds}" >"${out}/probe.json"
python3 tools/preemption_report.py "${out}" "${check}"
