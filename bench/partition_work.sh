#!/usr/bin/env bash
# Matcher-only scaling: how much matching work the cores of a P-core staged
# server do, for P = 1, 2, 4, 8, 16 (issue #5).
#
#   bench/partition_work.sh [--quick] [--concurrent] [--reps=N] [--events=N]
#                           [--partitions=LIST] [--out=DIR] [--bin=DIR]
#
# Layouts (bench/locality_probe, no cachegrind):
#   partitioned  a core's shard (every P-th subscription) against every
#                event, in cohorts of 64 — what a partition of cohortd does;
#   replicated   the whole index against every P-th event, in cohorts of 64.
# Each probe reports `match_seconds` (the matching loop only).
#
# Default (one core's share): for each P only core 0 runs, alone. With P
# cores working in parallel and nothing shared, the machine's matcher-only
# throughput would be P_events / (core 0's seconds), so T(1) / T(P) bounds
# the speedup P cores can reach: it shows how the work divides, on any
# machine, not what a many-core machine does.
#
# --concurrent (for a machine with at least 16 cores): for each P all P cores
# run at once, probe i pinned to CPU i (taskset), their matching loops
# started together once every index is built; throughput = events / the
# slowest core's seconds, so shared caches and memory bandwidth count. The
# report also checks that the cores' matches add up to the same total for
# every P and layout (the shards and the event slices cover everything).
#
# Repetitions are interleaved. Output: results/partition-work-<time>/
# (report.md, work.csv, raw JSON). --quick: 100k subscriptions, 1 rep.
# --partitions: comma-separated P values (default 1,2,4,8,16).
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
concurrent=0
counts="1,2,4,8,16"
reps=3
events=8000
out=""
bin=""
for arg in "$@"; do
  case "${arg}" in
    --quick) quick=1 ;;
    --concurrent) concurrent=1 ;;
    --partitions=*) counts="${arg#*=}" ;;
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
  out="results/partition-work-$(date -u +%Y%m%dT%H%M%SZ)$( ((quick)) && echo -quick)$( ((concurrent)) && echo -concurrent)"
fi
mkdir -p "${out}/runs"
workload=$(mktemp "${TMPDIR:-/tmp}/partition_work.XXXXXX")
sync_dir=$(mktemp -d "${TMPDIR:-/tmp}/partition_work_sync.XXXXXX")
trap 'rm -rf "${workload}" "${sync_dir}"' EXIT
"${cohort}" workload --preset=fabret-1m --subscriptions="${subs}" \
  --events="${events}" --out="${workload}" >/dev/null
{
  echo "date: $(date -u +%FT%TZ)"
  echo "machine: $(nproc) CPUs, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
  echo "workload: fabret-1m, subscriptions ${subs} (-1: 1,000,000), events ${events}"
  if ((concurrent)); then
    echo "reps: ${reps}; cohorts of 64; all P cores at once, probe i on CPU i"
  else
    echo "reps: ${reps}; cohorts of 64; core 0 of P, alone"
  fi
} >"${out}/meta.txt"
cpus=$(nproc)

