#!/usr/bin/env bash
# End-to-end measurement of cohortd on the Fabret workload (issue #3's
# report): the matcher alone vs the server, staged vs threaded.
#
#   bench/service_bench.sh [--quick] [--partitions=N] [--extra="--flag=v ..."]
#
# For each mode (staged, threaded) it starts cohortd on 127.0.0.1, loads the
# subscriptions with `cohort load`, measures PublishStream throughput three
# times (batches of 64 events, 4 requests in flight), then the latency of
# single-event unary Publish calls in open loop at 50% and 80% of the
# median stream throughput. The matcher benchmark runs first, on the same
# machine, in the same invocation. Results (JSON per run, summary.md) go to
# results/service/<UTC time>/. --quick uses 100k subscriptions and short runs.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
partitions=0
extra=""
for arg in "$@"; do
  case "${arg}" in
    --quick) quick=1 ;;
    --partitions=*) partitions="${arg#*=}" ;;
    --extra=*) extra="${arg#*=}" ;;
    *) echo "service_bench.sh: unknown argument ${arg}" >&2; exit 2 ;;
  esac
done
if ((quick)); then
  subs=100000; events=20000; duration=5; matcher_events=5000
else
  subs=-1; events=-1; duration=15; matcher_events=20000
fi

tools/setup.sh
bazel build -c opt //service:cohortd //client:cohort //bench:matcher_bench
readonly BIN=.bazel/out/k8-opt/bin
readonly OUT="results/service/$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "${OUT}"
load=("${BIN}/client/cohort" load --preset=fabret-1m --subscriptions="${subs}"
  --events="${events}" --warmup=2)

echo "==> matcher alone"
"${BIN}/bench/matcher_bench" --preset=fabret-1m --subscriptions="${subs}" \
  --events="${matcher_events}" --cohort_max=1,64 --repetitions=3 \
  --format=json >"${OUT}/matcher.json"

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

for mode in staged threaded; do
  echo "==> ${mode}"
  # shellcheck disable=SC2086  # ${extra} holds several flags
  start_cohortd "${OUT}/${mode}_cohortd.log" "${BIN}/service/cohortd" \
    --listen=127.0.0.1:0 --mode="${mode}" --partitions="${partitions}" \
    ${extra} || exit 1
  server_pid=${COHORTD_PID}
  port=${COHORTD_PORT}
  "${load[@]}" --server="127.0.0.1:${port}" --mode=none \
    --out="${OUT}/${mode}_load.json"
  for run in 1 2 3; do
    "${load[@]}" --server="127.0.0.1:${port}" --skip_load --mode=stream \
      --batch=64 --window=4 --duration="${duration}" \
      --out="${OUT}/${mode}_stream_${run}.json"
  done
  rate=$(python3 -c 'import json,sys,statistics
print(int(statistics.median(json.load(open(f))["events_per_s"] for f in sys.argv[1:])))' \
    "${OUT}/${mode}"_stream_*.json)
  for percent in 50 80; do
    "${load[@]}" --server="127.0.0.1:${port}" --skip_load --mode=unary \
      --batch=1 --clients=2 --rate=$((rate * percent / 100)) \
      --duration="${duration}" --out="${OUT}/${mode}_unary_${percent}.json"
  done
  stop_server
done

python3 tools/service_report.py "${OUT}" | tee "${OUT}/summary.md"
