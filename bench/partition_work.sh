#!/usr/bin/env bash
# Matcher-only scaling model: how much matching work one core of a P-core
# staged server does, single-threaded, for P = 1, 2, 4, 8, 16 (issue #5).
#
#   bench/partition_work.sh [--quick] [--reps=N] [--events=N] [--out=DIR]
#                           [--bin=DIR]
#
# For each P it runs bench/locality_probe (no cachegrind) as core 0 of P:
#   partitioned  core 0's shard (every P-th subscription) against every
#                event, in cohorts of 64 — what a partition of cohortd does;
#   replicated   the whole index against every P-th event, in cohorts of 64.
# and takes `match_seconds` (the matching loop only). With P cores working
# in parallel and nothing shared, the machine's matcher-only throughput is
# P_events / (core 0's seconds), so T(1) / T(P) is the speedup P cores can
# reach at best: it shows how the work divides, not what a 16-core machine
# does (memory bandwidth and caches are shared there). Runs on any machine;
# repetitions are interleaved. Output: results/partition-work-<time>/
# (report.md, work.csv, raw JSON). --quick: 100k subscriptions, 1 rep.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
reps=3
events=8000
out=""
bin=""
for arg in "$@"; do
  case "${arg}" in
    --quick) quick=1 ;;
    --reps=*) reps="${arg#*=}" ;;
    --events=*) events="${arg#*=}" ;;
    --out=*) out="${arg#*=}" ;;
    --bin=*) bin="${arg#*=}" ;;
    *) echo "partition_work.sh: unknown argument ${arg}" >&2; exit 2 ;;
  esac
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
  out="results/partition-work-$(date -u +%Y%m%dT%H%M%SZ)$( ((quick)) && echo -quick)"
fi
mkdir -p "${out}/runs"
workload=$(mktemp "${TMPDIR:-/tmp}/partition_work.XXXXXX")
trap 'rm -f "${workload}"' EXIT
"${cohort}" workload --preset=fabret-1m --subscriptions="${subs}" \
  --events="${events}" --out="${workload}" >/dev/null
{
  echo "date: $(date -u +%FT%TZ)"
  echo "machine: $(nproc) CPUs, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
  echo "workload: fabret-1m, subscriptions ${subs} (-1: 1,000,000), events ${events}"
  echo "reps: ${reps}; cohorts of 64; core 0 of P"
} >"${out}/meta.txt"

for rep in $(seq "${reps}"); do
  for p in 1 2 4 8 16; do
    for layout in partitioned replicated; do
      echo "==> P=${p} ${layout} rep ${rep}"
      "${probe}" --workload="${workload}" --partitions="${p}" \
        --layout="${layout}" --cohort_max=64 \
        >"${out}/runs/${layout}-${p}-${rep}.json"
    done
  done
done

python3 - "${out}" <<'PY'
import glob, json, os, statistics, sys
out = sys.argv[1]
rows, csv = [], ["layout,partitions,core0_seconds_median,min,max,core0_events,core0_subscriptions,index_bytes,speedup_bound"]
base = {}
for layout in ["partitioned", "replicated"]:
    for p in [1, 2, 4, 8, 16]:
        runs = [json.load(open(f)) for f in
                sorted(glob.glob(f"{out}/runs/{layout}-{p}-*.json"))]
        secs = [r["match_seconds"] for r in runs]
        med = statistics.median(secs)
        # Events the machine matches per second with P cores like core 0:
        # partitioned: every core sees every event; replicated: each sees 1/P.
        events_total = runs[0]["events"] * (1 if layout == "partitioned" else p)
        rate = events_total / med
        base.setdefault(layout, rate)
        speedup = rate / base[layout]
        r0 = runs[0]
        rows.append(f"| {layout} | {p} | {r0['subscriptions']:,} | {r0['events']:,} | "
                    f"{med:.3f} ({min(secs):.3f}–{max(secs):.3f}) | {rate:,.0f} | "
                    f"{speedup:.2f}x | {r0['index_bytes'] / 1e6:.0f} |")
        csv.append(",".join(str(x) for x in [layout, p, med, min(secs), max(secs),
                                             r0["events"], r0["subscriptions"],
                                             r0["index_bytes"], round(speedup, 3)]))
open(os.path.join(out, "work.csv"), "w").write("\n".join(csv) + "\n")
lines = ["# Matcher-only work per core, P = 1..16", "", "```",
         open(os.path.join(out, "meta.txt")).read().strip(), "```", "",
         "| layout | P | core 0 subscriptions | core 0 events | core 0 match s (min–max) | "
         "events/s with P such cores | bound on speedup vs P=1 | core 0 index MB |",
         "|---|---|---|---|---|---|---|---|", *rows, "",
         "Each row is one core's share, timed alone; the throughput and speedup "
         "assume P cores do their shares in parallel with no interference, so "
         "they bound what P cores can reach. Partitioned: a shard of 1/P of the "
         "subscriptions still evaluates phase 1 (the predicate indexes) for "
         "every event, so its work does not shrink as 1/P. Reproduce: "
         "`bench/partition_work.sh`.", ""]
open(os.path.join(out, "report.md"), "w").write("\n".join(lines))
print("\n".join(lines))
PY
