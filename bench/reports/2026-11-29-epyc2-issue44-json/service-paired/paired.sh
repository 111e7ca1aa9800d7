#!/usr/bin/env bash
# Paired end-to-end check: cohortd before (/tmp/base/cohortd) and after
# (/tmp/new/cohortd, with /tmp/new/cohort the load generator) the JSON
# events step, flat fabret events, PublishStream, alternating runs. Run from
# the repository root: paired.sh [OUT].
set -u
source tools/testing/cohortd.sh
out=${1:-/tmp/paired}
mkdir -p "$out"
C=/tmp/new/cohort
declare -A port pid
for v in base new; do
  start_cohortd "$out/$v.log" /tmp/$v/cohortd --listen=127.0.0.1:0 --partitions=2 || exit 1
  pid[$v]=$COHORTD_PID; port[$v]=$COHORTD_PORT
  $C load --preset=fabret-1m --subscriptions=300000 --events=20000 --warmup=1 \
    --server=127.0.0.1:${port[$v]} --mode=none --out=$out/${v}_load.json >/dev/null
done
for r in 1 2 3 4 5; do
  for v in base new; do
    $C load --preset=fabret-1m --subscriptions=300000 --events=20000 --warmup=1 \
      --server=127.0.0.1:${port[$v]} --skip_load --mode=stream --batch=64 \
      --window=4 --duration=5 --out=$out/${v}_stream_$r.json >/dev/null
  done
done
for v in base new; do stop_cohortd ${pid[$v]}; done
python3 - "$out" <<'PY'
import json, statistics, sys, glob
out = sys.argv[1]
rates = {v: [json.load(open(f))["events_per_s"] for f in sorted(glob.glob(f"{out}/{v}_stream_*.json"))] for v in ("base", "new")}
for v, r in rates.items():
    print(v, "median", int(statistics.median(r)), "min", int(min(r)), "max", int(max(r)))
ratios = [n / b for b, n in zip(rates["base"], rates["new"])]
print("new/base per round:", " ".join(f"{x:.3f}" for x in ratios), "median", f"{statistics.median(ratios):.3f}")
PY
