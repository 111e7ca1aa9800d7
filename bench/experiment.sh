#!/usr/bin/env bash
# The StagedServer paper's publish/subscribe experiments, reproduced on the
# Fabret workload against cohortd on 127.0.0.1:
#
#   1. clients   response time and throughput vs closed-loop publishing
#                clients 1, 2, 4, 8, 16: staged vs --mode=threaded, and
#                which change bought what: the staged server as it was
#                (--index=sharded_phase1 --cohort_wait_us=100), with the
#                partitioned layout only (--cohort_wait_us=100), and as it
#                is (the defaults);
#   2. cohort    the cohort-limit sweep --cohort_max 1, 4, 10, 20, 64 and
#                unbounded (0) under a saturating load: throughput, latency
#                and the loss relative to unbounded;
#   3. locality  the index layouts side by side — partitioned (phase 1 once
#                per cohort), sharded_phase1 (an index per partition),
#                replicated (the whole index per stage) — vs threaded, and
#                how the partitioned server scales with partitions;
#   4. cache     simulated last-level cache misses and instructions per
#                published event (valgrind callgrind over
#                bench/locality_probe, instrumented only while one core
#                matches): partitioned (under each split of phase 1) and
#                sharded_phase1 with and without cohorts, replicated,
#                threaded.
#
#   bench/experiment.sh [--quick] [--only=1,2,3,4] [--reps=N] [--duration=S]
#       [--out=DIR] [--bin=DIR] [--server_cpus=LIST] [--client_cpus=LIST]
#       [--partitions=N] [--preset=NAME] [--no_report]
#
# --preset: the workload, fabret-1m (the default, the paper's) or events-1m
# (the typed application event bus of workload/typed_workload.h; it has no text
# file, so its checksum line says so instead of giving a SHA-256).
#
# --quick: 100k subscriptions, one 3 s repetition per point (under 5 minutes
# on 2 cores). Default: fabret-1m as defined (1M subscriptions, 100k events),
# three 10 s repetitions per point, interleaved across configurations so that
# drift hits them alike. Servers of one experiment run side by side (idle
# ones cost nothing) and are loaded once.
#
# Writes DIR (default results/<UTC date>[-quick][-N]/): meta.txt (machine,
# commit, workload checksum, flags), runs.csv and raw/ (one `cohort load`
# JSON per run, callgrind summaries), and, unless --no_report, the report
# from tools/experiment_report.py: report.md, one CSV per experiment and PNG
# plots (gnuplot).
#
# --bin=DIR runs prebuilt cohortd, cohort and locality_probe from DIR
# (for a machine without Bazel) instead of building; --server_cpus and
# --client_cpus run servers and load generators under `taskset -c LIST`.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
preset="fabret-1m"
only="1,2,3,4"
reps=""
duration=""
out=""
bin=""
server_cpus=""
client_cpus=""
partitions=0
report=1
for arg in "$@"; do
  case "${arg}" in
    --quick) quick=1 ;;
    --only=*) only="${arg#*=}" ;;
    --preset=*) preset="${arg#*=}" ;;
    --reps=*) reps="${arg#*=}" ;;
    --duration=*) duration="${arg#*=}" ;;
    --out=*) out="${arg#*=}" ;;
    --bin=*) bin="${arg#*=}" ;;
    --server_cpus=*) server_cpus="${arg#*=}" ;;
    --client_cpus=*) client_cpus="${arg#*=}" ;;
    --partitions=*) partitions="${arg#*=}" ;;
    --no_report) report=0 ;;
    -h | --help)
      sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "experiment.sh: unknown argument ${arg} (see --help)" >&2
      exit 2
      ;;
  esac
done
wants() { [[ ",${only}," == *",$1,"* ]]; }

if ((quick)); then
  subs=100000 events=20000 warmup=1
  : "${reps:=1}" "${duration:=3}"
  cg_subs=100000 cg_events=2000 cg_partitions=4
else
  subs=1000000 events=100000 warmup=2
  : "${reps:=3}" "${duration:=10}"
  cg_subs=1000000 cg_events=4000 cg_partitions=8
