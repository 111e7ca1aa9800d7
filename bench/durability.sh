#!/usr/bin/env bash
# What --data_dir costs and how fast it recovers (issue #5's report).
#
#   bench/durability.sh [--quick] [--reps=N] [--out=DIR] [--bin=DIR]
#
# 1. subscribe: `cohort load --mode=none` subscribes the fabret-1m
#    subscriptions into a fresh server without a journal, with
#    --fsync=none and with --fsync=always; two request shapes: the loader's
#    default (5000 subscriptions per request, 4 in flight) and small
#    requests (10 per request, 16 in flight), where the journal's group
#    commit has many records to gather. Subscriptions/s per run.
# 2. groups: one subscription per request and 1, 2, 4, ... 64 requests in
#    flight (concurrent subscribers) with --fsync=always: subscriptions/s,
#    and the journal stage's mean group size and group write+sync time
#    (GetStats: stage "journal").
# 3. recovery: after loading the subscriptions with --fsync=always, the
#    server is killed (SIGKILL: recovery replays the journal) or stopped
#    (SIGTERM: it writes a snapshot; recovery reads it), then restarted: the
#    time cohortd reports in its "recovered" line, the wall time from start
#    to serving, and the RSS after recovery.
# Repetitions are interleaved across configurations. Output in
# results/durability-<UTC time>[-quick]/ (or --out): report.md, the CSVs
# (median, min, max) and every server log and load JSON. --quick: 100k
# subscriptions, 1 repetition, shorter group runs.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
reps=3
out=""
bin=""
for arg in "$@"; do
  case "${arg}" in
    --quick) quick=1 ;;
    --reps=*) reps="${arg#*=}" ;;
    --out=*) out="${arg#*=}" ;;
    --bin=*) bin="${arg#*=}" ;;
    *) echo "durability.sh: unknown argument ${arg}" >&2; exit 2 ;;
  esac
done
if ((quick)); then
  subs=100000; group_subs=2000; small_subs=20000
  [[ "${reps}" == 3 ]] && reps=1
else
  subs=1000000; group_subs=20000; small_subs=100000
fi
source tools/testing/cohortd.sh
cohort_binaries "${bin}" || exit 1
cohortd=${COHORTD_BIN}
cohort=${COHORT_BIN}
if [[ -z "${out}" ]]; then
  out="results/durability-$(date -u +%Y%m%dT%H%M%SZ)$( ((quick)) && echo -quick)"
fi
mkdir -p "${out}/runs"
out=$(cd "${out}" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/durability.XXXXXX")
server_pid=""
cleanup() {
  [[ -n "${server_pid}" ]] && kill -9 "${server_pid}" 2>/dev/null
  rm -rf "${work}"
}
trap cleanup EXIT

"${cohort}" workload --preset=fabret-1m --subscriptions="${subs}" --events=100 \
  --out="${work}/workload" >/dev/null
"${cohort}" workload --preset=fabret-1m --subscriptions="${small_subs}" \
  --events=100 --out="${work}/workload_small" >/dev/null
"${cohort}" workload --preset=fabret-1m --subscriptions="${group_subs}" \
  --events=100 --out="${work}/workload_groups" >/dev/null
{
  echo "date: $(date -u +%FT%TZ)"
  echo "machine: $(nproc) CPUs, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
  echo "data dir filesystem: $(df -T "${work}" | awk 'NR == 2 {print $2 " on " $1}')"
  echo "subscriptions: ${subs} (small requests ${small_subs}, groups ${group_subs}); reps: ${reps}"
  echo "cohortd: ${cohortd} (default flags, --listen=127.0.0.1:0)"
} >"${out}/meta.txt"

# start NAME FLAGS...: a server with its log in runs/NAME.log.
start() {
  local name=$1
  shift
  start_cohortd "${out}/runs/${name}.log" "${cohortd}" --listen=127.0.0.1:0 "$@"
  server_pid="${COHORTD_PID}"
}
stop() {
  stop_cohortd "${server_pid}"
  server_pid=""
}
journal_flags() {  # MODE DIR
  case "$1" in
    off) ;;
    none|always) echo "--data_dir=$2 --fsync=$1" ;;
  esac
}

