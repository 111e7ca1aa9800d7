#!/bin/bash
# prof.sh NAME FLAGS CLIENTS: perf profile of cohortd under closed loop
cd /work/main
source tools/testing/cohortd.sh
C=/tmp/bins/tip/cohort
start_cohortd /tmp/c16/prof_$1.log ${BIN:-/tmp/bins/tip}/cohortd --listen=127.0.0.1:0 $2 || exit 1
P=$COHORTD_PID
$C load --server=127.0.0.1:$COHORTD_PORT --preset=fabret-1m --events=100000 --mode=none >/dev/null 2>&1
$C load --server=127.0.0.1:$COHORTD_PORT --preset=fabret-1m --events=100000 --skip_load --warmup=1 --duration=8 --mode=unary --batch=1 --clients=$3 --out=/tmp/c16/prof_$1.json >/dev/null 2>&1 &
L=$!
sleep 2
perf record -e ${EV:-cpu-clock} ${CG:--g} -p $P -o /tmp/c16/perf_$1.data -- sleep 5 >/dev/null 2>&1
wait $L
kill -TERM $P; wait
perf report -i /tmp/c16/perf_$1.data --no-children --sort symbol -g none 2>/dev/null | grep -v "^#" | grep -v "^$" | head -${TOP:-40}
