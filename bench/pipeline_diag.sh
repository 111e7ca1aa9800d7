#!/usr/bin/env bash
# Where the partitioned layout's threads spend their time (issue 17; the
# form of bench/reports/2026-11-27-xeon16-diagnosis): `locality_probe
# --threads` at each P of --partitions, its threads' time by part (waiting
# for work in the pipeline, forming cohorts, phase-1 tasks, phase 2,
# reporting work done), --reps repetitions interleaved; with --old_probe,
# an earlier build's probe at the largest P beside this one, for an A/B in
# one lease (a lent machine's speed can move within the hour); with --e2e,
# a short saturating stream against cohortd at the largest P, at one
# partition and threaded.
#
#   bench/pipeline_diag.sh [--bin=DIR] [--old_probe=PATH] [--partitions=LIST]
#                          [--reps=N] [--events=N] [--subscriptions=N]
#                          [--e2e] [--out=DIR]
#
# --bin: cohort, cohortd and locality_probe from DIR (a tools/bundle.sh
# bundle's bin/), else built here. Defaults: --partitions=1,8,16, --reps=3,
# --events=48000, fabret-1m's 1M subscriptions. Writes DIR (default
# results/pipeline-diag-<time>/): probe-*.json, e2e-*.json, and report.md,
# a table of each run's wall seconds, speedup over that repetition's P = 1
# and the threads' time by part. Exits non-zero if a run failed or the
# probes' matches differ.
set -uo pipefail
cd "$(dirname "$0")/.."
bin="" old="" counts="1,8,16" reps=3 events=48000 subs=-1 e2e=0 out=""
for arg in "$@"; do
  case "${arg}" in
    --bin=*) bin="${arg#*=}" ;;
    --old_probe=*) old="${arg#*=}" ;;
    --partitions=*) counts="${arg#*=}" ;;
    --reps=*) reps="${arg#*=}" ;;
    --events=*) events="${arg#*=}" ;;
    --subscriptions=*) subs="${arg#*=}" ;;
    --e2e) e2e=1 ;;
    --out=*) out="${arg#*=}" ;;
    *) echo "pipeline_diag.sh: unknown argument ${arg}" >&2; exit 2 ;;
  esac
done
source tools/testing/cohortd.sh
if [[ -z "${bin}" ]]; then
  tools/setup.sh || exit 1
  bazel build -c opt //service:cohortd //client:cohort //bench:locality_probe ||
    exit 1
  bin=.bazel/out/k8-opt/bin
  cohort="${bin}/client/cohort" cohortd="${bin}/service/cohortd"
  probe="${bin}/bench/locality_probe"
else
  cohort="${bin}/cohort" cohortd="${bin}/cohortd" probe="${bin}/locality_probe"
fi
out="${out:-results/pipeline-diag-$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "${out}"
workload=$(mktemp "${TMPDIR:-/tmp}/pipeline_diag.XXXXXX")
trap 'rm -f "${workload}"' EXIT
"${cohort}" workload --preset=fabret-1m --subscriptions="${subs}" \
  --events="${events}" --out="${workload}" >"${out}/workload.txt" || exit 1
most=${counts##*,}
status=0
# run NAME PROBE P: one probe run into probe-NAME.json.
run() {
  "$2" --workload="${workload}" --layout=partitioned --cohort_max=64 \
    --threads --partitions="$3" >"${out}/probe-$1.json" ||
    { echo "pipeline_diag.sh: ${1} failed" >&2; status=1; }
}
for rep in $(seq "${reps}"); do
  for p in ${counts//,/ }; do run "p${p}-r${rep}" "${probe}" "${p}"; done
  [[ -n "${old}" ]] && run "old-p${most}-r${rep}" "${old}" "${most}"
done
if ((e2e)); then
  declare -A port pid
  for server in "p${most}" p1 threaded; do
    case "${server}" in
      threaded) flags=(--mode=threaded --partitions="${most}" --threads="${most}") ;;
      *) flags=(--partitions="${server#p}" --threads="${server#p}") ;;
    esac
    start_cohortd "${out}/${server}.log" "${cohortd}" --listen=127.0.0.1:0 \
      "${flags[@]}" || { status=1; continue; }
    port[${server}]=${COHORTD_PORT} pid[${server}]=${COHORTD_PID}
    "${cohort}" load --server="127.0.0.1:${COHORTD_PORT}" --preset=fabret-1m \
      --subscriptions="${subs}" --events=100000 --mode=none >/dev/null 2>&1 ||
      status=1
  done
  for rep in $(seq "${reps}"); do
    for server in "${!port[@]}"; do
      "${cohort}" load --server="127.0.0.1:${port[${server}]}" \
        --preset=fabret-1m --subscriptions="${subs}" --events=100000 \
        --skip_load --warmup=1 --duration=3 --mode=stream --clients=4 \
        --batch=32 --window=8 --out="${out}/e2e-${server}-${rep}.json" \
        >/dev/null 2>&1 || status=1
    done
  done
  for server in "${!pid[@]}"; do stop_cohortd "${pid[${server}]}"; done
fi
python3 - "${out}" <<'PY' || status=1
import glob, json, os, re, statistics, sys
out = sys.argv[1]
parts = ("next", "form", "task", "match", "report")
runs, p1 = [], {}
for f in sorted(glob.glob(os.path.join(out, "probe-*.json"))):
    d = json.load(open(f))
    name = os.path.basename(f)[6:-5]
    rep = name.rsplit("-r", 1)[1]
    runs.append((name, rep, d))
    if name.startswith("p1-"):
        p1[rep] = d["match_seconds"]
lines = ["# Where the partitioned layout's threads spend their time", "",
         "| run | wall s | vs that rep's P = 1 | threads x wall s | "
         + " | ".join(parts) + " |", "|---" * (4 + len(parts)) + "|"]
for name, rep, d in sorted(runs, key=lambda r: (r[1], r[2]["partitions"], r[0])):
    total = sum(d["thread_seconds_" + p] for p in parts) or 1
    speed = (f"{p1[rep] / d['match_seconds']:.2f}x" if rep in p1 else "-")
    lines.append(f"| {name} | {d['match_seconds']:.3f} | {speed} | "
                 f"{d['partitions'] * d['match_seconds']:.2f} | "
                 + " | ".join(f"{100 * d['thread_seconds_' + p] / total:.1f}%"
                              for p in parts) + " |")
e2e = {}
for f in glob.glob(os.path.join(out, "e2e-*.json")):
    server = os.path.basename(f)[4:-5].rsplit("-", 1)[0]
    e2e.setdefault(server, []).append(json.load(open(f))["events_per_s"])
if e2e:
    lines += ["", "| server (stream) | events/s, median (min-max) |", "|---|---|"]
    for server, v in sorted(e2e.items()):
        lines.append(f"| {server} | {statistics.median(v):,.0f} "
                     f"({min(v):,.0f}-{max(v):,.0f}) |")
matches = {d["matches"] for _, _, d in runs}
lines += ["", f"Matches in every probe run: {', '.join(f'{m:,}' for m in sorted(matches))}."]
open(os.path.join(out, "report.md"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
sys.exit(len(matches) != 1)
PY
exit "${status}"