fi
# Callgrind's simulated core: 32 KB L1s and a 4 MB last-level cache, one
# core's share of the 32 MB L3 that 8 cores share on the EPYC CPUs here.
readonly CG_CACHES=(--I1=32768,8,64 --D1=32768,8,64 --LL=4194304,16,64)

if [[ -z "${bin}" ]]; then
  if wants 4 || ((report)); then
    tools/setup.sh experiment
  else
    tools/setup.sh
  fi
  bazel build -c opt //service:cohortd //client:cohort //bench:locality_probe
  readonly COHORTD=.bazel/out/k8-opt/bin/service/cohortd
  readonly COHORT=.bazel/out/k8-opt/bin/client/cohort
  readonly PROBE=.bazel/out/k8-opt/bin/bench/locality_probe
else
  readonly COHORTD="${bin}/cohortd" COHORT="${bin}/cohort"
  readonly PROBE="${bin}/locality_probe"
fi
server_run=()
client_run=()
[[ -n "${server_cpus}" ]] && server_run=(taskset -c "${server_cpus}")
[[ -n "${client_cpus}" ]] && client_run=(taskset -c "${client_cpus}")

if [[ -z "${out}" ]]; then
  out="results/$(date -u +%Y-%m-%d)"
  ((quick)) && out+="-quick"
  base="${out}" n=1
  while [[ -e "${out}" ]]; do
    n=$((n + 1))
    out="${base}-${n}"
  done
fi
mkdir -p "${out}/raw" "${out}/logs"
readonly OUT="${out}"
started=$(date +%s)
echo "experiment: writing ${OUT}"

# --- what ran where -------------------------------------------------------
workload=(--preset="${preset}" --subscriptions="${subs}" --events="${events}")
checksum() {  # prints the SHA-256 `cohort workload` reports for the knobs
  local file sum
  if [[ "${preset}" == events-1m ]]; then
    echo "none (typed preset, generated in memory)"
    return
  fi
  file=$(mktemp)
  sum=$("${COHORT}" workload --preset="${preset}" --subscriptions="$1" \
    --events="$2" --out="${file}" | sed -n 's/^sha256: //p')
  rm -f "${file}"
  echo "${sum}"
}
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "machine: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(nproc) usable CPUs of $(grep -c ^processor /proc/cpuinfo), $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), Linux $(uname -r)"
  # COHORT_COMMIT names the commit where the tree is a copy without .git.
  echo "commit: ${COHORT_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (modified)')}"
  echo "quick: ${quick}"
  echo "reps: ${reps}"
  echo "warmup_s: ${warmup}"
  echo "duration_s: ${duration}"
  echo "workload: ${preset} seed 1, ${subs} subscriptions, ${events} events, sha256 $(checksum "${subs}" "${events}")"
  if wants 4; then
    echo "cache_workload: ${preset} seed 1, ${cg_subs} subscriptions, ${cg_events} events, sha256 $(checksum "${cg_subs}" "${cg_events}")"
    echo "cache_model: callgrind ${CG_CACHES[*]}, each of ${cg_partitions} cores in turn"
  fi
  echo "server_cpus: ${server_cpus:-all}"
  echo "client_cpus: ${client_cpus:-all}"
} >"${OUT}/meta.txt"
echo "experiment,config,x,rep,file" >"${OUT}/runs.csv"
echo "config,flags" >"${OUT}/servers.csv"
echo "experiment,load_flags" >"${OUT}/loads.csv"

# --- servers --------------------------------------------------------------
declare -A port_of=()
server_pids=()
source tools/testing/cohortd.sh
stop_servers() {
  local pid
  # All signalled first, so that they shut down side by side.
  for pid in "${server_pids[@]}"; do kill -TERM "${pid}" 2>/dev/null || true; done
  for pid in "${server_pids[@]}"; do stop_cohortd "${pid}"; done
  server_pids=()
  port_of=()
}
trap stop_servers EXIT

