#!/usr/bin/env bash
# Overload and slow consumers (SEDA's lesson, issue 6): publishes at
# --factor (3) times the measured capacity for --duration seconds while some
# listeners read slowly or not at all, and checks that cohortd conditions the
# load instead of collapsing.
#
#   bench/overload.sh [--quick] [--slow_listener=drop|disconnect]
#       [--factor=3] [--duration=20] [--no_listeners] [--no_target]
#       [--bin=DIR] [--out=DIR]
#
# The server and the clients run on disjoint CPUs (taskset: the first half
# for cohortd, with one partition per CPU, the second half for the load
# generator and the listeners), so that publishing at 3x does not take CPU
# from the server it overloads: that would measure the generator.
#
# Phases (one server for A and B, a fresh one for C and D):
#   A. capacity: closed-loop unary Publish of --batch (16) events from 8
#      clients, 3 runs: C = the median events/s.
#   B. unloaded latency: open loop at 10% of C: U = its p99.
#   C. overload: cohortd restarted with --queue_limit = C x U (rounded down to
#      whole requests, at least one) and --latency_target_us = U / 2. The
#      fixed limit bounds memory, and latency only at throughput C (Little's
#      law); under overload the server drains slower than C (smaller
#      cohorts, the listeners, the rejections), so the limit also adapts to
#      the target (service/stages/admission.h). The target is what the fastest
#      answers of each 100 ms must meet inside the server, so the p99 lands
#      at a few times it: U / 2 aims the p99 at 2 x U. --no_target leaves
#      the fixed limit alone.
#      --max_concurrent_streams=32 bounds the calls each connection holds
#      open in the server, those waiting for a handler and those whose
#      answers wait for a client that reads late.
#      Listeners: 2 reading normally, 2 slow (SIGSTOP/SIGCONT, 90% of the
#      time stopped), 2 stopped (SIGSTOP), each --listener_queue_limit=1024.
#      With them attached, and before the overload, this server gives
#        Ul, the unloaded p99 of this configuration (open loop at 10% of C,
#           as in B): delivering to the listeners costs server CPU, so
#           comparing the overload, which has them, with U, which has not,
#           would charge that cost to the overload; both ratios are shown;
#        Cq, the capacity of this configuration (closed loop; recovery runs
#           with the listeners too).
#      Then open loop at factor x C.
#   D. recovery: right after C, a closed-loop run and an open-loop run at 10%
#      of C, without warm-up.
# Pass criteria, each printed as PASS/FAIL and in summary.md:
#   server up           cohortd still runs and answers GetStats;
#   memory bound        RSS growth during C stays under the bound derived
#                       from the queue limits (see overload_report.py);
#   admitted p99        C's p99 over answered requests <= 2 x Ul;
#   rejections          every failed request is RESOURCE_EXHAUSTED, none
#                       unanswered;
#   slow listeners      dropped deliveries (drop) or >= 2 disconnected
#                       listeners (disconnect) were counted from the
#                       listeners' start, and publishers kept C's goodput
#                       >= 50% of Cq;
#   recovery            D's closed-loop throughput >= 80% of Cq and its
#                       open-loop p99 <= 2 x Ul.
# With --no_listeners, Ul is U.
# Output: results/overload/<UTC time>/ (JSON per run, stats, rss.csv,
# summary.md); the last line is "overload: N passed, M failed"; exit 1 if
# any failed. --quick: 100k subscriptions, 8 s of overload.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
listeners=6
policy=drop
factor=3
duration=20
target=1
readonly LISTENER_QUEUE_LIMIT=1024
readonly MAX_CONCURRENT_STREAMS=32
bin=""
out=""
readonly BATCH=16
for arg in "$@"; do
  case "${arg}" in
    --quick) quick=1 ;;
    --no_listeners) listeners=0 ;;
    --no_target) target=0 ;;
    --slow_listener=*) policy="${arg#*=}" ;;
    --factor=*) factor="${arg#*=}" ;;
    --duration=*) duration="${arg#*=}" ;;
    --bin=*) bin="${arg#*=}" ;;
    --out=*) out="${arg#*=}" ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "overload.sh: unknown argument ${arg}" >&2; exit 2 ;;
  esac
