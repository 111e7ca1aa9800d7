#!/usr/bin/env bash
# The matcher alone on one thread, on every workload preset issue 18 reports
# together: fabret-1m, selective-1m and ranges-1m (bench/workloads.md), at
# MatchEvent and cohorts of 1, 4, 16 and 64, each preset in its own
# matcher_bench run (passes interleaved across the paths).
#
#   bench/matcher_presets.sh [--quick] [--reps=N] [--cohorts=LIST]
#                            [--presets=LIST] [--out=DIR] [--bin=DIR]
#
# Writes DIR (default results/matcher-<UTC time>[-quick]/): meta.txt,
# <preset>.json (matcher_bench's JSON lines, with the peak RSS) and
# report.md (tools/matcher_presets_report.py): events/s median (min-max),
# p50/p99 of a call, matches and rows per event, bytes per subscription, load
# seconds; whether any cohort size is slower than MatchEvent; cohort 64 over
# cohort 1. Events: fabret-1m and selective-1m all 100,000, ranges-1m the
# first 2,000. --quick: 20,000 subscriptions, 500 events, 1 repetition.
# --bin=DIR runs DIR/matcher_bench instead of building it.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
reps=3
cohorts="event,1,4,16,64"
presets="fabret-1m,selective-1m,ranges-1m"
out=""
bin=""
for arg in "$@"; do
  case "${arg}" in
    --quick) quick=1 ;;
    --reps=*) reps="${arg#*=}" ;;
    --cohorts=*) cohorts="${arg#*=}" ;;
    --presets=*) presets="${arg#*=}" ;;
    --out=*) out="${arg#*=}" ;;
    --bin=*) bin="${arg#*=}" ;;
    *) echo "matcher_presets.sh: unknown argument ${arg}" >&2; exit 2 ;;
  esac
done
if [[ -z "${bin}" ]]; then
  tools/setup.sh
  bazel build -c opt //bench:matcher_bench
  bench=.bazel/out/k8-opt/bin/bench/matcher_bench
else
  bench="${bin}/matcher_bench"
fi
if [[ -z "${out}" ]]; then
  out="results/matcher-$(date -u +%Y%m%dT%H%M%SZ)$( ((quick)) && echo -quick)"
fi
mkdir -p "${out}"
subs=-1
((quick)) && subs=20000 && [[ "${reps}" == 3 ]] && reps=1
{
  echo "date: $(date -u +%FT%TZ)"
  echo "machine: $(nproc) CPUs, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (modified)')"
  echo "command: bench/matcher_presets.sh $*"
  echo "reps: ${reps}; paths: ${cohorts}; one thread"
} >"${out}/meta.txt"
for preset in ${presets//,/ }; do
  events=-1
  [[ "${preset}" == ranges-1m ]] && events=2000
  ((quick)) && events=500
  echo "matcher_presets: ${preset}"
  "${bench}" --preset="${preset}" --subscriptions="${subs}" \
    --events="${events}" --cohort_max="${cohorts}" --repetitions="${reps}" \
    --format=json >"${out}/${preset}.json"
done
python3 tools/matcher_presets_report.py "${out}" >"${out}/report.md"
cat "${out}/report.md"
