#!/bin/bash
# A/B closed loop with server CPU, context switches per event and the whole
# machine's idle cores (column 9; files before run 7 have 8 columns).
cd /work/main
source tools/testing/cohortd.sh
C=${COHORT_CLIENT:-/tmp/bins/cur/cohort}
declare -A port pidof; names=(); pids=()
for spec in "$@"; do
  IFS=: read -r name dir envs flags <<<"$spec"
  start_cohortd /tmp/ab_$name.log env $envs $dir/cohortd --listen=127.0.0.1:0 $flags || exit 1
  port[$name]=$COHORTD_PORT; pidof[$name]=$COHORTD_PID; names+=($name); pids+=($COHORTD_PID)
  $C load --server=127.0.0.1:$COHORTD_PORT --preset=fabret-1m --events=100000 --mode=none > /tmp/ab_load_$name.log 2>&1 || { cat /tmp/ab_load_$name.log; exit 1; }
done
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
idle() { awk "/^cpu /{print \$5+\$6}" /proc/stat; }
csw() { cat /proc/"$1"/task/*/status | awk '/ctxt_switches/ {s += $2} END {print s}'; }
echo "name,clients,rep,events_per_s,mean_ms,p50_ms,cpu_us_per_event,csw_per_event"
for rep in $(seq ${REPS:-3}); do
  for n in ${CLIENTS:-1 2 4 8 16}; do
    for i in "${!names[@]}"; do
      name=${names[$(( (i + rep) % ${#names[@]} ))]}
      p=${pidof[$name]}
      $C load --server=127.0.0.1:${port[$name]} --preset=fabret-1m --events=100000 --skip_load --warmup=1 --duration=1 \
        --mode=unary --batch=1 --clients=$n --out=/tmp/ab_run.json >/dev/null 2>&1
      c0=$(cpu $p); s0=$(csw $p); i0=$(idle)
      $C load --server=127.0.0.1:${port[$name]} --preset=fabret-1m --events=100000 --skip_load --warmup=0 --duration=${DUR:-4} \
        --mode=unary --batch=1 --clients=$n --out=/tmp/ab_run.json >/dev/null 2>&1
      c1=$(cpu $p); s1=$(csw $p); i1=$(idle)
      python3 -c "import json,os;d=json.load(open('/tmp/ab_run.json'));l=d['latency_us'];ev=d['events'];hz=os.sysconf('SC_CLK_TCK');print('$name,$n,$rep,%.0f,%.3f,%.3f,%.1f,%.2f,%.3f'%(d['events_per_s'],l.get('mean',0)/1000,l['p50']/1000,($c1-$c0)/hz*1e6/ev,($s1-$s0)/ev,($i1-$i0)/hz/${DUR:-4}))"
    done
  done
done
for p in "${pids[@]}"; do kill -TERM $p; done; wait 2>/dev/null