# 1. subscribe throughput.
for rep in $(seq "${reps}"); do
  for shape in default small; do
    for mode in off none always; do
      name="subscribe-${shape}-${mode}-${rep}"
      echo "==> ${name}"
      rm -rf "${work}/data"
      # shellcheck disable=SC2046  # journal_flags prints separate flags
      start "${name}" $(journal_flags "${mode}" "${work}/data")
      if [[ "${shape}" == default ]]; then
        load=(--workload="${work}/workload")
      else
        load=(--workload="${work}/workload_small" --subscribe_batch=10
          --subscribe_in_flight=16)
      fi
      "${cohort}" load --server="127.0.0.1:${COHORTD_PORT}" "${load[@]}" \
        --mode=none --out="${out}/runs/${name}.json" >/dev/null
      "${cohort}" stats --server="127.0.0.1:${COHORTD_PORT}" --json \
        >"${out}/runs/${name}.stats.json"
      stop
    done
  done
done

# 2. group size against concurrent subscribers.
for rep in $(seq "${reps}"); do
  for in_flight in 1 2 4 8 16 32 64; do
    name="groups-${in_flight}-${rep}"
    echo "==> ${name}"
    rm -rf "${work}/data"
    start "${name}" --data_dir="${work}/data" --fsync=always
    "${cohort}" load --server="127.0.0.1:${COHORTD_PORT}" \
      --workload="${work}/workload_groups" --subscribe_batch=1 \
      --subscribe_in_flight="${in_flight}" --mode=none \
      --out="${out}/runs/${name}.json" >/dev/null
    "${cohort}" stats --server="127.0.0.1:${COHORTD_PORT}" --json \
      >"${out}/runs/${name}.stats.json"
    stop
  done
done

# 3. recovery.
for rep in $(seq "${reps}"); do
  for how in journal snapshot; do
    name="recovery-${how}-${rep}"
    echo "==> ${name}"
    rm -rf "${work}/data"
    start "${name}-load" --data_dir="${work}/data" --fsync=always
    "${cohort}" load --server="127.0.0.1:${COHORTD_PORT}" \
      --workload="${work}/workload" --mode=none >/dev/null
    if [[ "${how}" == journal ]]; then
      kill -9 "${server_pid}"
      wait "${server_pid}" 2>/dev/null || true
      server_pid=""
    else
      stop
    fi
    du -sb "${work}/data" | cut -f1 >"${out}/runs/${name}.bytes"
    started=$(date +%s.%N)
    start "${name}" --data_dir="${work}/data"
    serving=$(date +%s.%N)
    echo "${started} ${serving}" >"${out}/runs/${name}.wall"
    ps -o rss= -p "${server_pid}" >"${out}/runs/${name}.rss"
    stop
  done
done

python3 - "${out}" <<'PY'
import glob, json, os, re, statistics, sys
out = sys.argv[1]
runs = os.path.join(out, "runs")

def spread(values):
    return statistics.median(values), min(values), max(values)

def fmt(values, digits=0):
    m, lo, hi = spread(values)
    return f"{m:,.{digits}f} ({lo:,.{digits}f}–{hi:,.{digits}f})"

def journal_stage(path):
    stats = json.load(open(path))
    for stage in stats.get("stages", []):
        if stage.get("stage") == "journal":
            return stage
    return None

lines = ["# Durability: subscribe cost, group commit, recovery", ""]
lines += ["```", open(os.path.join(out, "meta.txt")).read().strip(), "```", ""]
lines += ["Medians over the repetitions, (min–max) in brackets. Reproduce with "
          "`bench/durability.sh` (`--quick` for the small version).", ""]

# 1.
lines += ["## 1. Subscribe throughput, journal off / --fsync=none / --fsync=always", "",
          "| requests | off | none | always | always / off |", "|---|---|---|---|---|"]
csv = ["shape,mode,median,min,max"]
for shape, label in [("default", "5000 subs/request, 4 in flight"),
                     ("small", "10 subs/request, 16 in flight")]:
    row, med = [], {}
    for mode in ["off", "none", "always"]:
        vals = [json.load(open(f))["load"]["subscriptions_per_s"]
                for f in sorted(glob.glob(f"{runs}/subscribe-{shape}-{mode}-*[0-9].json"))]
        med[mode] = statistics.median(vals)
        row.append(fmt(vals))
        csv.append(f"{shape},{mode},{','.join(str(v) for v in spread(vals))}")
    lines.append(f"| {label} | " + " | ".join(row) +
                 f" | {med['always'] / med['off']:.2f} |")
