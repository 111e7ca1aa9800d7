#!/usr/bin/env bash
# Paired end-to-end check of the "or" step: cohortd before it
# (/tmp/base/cohortd, 0bb790f), after it (/tmp/new/cohortd), and after it
# with one "or" subscription live that no event matches ("or": partitions
# then report branches too, and the reply stage merges them), flat
# fabret events, PublishStream, alternating runs. Run from the
# repository root: paired.sh [OUT].
set -u
source tools/testing/cohortd.sh
out=${1:-/tmp/paired}
mkdir -p "$out"
C=/tmp/new/cohort
declare -A port pid
for v in base new or; do
  bin=/tmp/$v/cohortd
  [[ $v == or ]] && bin=/tmp/new/cohortd
  start_cohortd "$out/$v.log" "$bin" --listen=127.0.0.1:0 --partitions=2 || exit 1
  pid[$v]=$COHORTD_PID; port[$v]=$COHORTD_PORT
  $C load --preset=fabret-1m --subscriptions=300000 --events=20000 --warmup=1 \
    --server=127.0.0.1:${port[$v]} --mode=none --out=$out/${v}_load.json >/dev/null
done
$C --server=127.0.0.1:${port[or]} subscribe --subscriber=z \
  'zz = 1 or zz = 2 and a0 = 5' >/dev/null
for r in 1 2 3 4 5; do
  for v in base new or; do
    $C load --preset=fabret-1m --subscriptions=300000 --events=20000 --warmup=1 \
      --server=127.0.0.1:${port[$v]} --skip_load --mode=stream --batch=64 \
      --window=4 --duration=5 --out=$out/${v}_stream_$r.json >/dev/null
  done
done
for v in base new or; do stop_cohortd ${pid[$v]}; done
python3 - "$out" <<'PY'
import json, statistics, sys, glob
out = sys.argv[1]
rates = {v: [json.load(open(f))["events_per_s"] for f in sorted(glob.glob(f"{out}/{v}_stream_*.json"))] for v in ("base", "new", "or")}
for v, r in rates.items():
    print(v, "median", int(statistics.median(r)), "min", int(min(r)), "max", int(max(r)))
for v in ("new", "or"):
    ratios = [n / b for b, n in zip(rates["base"], rates[v])]
    print(f"{v}/base per round:", " ".join(f"{x:.3f}" for x in ratios), "median", f"{statistics.median(ratios):.3f}")
PY
