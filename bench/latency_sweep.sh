#!/usr/bin/env bash
# Publish latency of cohortd on fabret-1m at fixed offered loads, for a few
# server configurations: single-event unary Publish calls in open loop (2
# clients), latency from the intended send time.
#
#   bench/latency_sweep.sh [--rates=900,1800,3600] [--duration_s=10]
#       [--config="--partitions=2 --cohort_wait_us=100" ...]
#       [--bin=DIR] [--baseline=DIR] [--out=DIR]
#
# Each --config starts one server (the flags are passed to cohortd), loads
# the subscriptions once, and measures every rate. A rate past what the
# server sustains measures its peak (the achieved column).
#
# --bin=DIR runs DIR/cohortd and DIR/cohort (a tools/bundle.sh bundle, or
# builds copied aside) instead of building them here. --baseline=DIR also
# runs an earlier build's cohortd (DIR/cohortd) with each config: both
# servers are up and loaded side by side, and at every rate the two are
# measured in turn (the order swapped from rate to rate), so that the
# machine's drift hits both alike; the summary's build column says which.
#
# Writes JSON per run and summary.md to DIR (default
# results/latency/<UTC time>/).
set -euo pipefail
cd "$(dirname "$0")/.."
rates="900,1800,3600"
duration=10
configs=()
bin=""
baseline=""
out=""
for arg in "$@"; do
  case "${arg}" in
    --rates=*) rates="${arg#*=}" ;;
    --duration_s=*) duration="${arg#*=}" ;;
    --config=*) configs+=("${arg#*=}") ;;
    --bin=*) bin="${arg#*=}" ;;
    --baseline=*) baseline="${arg#*=}" ;;
    --out=*) out="${arg#*=}" ;;
    *) echo "latency_sweep.sh: unknown argument ${arg}" >&2; exit 2 ;;
  esac
done
((${#configs[@]} > 0)) || configs=("--partitions=2" "--partitions=1")
if [[ -n "${baseline}" && ! -x "${baseline}/cohortd" ]]; then
  echo "latency_sweep.sh: --baseline: no ${baseline}/cohortd" >&2
  exit 2
fi

source tools/testing/cohortd.sh
cohort_binaries "${bin}" || exit 1
readonly OUT="${out:-results/latency/$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "${OUT}"
builds=(new)
[[ -n "${baseline}" ]] && builds=(baseline new)
declare -A port_of=()
server_pids=()
stop_servers() {
  local pid
  for pid in "${server_pids[@]}"; do stop_cohortd "${pid}"; done
  server_pids=()
}
trap stop_servers EXIT

{
  echo "| cohortd flags | build | offered events/s | achieved | p50 ms | p99 ms | max ms | errors |"
  echo "|---|---|---|---|---|---|---|---|"
} >"${OUT}/summary.md"
n=0
for config in "${configs[@]}"; do
  n=$((n + 1))
  for build in "${builds[@]}"; do
    server="${COHORTD_BIN}"
    [[ "${build}" == baseline ]] && server="${baseline}/cohortd"
    # shellcheck disable=SC2086  # ${config} holds several flags
    start_cohortd "${OUT}/cohortd_${n}_${build}.log" "${server}" \
      --listen=127.0.0.1:0 ${config} || exit 1
    server_pids+=("${COHORTD_PID}")
    port_of[${build}]=${COHORTD_PORT}
    "${COHORT_BIN}" load --server="127.0.0.1:${COHORTD_PORT}" \
      --preset=fabret-1m --mode=none >/dev/null
  done
  i=0
  for rate in ${rates//,/ }; do
    order=("${builds[@]}")
    if ((i % 2 == 1 && ${#builds[@]} == 2)); then order=(new baseline); fi
    i=$((i + 1))
    for build in "${order[@]}"; do
      json="${OUT}/config${n}_${build}_rate${rate}.json"
      "${COHORT_BIN}" load --server="127.0.0.1:${port_of[${build}]}" \
        --preset=fabret-1m --skip_load --mode=unary --batch=1 --clients=2 \
        --rate="${rate}" --warmup=2 --duration="${duration}" \
        --out="${json}" >/dev/null
      python3 - "${json}" "${config}" "${build}" "${rate}" \
        >>"${OUT}/summary.md" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
l = d["latency_us"]
errors = sum((d.get("errors") or {}).values())
print(f"| `{sys.argv[2]}` | {sys.argv[3]} | {sys.argv[4]} | "
      f"{d['events_per_s']:,.0f} | {l['p50'] / 1000:.2f} | "
      f"{l['p99'] / 1000:.2f} | {l['max'] / 1000:.2f} | {errors} |")
PY
    done
  done
  stop_servers
done
cat "${OUT}/summary.md"