done
case "${policy}" in
  drop | disconnect) ;;
  *) echo "overload.sh: --slow_listener must be drop or disconnect" >&2; exit 2 ;;
esac
subs=-1
run_s=5
if ((quick)); then
  subs=100000
  run_s=3
  ((duration > 8)) && duration=8
fi

ncpu=$(nproc)
if ((ncpu < 2)); then
  echo "overload.sh: needs at least 2 CPUs (server and clients apart)" >&2
  exit 2
fi
server_cpus="0-$((ncpu / 2 - 1))"
client_cpus="$((ncpu / 2))-$((ncpu - 1))"
partitions=$((ncpu / 2))

source tools/testing/cohortd.sh
cohort_binaries "${bin}" || exit 1
cohortd=${COHORTD_BIN}
cohort=${COHORT_BIN}
[[ -n "${out}" ]] || out="results/overload/$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "${out}"
echo "overload.sh: writing ${out}"

server_pid=""
listener_pids=()
duty_pid=""
rss_pid=""
cleanup() {
  [[ -n "${duty_pid}" ]] && kill "${duty_pid}" 2>/dev/null || true
  [[ -n "${rss_pid}" ]] && kill "${rss_pid}" 2>/dev/null || true
  for pid in "${listener_pids[@]}"; do
    kill -CONT "${pid}" 2>/dev/null || true
    kill "${pid}" 2>/dev/null || true
  done
  listener_pids=()
  if [[ -n "${server_pid}" ]]; then
    stop_cohortd "${server_pid}"
    server_pid=""
  fi
}
trap cleanup EXIT

start_server() {  # start_server LOG [FLAGS...]
  local log=$1
  shift
  start_cohortd "${log}" taskset -c "${server_cpus}" "${cohortd}" \
    --listen=127.0.0.1:0 --partitions="${partitions}" \
    --slow_listener="${policy}" --listener_queue_limit="${LISTENER_QUEUE_LIMIT}" \
    "$@" || exit 1
  server_pid=${COHORTD_PID}
  port=${COHORTD_PORT}
  taskset -c "${client_cpus}" "${cohort}" load --server="127.0.0.1:${port}" --preset=fabret-1m \
    --subscriptions="${subs}" --mode=none --out="${out}/subscribe_$(basename "${log}" .log).json" \
    >/dev/null
}

load() {  # load OUT.json [FLAGS...]: publish against the loaded server
  local file=$1
  shift
  taskset -c "${client_cpus}" "${cohort}" load --server="127.0.0.1:${port}" \
    --preset=fabret-1m --subscriptions="${subs}" --skip_load --mode=unary --batch="${BATCH}" \
    --out="${out}/${file}" "$@" >/dev/null
}

field() {  # field FILE KEY...: a value from a JSON report
  python3 -c 'import json,sys
v=json.load(open(sys.argv[1]))
for k in sys.argv[2:]: v=v[k]
print(v)' "${out}/$1" "${@:2}"
}

echo "==> A. capacity (closed loop, ${BATCH}-event requests, 8 clients)"
start_server "${out}/cohortd_a.log"
for run in 1 2 3; do
  load "capacity_${run}.json" --clients=8 --duration="${run_s}" --warmup=1