# start_server NAME FLAGS...: starts cohortd with FLAGS on a free port and
# subscribes the workload.
start_server() {
  local name=$1 log="${OUT}/logs/$1.log" port=""
  shift
  local flags=("$@")
  if ((partitions > 0)) && [[ " ${flags[*]} " != *" --partitions="* ]]; then
    flags+=(--partitions="${partitions}" --threads="${partitions}")
  fi
  echo "${name},${flags[*]}" >>"${OUT}/servers.csv"
  start_cohortd "${log}" "${server_run[@]}" "${COHORTD}" \
    --listen=127.0.0.1:0 "${flags[@]}" || exit 1
  server_pids+=("${COHORTD_PID}")
  port=${COHORTD_PORT}
  port_of[${name}]=${port}
  echo "experiment: ${name} ($(head -1 "${log}")), subscribing ${subs}"
  "${client_run[@]}" "${COHORT}" load --server="127.0.0.1:${port}" "${workload[@]}" \
    --mode=none --out="${OUT}/raw/load_${name}.json" >"${OUT}/logs/load_${name}.log" 2>&1 ||
    { cat "${OUT}/logs/load_${name}.log" >&2; exit 1; }
}

# measure EXPERIMENT CONFIG X REP LOAD_FLAGS...: one publish run against
# server CONFIG, recorded in runs.csv.
measure() {
  local experiment=$1 config=$2 x=$3 rep=$4
  shift 4
  local file="raw/${experiment}_${config}_${x}_${rep}.json"
  "${client_run[@]}" "${COHORT}" load --server="127.0.0.1:${port_of[${config}]}" \
    "${workload[@]}" --skip_load --warmup="${warmup}" --duration="${duration}" \
    "$@" --out="${OUT}/${file}" >"${OUT}/logs/${experiment}_${config}_${x}_${rep}.log" 2>&1 ||
    { cat "${OUT}/logs/${experiment}_${config}_${x}_${rep}.log" >&2; exit 1; }
  echo "${experiment},${config},${x},${rep},${file}" >>"${OUT}/runs.csv"
  command -v python3 >/dev/null || return 0  # the progress line only
  python3 -c 'import json, sys
d = json.load(open(sys.argv[1])); l = d["latency_us"]
print("  %-26s %9.0f events/s  p50 %7.2f ms  p99 %7.2f ms" % (
    sys.argv[2], d["events_per_s"], l["p50"] / 1000, l["p99"] / 1000))' \
    "${OUT}/${file}" "${experiment} ${config} ${x} #${rep}"
}

# The saturating load of experiments 2 and 3: 4 streams, 32 events per
# request, 8 requests in flight each (1,024 events in flight).
readonly STREAM_LOAD=(--mode=stream --clients=4 --batch=32 --window=8)

