#!/usr/bin/env bash
# The matcher alone on one thread, on every workload preset issue 18 reports
# together: fabret-1m, selective-1m and ranges-1m (workload/presets.md), at
# MatchEvent and cohorts of 1, 4, 16 and 64, each preset in its own
# matcher_bench run (passes interleaved across the paths).
#
#   bench/matcher_presets.sh [--quick] [--reps=N] [--cohorts=LIST]
#                            [--presets=LIST] [--out=DIR] [--bin=DIR]
#                            [--baseline=DIR [--paired]]
#
# Writes DIR (default results/matcher-<UTC time>[-quick]/): meta.txt,
# <preset>.json (matcher_bench's JSON lines, with the peak RSS) and
# report.md (tools/matcher_presets_report.py): events/s median (min-max),
# p50/p99 of a call, matches and rows per event, bytes per subscription, load
# seconds; whether any cohort size is slower than MatchEvent; cohort 64 over
# cohort 1. Events: fabret-1m, selective-1m and events-1m all 100,000,
# ranges-1m the first 2,000, eventbridge-1m the first 20,000 (JSON,
# flattened in the timed pass). --quick: 20,000 subscriptions, 500 events,
# 1 repetition.
# --bin=DIR runs DIR/matcher_bench instead of building it.
# --baseline=DIR also runs DIR/matcher_bench (an earlier build, e.g. copied
# aside before a change) on the same presets, one repetition of each binary
# in turn, so that the machine's drift hits both alike; the report then gives
# before, after and the per-repetition after/before ratios (<preset>.json
# and <preset>.baseline.json hold a line per path per repetition).
# --paired (with --baseline, on 2 or more CPUs) runs the two binaries of a
# repetition at the same time instead, pinned to CPUs 0 and 1 (taskset) and
# swapped at every repetition, so that both see the same moment of the
# machine and each CPU equally often (on a VM whose CPUs differ, a pair's
# ratio flips with them: use an even --reps).
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
reps=3
cohorts="event,1,4,16,64"
presets="fabret-1m,selective-1m,ranges-1m"
out=""
bin=""
baseline=""
paired=0
for arg in "$@"; do
  case "${arg}" in
    --quick) quick=1 ;;
    --reps=*) reps="${arg#*=}" ;;
    --cohorts=*) cohorts="${arg#*=}" ;;
    --presets=*) presets="${arg#*=}" ;;
    --out=*) out="${arg#*=}" ;;
    --bin=*) bin="${arg#*=}" ;;
    --baseline=*) baseline="${arg#*=}" ;;
    --paired) paired=1 ;;
    *) echo "matcher_presets.sh: unknown argument ${arg}" >&2; exit 2 ;;
  esac
done
if ((paired)) && [[ -z "${baseline}" ]]; then
  echo "matcher_presets.sh: --paired needs --baseline" >&2
  exit 2
fi
if ((paired)) && (($(nproc) < 2)); then
  echo "matcher_presets.sh: --paired needs 2 CPUs, this machine has $(nproc)" >&2
  exit 2
fi
if [[ -z "${bin}" ]]; then
  tools/setup.sh
  bazel build -c opt //bench:matcher_bench
  bench=.bazel/out/k8-opt/bin/bench/matcher_bench
else
  bench="${bin}/matcher_bench"
fi
if [[ -n "${baseline}" && ! -x "${baseline}/matcher_bench" ]]; then
  echo "matcher_presets.sh: --baseline: no executable ${baseline}/matcher_bench" >&2
  exit 2
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
  [[ -z "${baseline}" ]] ||
    echo "baseline: ${baseline}/matcher_bench (sha256 $(sha256sum "${baseline}/matcher_bench" | cut -c1-12)), $( ((paired)) && echo "both binaries at once, on CPUs 0 and 1, swapped each repetition" || echo "one repetition of each binary in turn")"
} >"${out}/meta.txt"
run_bench() {  # BINARY PRESET EVENTS REPS [CPU]
  local pin=()
  [[ -z "${5:-}" ]] || pin=(taskset -c "$5")
  "${pin[@]}" "$1" --preset="$2" --subscriptions="${subs}" --events="$3" \
    --cohort_max="${cohorts}" --repetitions="$4" --format=json
}
for preset in ${presets//,/ }; do
  events=-1
  [[ "${preset}" == ranges-1m ]] && events=2000
  [[ "${preset}" == eventbridge-1m ]] && events=20000
  ((quick)) && events=500
  echo "matcher_presets: ${preset}"
  if [[ -z "${baseline}" ]]; then
    run_bench "${bench}" "${preset}" "${events}" "${reps}" >"${out}/${preset}.json"
    continue
  fi
  : >"${out}/${preset}.json"
  : >"${out}/${preset}.baseline.json"
  for ((rep = 0; rep < reps; ++rep)); do
    if ((paired)); then
      run_bench "${baseline}/matcher_bench" "${preset}" "${events}" 1 \
        $((rep % 2)) >"${out}/.pair.baseline" &
      before=$!
      run_bench "${bench}" "${preset}" "${events}" 1 $((1 - rep % 2)) \
        >"${out}/.pair.after" &
      after=$!
      wait "${before}"
      wait "${after}"
      cat "${out}/.pair.baseline" >>"${out}/${preset}.baseline.json"
      cat "${out}/.pair.after" >>"${out}/${preset}.json"
      rm -f "${out}/.pair.baseline" "${out}/.pair.after"
      continue
    fi
    run_bench "${baseline}/matcher_bench" "${preset}" "${events}" 1 \
      >>"${out}/${preset}.baseline.json"
    run_bench "${bench}" "${preset}" "${events}" 1 >>"${out}/${preset}.json"
  done
done
python3 tools/matcher_presets_report.py "${out}" >"${out}/report.md"
cat "${out}/report.md"