done
capacity=$(python3 -c 'import json,statistics,sys
print(int(statistics.median(json.load(open(f))["events_per_s"] for f in sys.argv[1:])))' \
  "${out}"/capacity_*.json)
echo "capacity ${capacity} events/s"

echo "==> B. unloaded latency (open loop at 10% of capacity)"
load unloaded.json --clients=2 --rate=$((capacity / 10)) --duration=$((run_s * 2)) \
  --warmup=1
unloaded_p99=$(field unloaded.json latency_us p99)
echo "unloaded p99 ${unloaded_p99} us"
stop_cohortd "${server_pid}"
server_pid=""

queue_limit=$(python3 -c "import sys
c,u,b=float(sys.argv[1]),float(sys.argv[2]),int(sys.argv[3])
print(max(b, int(c*u/1e6)//b*b))" "${capacity}" "${unloaded_p99}" "${BATCH}")
target_us=0
((target)) && target_us=$(python3 -c "print(int(float('${unloaded_p99}') / 2))")
echo "==> C. overload at ${factor}x capacity, --queue_limit=${queue_limit}," \
  "--latency_target_us=${target_us}, --slow_listener=${policy}"
start_server "${out}/cohortd_c.log" --queue_limit="${queue_limit}" \
  --latency_target_us="${target_us}" --max_concurrent_streams="${MAX_CONCURRENT_STREAMS}"
# Subscribers s0..s999 each hold ~1/1000 of the subscriptions, so each is
# matched by most events.
for ((s = 1; s <= listeners; ++s)); do
  taskset -c "${client_cpus}" "${cohort}" listen --server="127.0.0.1:${port}" --subscriber="s${s}" \
    >/dev/null 2>"${out}/listener_${s}.err" &
  listener_pids+=($!)
done
for _ in $(seq 100); do
  n=$("${cohort}" stats --server="127.0.0.1:${port}" --json |
    python3 -c 'import json,sys; print(json.load(sys.stdin).get("listeners",0))')
  [[ "${n}" == "${listeners}" ]] && break
  sleep 0.1
done
if ((listeners > 0)); then
  slow=("${listener_pids[2]}" "${listener_pids[3]}")
  stopped=("${listener_pids[4]}" "${listener_pids[5]}")
  kill -STOP "${stopped[@]}"
  (
    while true; do
      kill -STOP "${slow[@]}" 2>/dev/null || exit 0
      sleep 0.09
      kill -CONT "${slow[@]}" 2>/dev/null || exit 0
      sleep 0.01
    done
  ) &
  duty_pid=$!
fi
"${cohort}" stats --server="127.0.0.1:${port}" --json >"${out}/stats_before.json"
if ((listeners > 0)); then
  load unloaded_listeners.json --clients=2 --rate=$((capacity / 10)) \
    --duration=$((run_s * 2)) --warmup=1
fi
# Capacity again in this configuration (the queue limits, the target, the
# listeners): the baseline for goodput under overload and for recovery.
load capacity_q.json --clients=8 --duration="${run_s}" --warmup=1
(
  echo "t_s,rss_kib"
  while kill -0 "${server_pid}" 2>/dev/null; do
    rss=$(awk '/^VmRSS/ {print $2}' "/proc/${server_pid}/status" 2>/dev/null || true)
    [[ -n "${rss}" ]] && echo "$(date +%s.%N),${rss}"
    sleep 0.25
  done
) >"${out}/rss.csv" &
rss_pid=$!
load overload.json --clients=4 --rate=$((capacity * factor)) \
  --duration="${duration}" --warmup=1
kill "${rss_pid}" 2>/dev/null || true
wait "${rss_pid}" 2>/dev/null || true
rss_pid=""
"${cohort}" stats --server="127.0.0.1:${port}" --json >"${out}/stats_overload.json"

echo "==> D. recovery"
load recovery_closed.json --clients=8 --duration="${run_s}" --warmup=0
load recovery_open.json --clients=2 --rate=$((capacity / 10)) \
  --duration="${run_s}" --warmup=0
kill "${duty_pid}" 2>/dev/null || true
wait "${duty_pid}" 2>/dev/null || true
duty_pid=""
up=0
if kill -0 "${server_pid}" 2>/dev/null &&
  "${cohort}" stats --server="127.0.0.1:${port}" --json >"${out}/stats_after.json"; then
  up=1
fi
python3 tools/overload_report.py "${out}" --capacity="${capacity}" \
  --unloaded_p99="${unloaded_p99}" --queue_limit="${queue_limit}" \
  --latency_target_us="${target_us}" --max_concurrent_streams="${MAX_CONCURRENT_STREAMS}" \
  --listener_queue_limit="${LISTENER_QUEUE_LIMIT}" --listeners="${listeners}" \
  --policy="${policy}" --factor="${factor}" --server_up="${up}" |
  tee "${out}/summary.md"
tail -n 1 "${out}/summary.md" | grep -q ' 0 failed$'