open(os.path.join(out, "subscribe.csv"), "w").write("\n".join(csv) + "\n")
lines += ["", "Subscriptions per second (`cohort load --mode=none`).", ""]

# 2.
lines += ["## 2. Group commit against concurrent subscribers (--fsync=always, "
          "1 subscription per request)", "",
          "| requests in flight | subscriptions/s | mean group (records) | max group | group write+fdatasync p50 µs |",
          "|---|---|---|---|---|"]
csv = ["in_flight,subs_per_s_median,subs_per_s_min,subs_per_s_max,group_mean_median,group_max,sync_p50_us_median"]
for n in [1, 2, 4, 8, 16, 32, 64]:
    rates, groups, maxes, syncs = [], [], [], []
    for f in sorted(glob.glob(f"{runs}/groups-{n}-*[0-9].json")):
        rates.append(json.load(open(f))["load"]["subscriptions_per_s"])
        stage = journal_stage(f.replace(".json", ".stats.json"))
        batches = int(stage.get("batches", 0))
        updates = int(stage.get("updates", 0))
        groups.append(updates / batches if batches else 0)
        buckets = [int(b["upperBound"]) for b in stage.get("batchSizes", [])
                   if int(b.get("count", 0)) > 0]
        maxes.append(max(buckets) if buckets else 0)
        syncs.append(stage.get("service", {}).get("p50Us", 0))
    lines.append(f"| {n} | {fmt(rates)} | {fmt(groups, 2)} | ≤{max(maxes)} | {fmt(syncs)} |")
    csv.append(",".join(str(x) for x in [n, *spread(rates), statistics.median(groups),
                                         max(maxes), statistics.median(syncs)]))
open(os.path.join(out, "groups.csv"), "w").write("\n".join(csv) + "\n")
lines += ["", "A group is the records written with one write and made durable with "
          "one fdatasync (the journal stage's batches); its size counts records "
          "(one per Subscribe request, plus a record per new name). Max group is "
          "the upper bound of the largest non-empty histogram bucket.", ""]

# 3.
lines += ["## 3. Recovery", "",
          "| from | data dir MB | recovery (cohortd's line) s | start to serving s | RSS after MB |",
          "|---|---|---|---|---|"]
csv = ["from,recovery_s_median,recovery_s_min,recovery_s_max,wall_s_median,rss_mb_median,dir_mb"]
for how in ["journal", "snapshot"]:
    rec, wall, rss, size, count = [], [], [], [], set()
    for log in sorted(glob.glob(f"{runs}/recovery-{how}-[0-9]*.log")):
        if log.endswith("-load.log"):
            continue
        text = open(log).read()
        m = re.search(r"recovered (\d+) subscriptions from \S+ in ([0-9.]+) s", text)
        count.add(int(m.group(1)))
        rec.append(float(m.group(2)))
        base = log[:-4]
        a, b = map(float, open(base + ".wall").read().split())
        wall.append(b - a)
        rss.append(int(open(base + ".rss").read()) / 1024)
        size.append(int(open(base + ".bytes").read()) / 1e6)
    lines.append(f"| {how} ({'/'.join(map(str, sorted(count)))} subscriptions) | "
                 f"{fmt(size)} | {fmt(rec, 2)} | {fmt(wall, 2)} | {fmt(rss)} |")
    csv.append(",".join(str(x) for x in [how, *spread(rec), statistics.median(wall),
                                         statistics.median(rss), statistics.median(size)]))
open(os.path.join(out, "recovery.csv"), "w").write("\n".join(csv) + "\n")
lines += ["", "journal: SIGKILL after loading, so recovery replays the journal; "
          "snapshot: SIGTERM, so the clean shutdown folded it into a snapshot. "
          "Start to serving includes process start and waiting for the log line "
          "(polled every 0.1 s).", ""]
open(os.path.join(out, "report.md"), "w").write("\n".join(lines))
print("\n".join(lines))
PY
echo "durability: report in ${out}/report.md"
