#!/usr/bin/env bash
# The Python client's publish_stream rate next to `cohort load`'s, on one
# server and one workload, in interleaved rounds:
#
#   client/python/examples/compare_rate.sh [--subscriptions=N] [--rounds=R]
#       [--events=N] [--duration=S]
#
# Builds cohortd and the CLI (-c opt), starts one cohortd (default flags:
# staged, a partition per core, cohort_max 64), writes a fabret-1m workload
# of N subscriptions (100,000) with `cohort workload`, subscribes it once
# (the first `cohort load`), then runs R rounds (3) of
#   cohort load --workload=FILE --skip_load --mode=stream --batch=64
#       --window=16 --clients=1 --duration=S
#   publish_rate.py --workload=FILE --events=E --batch=64 --window=16
#   publish_rate.py --workload=FILE --events=E --batch=64 --window=16
#       --prebuilt
# (the same events, cycled; E = 200,000) and prints each run's events/s and
# the median of each. Python is $PYTHON (default: the venv of
# tools/testing/python_client_test.sh, which has the package installed).
# Client and server share the machine's cores, as they would on a laptop.
set -euo pipefail
cd "$(dirname "$0")/../../.."

subscriptions=100000
rounds=3
events=200000
duration=10
for arg in "$@"; do
  case "${arg}" in
    --subscriptions=*) subscriptions=${arg#*=} ;;
    --rounds=*) rounds=${arg#*=} ;;
    --events=*) events=${arg#*=} ;;
    --duration=*) duration=${arg#*=} ;;
    *) echo "compare_rate.sh: unknown argument ${arg}" >&2; exit 2 ;;
  esac
done
readonly PYTHON=${PYTHON:-${XDG_CACHE_HOME:-$HOME/.cache}/cohort/python-client-venv/bin/python}
if ! "${PYTHON}" -c 'import cohort' 2>/dev/null; then
  echo "compare_rate.sh: ${PYTHON} cannot import cohort; run" \
    "tools/testing/python_client_test.sh once, or set PYTHON" >&2
  exit 1
fi

bazel build -c opt //service:cohortd //client:cohort >/dev/null 2>&1
readonly B=.bazel/out/k8-opt/bin
tmp=$(mktemp -d)
port=$((20000 + RANDOM % 20000))
"${B}/service/cohortd" --listen="127.0.0.1:${port}" >"${tmp}/cohortd.log" 2>&1 &
server=$!
trap 'kill "${server}" 2>/dev/null; wait "${server}" 2>/dev/null; rm -rf "${tmp}"' EXIT
for _ in $(seq 100); do
  grep -q "serving on port" "${tmp}/cohortd.log" && break
  sleep 0.1
done
readonly SERVER=127.0.0.1:${port}
"${B}/client/cohort" workload --preset=fabret-1m \
  --subscriptions="${subscriptions}" --events=20000 \
  --out="${tmp}/workload.txt" >/dev/null
echo "server ${SERVER}: $(head -1 "${tmp}/cohortd.log" | cut -c1-160)"
echo "workload: fabret-1m, ${subscriptions} subscriptions, 20,000 events"
# Subscribes the workload once; later runs publish only.
"${B}/client/cohort" load --server="${SERVER}" --workload="${tmp}/workload.txt" \
  --mode=none >/dev/null

load_rate() {
  "${B}/client/cohort" load --server="${SERVER}" \
    --workload="${tmp}/workload.txt" --skip_load --mode=stream --batch=64 \
    --window=16 --clients=1 --duration="${duration}" --out="${tmp}/load.json" \
    >/dev/null
  "${PYTHON}" -c 'import json, sys
print(round(json.load(open(sys.argv[1]))["events_per_s"]))' \
    "${tmp}/load.json"
}
python_rate() {
  "${PYTHON}" client/python/examples/publish_rate.py --target="${SERVER}" \
    --workload="${tmp}/workload.txt" --events="${events}" --batch=64 \
    --window=16 "$@" | sed -n 's/.* s: \([0-9,]*\) events\/s.*/\1/p' |
    tr -d ,
}
declare -a load=() dicts=() prebuilt=()
for round in $(seq "${rounds}"); do
  load+=("$(load_rate)")
  dicts+=("$(python_rate)")
  prebuilt+=("$(python_rate --prebuilt)")
  echo "round ${round}: cohort load ${load[-1]}, publish_rate.py" \
    "${dicts[-1]} (dict events), ${prebuilt[-1]} (--prebuilt) events/s"
done
median() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
echo "median events/s over ${rounds} rounds: cohort load $(median "${load[@]}")," \
  "publish_rate.py $(median "${dicts[@]}") (dict events)," \
  "$(median "${prebuilt[@]}") (--prebuilt)"
