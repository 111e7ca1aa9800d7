#!/usr/bin/env bash
# Publish latency of cohortd on fabret-1m at fixed offered loads, for a few
# server configurations: single-event unary Publish calls in open loop (2
# clients), latency from the intended send time.
#
#   bench/latency_sweep.sh [--rates=900,1800,3600] [--duration_s=10]
#       [--config="--partitions=2 --cohort_wait_us=100" ...]
#
# Each --config starts one server (the flags are passed to cohortd), loads
# the subscriptions once, and measures every rate. Writes JSON per run and
# summary.md to results/latency/<UTC time>/.
set -euo pipefail
cd "$(dirname "$0")/.."
rates="900,1800,3600"
duration=10
configs=()
for arg in "$@"; do
  case "${arg}" in
    --rates=*) rates="${arg#*=}" ;;
    --duration_s=*) duration="${arg#*=}" ;;
    --config=*) configs+=("${arg#*=}") ;;
    *) echo "latency_sweep.sh: unknown argument ${arg}" >&2; exit 2 ;;
  esac
done
((${#configs[@]} > 0)) || configs=("--partitions=2" "--partitions=1")

tools/setup.sh
bazel build -c opt //service:cohortd //client:cohort
readonly BIN=.bazel/out/k8-opt/bin
readonly OUT="results/latency/$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "${OUT}"
source tools/testing/cohortd.sh
port=""
server_pid=""
stop_server() {
  if [[ -n "${server_pid}" ]]; then
    stop_cohortd "${server_pid}"
    server_pid=""
  fi
}
trap stop_server EXIT

echo "| cohortd flags | offered events/s | achieved | p50 ms | p99 ms | max ms | errors |" >"${OUT}/summary.md"
echo "|---|---|---|---|---|---|---|" >>"${OUT}/summary.md"
n=0
for config in "${configs[@]}"; do
  n=$((n + 1))
  # shellcheck disable=SC2086  # ${config} holds several flags
  start_cohortd "${OUT}/cohortd_${n}.log" "${BIN}/service/cohortd" \
    --listen=127.0.0.1:0 ${config} || exit 1
  server_pid=${COHORTD_PID}
  port=${COHORTD_PORT}
  "${BIN}/client/cohort" load --server="127.0.0.1:${port}" --preset=fabret-1m \
    --mode=none >/dev/null
  for rate in ${rates//,/ }; do
    json="${OUT}/config${n}_rate${rate}.json"
    "${BIN}/client/cohort" load --server="127.0.0.1:${port}" --preset=fabret-1m \
      --skip_load --mode=unary --batch=1 --clients=2 --rate="${rate}" \
      --warmup=2 --duration="${duration}" --out="${json}" >/dev/null
    python3 - "${json}" "${config}" "${rate}" >>"${OUT}/summary.md" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
l = d["latency_us"]
errors = sum((d.get("errors") or {}).values())
print(f"| `{sys.argv[2]}` | {sys.argv[3]} | {d['events_per_s']:,.0f} | "
      f"{l['p50'] / 1000:.2f} | {l['p99'] / 1000:.2f} | {l['max'] / 1000:.2f} | {errors} |")
PY
  done
  stop_server
done
cat "${OUT}/summary.md"
