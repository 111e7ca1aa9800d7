#!/bin/bash
# A/B closed-loop: servers from /tmp/bins/{A,B,...}/cohortd (+ extra flags), interleaved.
# usage: run.sh "NAME:DIR:ENV:FLAGS" ... ; env CLIENTS, REPS, DUR, COHORT_CLIENT
cd /work/main
source tools/testing/cohortd.sh
C=${COHORT_CLIENT:-/tmp/bins/base/cohort}
declare -A port; names=(); pids=()
for spec in "$@"; do
  IFS=: read -r name dir envs flags <<<"$spec"
  start_cohortd /tmp/ab_$name.log env $envs $dir/cohortd --listen=127.0.0.1:0 $flags || exit 1
  port[$name]=$COHORTD_PORT; names+=($name); pids+=($COHORTD_PID)
  $C load --server=127.0.0.1:$COHORTD_PORT --preset=fabret-1m --events=100000 --mode=none --out=/tmp/ab_load_$name.json > /tmp/ab_load_$name.log 2>&1 || { cat /tmp/ab_load_$name.log; exit 1; }
  echo "$name: $(head -1 /tmp/ab_$name.log)"
done
echo "name,clients,rep,events_per_s,mean_ms,p50_ms"
for rep in $(seq ${REPS:-3}); do
  for n in ${CLIENTS:-1 2 4 8 16}; do
    for i in "${!names[@]}"; do
      name=${names[$(( (i + rep) % ${#names[@]} ))]}
      $C load --server=127.0.0.1:${port[$name]} --preset=fabret-1m --events=100000 --skip_load --warmup=1 --duration=${DUR:-4} \
        --mode=unary --batch=1 --clients=$n --out=/tmp/ab_run.json >/dev/null 2>&1
      python3 -c "import json;d=json.load(open('/tmp/ab_run.json'));l=d['latency_us'];print('$name,$n,$rep,%.0f,%.3f,%.3f,%.1f'%(d['events_per_s'],l.get('mean',0)/1000,l['p50']/1000,d['matches_per_event']))"
    done
  done
done
for p in "${pids[@]}"; do kill -TERM $p; done; wait 2>/dev/null