# run_cores LAYOUT P REP: core 0 alone, or all P cores at once.
run_cores() {
  local layout=$1 p=$2 rep=$3 core last=0 pids=() i
  ((concurrent)) && last=$((p - 1))
  rm -f "${sync_dir}"/*
  for core in $(seq 0 "${last}"); do
    local run=()
    ((concurrent)) && run=(taskset -c "$((core % cpus))")
    "${run[@]}" "${probe}" --workload="${workload}" --partitions="${p}" \
      --core="${core}" --layout="${layout}" --cohort_max=64 \
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
    for layout in partitioned replicated; do
      echo "==> P=${p} ${layout} rep ${rep}"
      run_cores "${layout}" "${p}" "${rep}"
    done
  done
done

python3 - "${out}" "${counts}" "${concurrent}" <<'PY'
import glob, json, os, statistics, sys
out, counts, concurrent = sys.argv[1], [int(p) for p in sys.argv[2].split(",")], sys.argv[3] == "1"
rows = []
csv = ["layout,partitions,seconds_median,min,max,core0_events,core0_subscriptions,index_bytes,events_per_s,speedup"]
base, totals = {}, {}
for layout in ["partitioned", "replicated"]:
    for p in counts:
        reps = sorted({f.rsplit("-", 2)[1] for f in
                       glob.glob(f"{out}/runs/{layout}-{p}-*-0.json")}, key=int)
        secs, matches = [], set()
        for rep in reps:
            cores = [json.load(open(f)) for f in
                     glob.glob(f"{out}/runs/{layout}-{p}-{rep}-*.json")]
            # The slowest core bounds the round (concurrent), or core 0 alone.
            secs.append(max(c["match_seconds"] for c in cores))
            if concurrent:
                matches.add(sum(c["matches"] for c in cores))
        med = statistics.median(secs)
        r0 = json.load(open(f"{out}/runs/{layout}-{p}-{reps[0]}-0.json"))
        # Events the machine matches per second: partitioned, every core sees
        # every event; replicated, each sees 1/P of them.
        events_total = r0["events"] * (1 if layout == "partitioned" else p)
        rate = events_total / med
        base.setdefault(layout, rate)
        speedup = rate / base[layout]
        if concurrent:
            totals[(layout, p)] = matches
        rows.append(f"| {layout} | {p} | {r0['subscriptions']:,} | {r0['events']:,} | "
                    f"{med:.3f} ({min(secs):.3f}–{max(secs):.3f}) | {rate:,.0f} | "
                    f"{speedup:.2f}x | {r0['index_bytes'] / 1e6:.0f} |")
        csv.append(",".join(str(x) for x in [layout, p, med, min(secs), max(secs),
                                             r0["events"], r0["subscriptions"],
                                             r0["index_bytes"], round(rate),
                                             round(speedup, 3)]))
if concurrent:
    distinct = set().union(*totals.values())
    if len(distinct) != 1:
        sys.exit(f"partition_work.sh: the cores' matches do not add up to one "
                 f"total: {sorted(totals.items())}")
open(os.path.join(out, "work.csv"), "w").write("\n".join(csv) + "\n")
if concurrent:
    title = "# Matcher-only throughput, P = %s cores at once" % ",".join(map(str, counts))
    header = ("| layout | P | core 0 subscriptions | core 0 events | slowest core's "
              "match s (min–max) | events/s | speedup vs P=1 | core 0 index MB |")
    note = ("All P cores match at once, probe i pinned to CPU i, loops started "
            "together; events/s = events / the slowest core's seconds, so "
            "shared caches and memory bandwidth are in the figure. Partitioned: "
            "each core holds 1/P of the subscriptions and matches every event; "
            "replicated: each core holds them all and matches 1/P of the events. "
            "The cores' matches add up to %s for every P and layout. Reproduce: "
            "`bench/partition_work.sh --concurrent`." % f"{distinct.pop():,}")
else:
    title = "# Matcher-only work per core, P = %s" % ",".join(map(str, counts))
    header = ("| layout | P | core 0 subscriptions | core 0 events | core 0 match s "
              "(min–max) | events/s with P such cores | bound on speedup vs P=1 | "
              "core 0 index MB |")
    note = ("Each row is one core's share, timed alone; the throughput and speedup "
            "assume P cores do their shares in parallel with no interference, so "
            "they bound what P cores can reach. Partitioned: a shard of 1/P of the "
            "subscriptions still evaluates phase 1 (the predicate indexes) for "
            "every event, so its work does not shrink as 1/P. Reproduce: "
            "`bench/partition_work.sh`.")
lines = [title, "", "```", open(os.path.join(out, "meta.txt")).read().strip(), "```", "",
         header, "|---|---|---|---|---|---|---|---|", *rows, "", note, ""]
open(os.path.join(out, "report.md"), "w").write("\n".join(lines))
print("\n".join(lines))
PY
