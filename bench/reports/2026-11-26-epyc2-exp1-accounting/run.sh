#!/bin/bash
# Experiment 1's closed loop with the servers' CPU accounted per event:
# staged (the defaults) and threaded side by side, each with fabret-1m
# loaded, and the same two with an empty index (the cost of everything but
# matching). For each point: events/s, mean response, server CPU (utime +
# stime from /proc) and context switches (all threads) per event, and the
# staged server's mean cohort (predicate-stage events per batch, from the
# Stats the load generator fetches after each run).
# usage: run.sh BIN_DIR OUT_CSV   (env REPS=3 DUR=4 CLIENTS="1 2 4 8 16")
set -euo pipefail
bin=$1; out=$2
cd "$(dirname "$0")/../../.."
source tools/testing/cohortd.sh
C=$bin/cohort
declare -A port pid subs
names=()
for spec in staged:--mode=staged:1000000 threaded:--mode=threaded:1000000 \
            staged_empty:--mode=staged:0 threaded_empty:--mode=threaded:0; do
  IFS=: read -r name flags n <<<"$spec"
  start_cohortd "/tmp/acct_$name.log" "$bin/cohortd" --listen=127.0.0.1:0 $flags
  port[$name]=$COHORTD_PORT; pid[$name]=$COHORTD_PID; subs[$name]=$n
  names+=("$name")
  if [[ $n -gt 0 ]]; then
    "$C" load --server=127.0.0.1:$COHORTD_PORT --preset=fabret-1m \
      --events=100000 --mode=none >/dev/null 2>&1
  fi
done
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
csw() { cat /proc/"$1"/task/*/status | awk '/ctxt_switches/ {s += $2} END {print s}'; }
echo "server,clients,rep,events_per_s,mean_ms,server_cpu_us_per_event,context_switches_per_event,mean_cohort" >"$out"
for rep in $(seq "${REPS:-3}"); do
  for n in ${CLIENTS:-1 2 4 8 16}; do
    for i in "${!names[@]}"; do
      name=${names[$(( (i + rep) % ${#names[@]} ))]}
      p=${pid[$name]}
      c0=$(cpu "$p"); s0=$(csw "$p")
      "$C" load --server=127.0.0.1:${port[$name]} --preset=fabret-1m \
        --subscriptions=${subs[$name]} --events=100000 --skip_load \
        --warmup=0 --duration="${DUR:-4}" --mode=unary --batch=1 \
        --clients="$n" --out=/tmp/acct_run.json >/dev/null 2>&1
      c1=$(cpu "$p"); s1=$(csw "$p")
      python3 - "$name" "$n" "$rep" "$c0" "$c1" "$s0" "$s1" >>"$out" <<'PY'
import json, os, sys
name, n, rep = sys.argv[1:4]
c0, c1, s0, s1 = map(int, sys.argv[4:8])
d = json.load(open('/tmp/acct_run.json'))
ev = d['events']
hz = os.sysconf('SC_CLK_TCK')
# The load report's stage figures cover this run alone (after - before).
cohort = ''
for s in d['stats'].get('stages', []):
    if s['name'] == 'predicate':
        cohort = '%.2f' % (s['events'] / max(1, s['batches']))
print('%s,%s,%s,%.0f,%.3f,%.1f,%.2f,%s' % (
    name, n, rep, d['events_per_s'], d['latency_us']['mean'] / 1000,
    (c1 - c0) / hz / ev * 1e6, (s1 - s0) / ev, cohort))
PY
    done
  done
done
for name in "${names[@]}"; do kill -TERM "${pid[$name]}"; done
wait 2>/dev/null || true