# --- 1. clients -----------------------------------------------------------
if wants 1; then
  echo "== 1. response time vs clients: staged vs threaded"
  echo "clients,--mode=unary --batch=1 --clients=N (closed loop)" >>"${OUT}/loads.csv"
  start_server staged --mode=staged
  start_server staged_wait100 --mode=staged --cohort_wait_us=100
  start_server sharded_wait100 --mode=staged --index=sharded_phase1 \
    --cohort_wait_us=100
  start_server threaded --mode=threaded
  configs=(staged staged_wait100 sharded_wait100 threaded)
  for rep in $(seq "${reps}"); do
    for clients in 1 2 4 8 16; do
      # Rotate the order so that no server always goes first.
      order=()
      for ((i = 0; i < ${#configs[@]}; ++i)); do
        order+=("${configs[(i + rep) % ${#configs[@]}]}")
      done
      for config in "${order[@]}"; do
        measure clients "${config}" "${clients}" "${rep}" \
          --mode=unary --batch=1 --clients="${clients}"
      done
    done
  done
  stop_servers
fi

# --- 2. cohort limit ------------------------------------------------------
if wants 2; then
  echo "== 2. cohort limit sweep"
  echo "cohort,${STREAM_LOAD[*]}" >>"${OUT}/loads.csv"
  limits=(1 4 10 20 64 0)
  for limit in "${limits[@]}"; do
    start_server "c${limit}" --cohort_max="${limit}"
  done
  for rep in $(seq "${reps}"); do
    for limit in "${limits[@]}"; do
      measure cohort "c${limit}" "${limit}" "${rep}" "${STREAM_LOAD[@]}"
    done
  done
  stop_servers
fi

# --- 3. locality ----------------------------------------------------------
if wants 3; then
  echo "== 3. locality: partitioned vs replicated vs threaded; scaling"
  echo "locality,${STREAM_LOAD[*]} (stream) and --mode=unary --batch=1 --clients=16 (closed)" >>"${OUT}/loads.csv"
  echo "scaling,${STREAM_LOAD[*]}" >>"${OUT}/loads.csv"
  start_server partitioned --index=partitioned
  start_server sharded_phase1 --index=sharded_phase1
  start_server replicated --index=replicated
  start_server threaded --mode=threaded
  most=${partitions}
  ((most > 0)) || most=$(grep -oE '[0-9]+ partitions' "${OUT}/logs/partitioned.log" | head -1 | cut -d' ' -f1)
  counts=()
  for ((p = 1; p < most; p *= 2)); do counts+=("${p}"); done
  for p in "${counts[@]}"; do start_server "p${p}" --partitions="${p}"; done
  for rep in $(seq "${reps}"); do
    for config in partitioned sharded_phase1 replicated threaded; do
      measure locality "${config}" stream "${rep}" "${STREAM_LOAD[@]}"
      measure locality "${config}" closed16 "${rep}" --mode=unary --batch=1 --clients=16
    done
    for p in "${counts[@]}"; do
      measure scaling "p${p}" "${p}" "${rep}" "${STREAM_LOAD[@]}"
    done
    echo "scaling,partitioned,${most},${rep},raw/locality_partitioned_stream_${rep}.json" >>"${OUT}/runs.csv"
  done
  stop_servers
fi

# --- 4. simulated caches --------------------------------------------------
# One callgrind run per configuration: instrumentation (and so the cache
# simulation and the counts) is on only while the probe does the cores'
# matching, each core in turn from cold simulated caches (locality_probe
# --all_cores), so building the index costs nothing here and the counts are
# the whole machine's.
if wants 4; then
  echo "== 4. callgrind: ${cg_partitions} cores, ${cg_subs} subscriptions, ${cg_events} events"
  if ! command -v valgrind >/dev/null; then
    echo "experiment: valgrind is not installed; skipping experiment 4" >&2
  else
    jobs_max=$(nproc)
    # layout, cohort_max, phase-1 split (partitioned only)
    configs=("partitioned 64 tasks" "partitioned 64 cohorts"
             "partitioned 64 attributes" "partitioned 1 tasks"
             "sharded_phase1 64 -" "sharded_phase1 1 -" "replicated 64 -"
             "threaded 1 -")
    names=()
    for config in "${configs[@]}"; do
      read -r layout cohort split <<<"${config}"
      extra=(--all_cores)
      name="cache_${layout}_c${cohort}"
      if [[ "${split}" != - ]]; then
        extra+=(--phase1_split="${split}")
        name="cache_${layout}_${split}_c${cohort}"
      fi
      names+=("${name}")
      while (($(jobs -rp | wc -l) >= jobs_max)); do wait -n || true; done
      valgrind --tool=callgrind --cache-sim=yes --instr-atstart=no \
        "${CG_CACHES[@]}" --callgrind-out-file=/dev/null \
        "${PROBE}" --preset="${preset}" --subscriptions="${cg_subs}" \
        --events="${cg_events}" --partitions="${cg_partitions}" \
        --layout="${layout}" --cohort_max="${cohort}" "${extra[@]}" \
        >"${OUT}/raw/${name}.json" 2>"${OUT}/raw/${name}.callgrind" &
    done
    wait
    for i in "${!configs[@]}"; do
      read -r layout cohort split <<<"${configs[i]}"
      name=${names[i]}
      echo "cache,${name#cache_},${cohort},1,raw/${name}.json" >>"${OUT}/runs.csv"
      grep -q "LL misses" "${OUT}/raw/${name}.callgrind" ||
        { echo "experiment: callgrind failed:" >&2; cat "${OUT}/raw/${name}.callgrind" >&2; exit 1; }
    done
  fi
fi

echo "duration_total_s: $(($(date +%s) - started))" >>"${OUT}/meta.txt"
echo "experiment: done in $(($(date +%s) - started)) s"
if ((report)); then
  python3 tools/experiment_report.py "${OUT}"
fi
