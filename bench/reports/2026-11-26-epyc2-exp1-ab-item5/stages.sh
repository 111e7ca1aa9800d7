#!/bin/bash
# Stage profile around closed-loop runs at 2 and 4 clients: stats --json
# before and after each 5 s run (one server, flags in $1); the differences
# of the counts and means give the run's per-stage wait and service.
cd /work/main
source tools/testing/cohortd.sh
C=/tmp/bins/tip/cohort
start_cohortd /tmp/st.log /tmp/bins/tip/cohortd --listen=127.0.0.1:0 $1 || exit 1
$C load --server=127.0.0.1:$COHORTD_PORT --preset=fabret-1m --events=100000 --mode=none > /dev/null 2>&1
for n in 2 4; do
$C load --server=127.0.0.1:$COHORTD_PORT --preset=fabret-1m --events=100000 --skip_load --warmup=1 --duration=1 --mode=unary --batch=1 --clients=$n >/dev/null 2>&1
$C stats --server=127.0.0.1:$COHORTD_PORT --json > /tmp/st_before_$n.json
$C load --server=127.0.0.1:$COHORTD_PORT --preset=fabret-1m --events=100000 --skip_load --warmup=0 --duration=5 --mode=unary --batch=1 --clients=$n --out=/tmp/st.json >/dev/null 2>&1
python3 -c "import json;d=json.load(open('/tmp/st.json'));l=d['latency_us'];print('clients $n',d['events_per_s'],l)"
$C stats --server=127.0.0.1:$COHORTD_PORT --json > /tmp/st_after_$n.json
done
kill -TERM $COHORTD_PID; wait
for n in 2 4; do echo "clients $n"; python3 bench/reports/2026-11-26-epyc2-exp1-ab-item5/stage_diff.py /tmp/st_before_$n.json /tmp/st_after_$n.json; done
