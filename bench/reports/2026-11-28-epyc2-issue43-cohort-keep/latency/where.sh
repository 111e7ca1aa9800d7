#!/usr/bin/env bash
# Where a publish's time goes at a fixed open-loop rate: cohortd's own
# per-stage histograms (/metrics), scraped before and after the run, the
# server's CPU seconds over the run and, from issue 43's lock-free
# pipeline on (bench/reports/2026-11-28-epyc2-issue43-lockfree), its
# partition threads' sleeps and wake-ups ("-" for a build without them).
#   where.sh BIN RATE OUT [COHORTD FLAGS...]   (BIN: a folder with cohortd
#   and cohort; fabret-1m, 2 open-loop clients for 10 s, metrics on port
#   19391; cohortd with --partitions=2 unless flags are given)
# RATE closed:N instead has N closed-loop clients (experiment 1's load;
# the steal-units report's exp1-4clients).
set -euo pipefail
bin=$(realpath "$1") rate=$2 out=$(realpath -m "$3")
flags=("${@:4}")
((${#flags[@]})) || flags=(--partitions=2)
clients=(--clients=2 --rate="${rate}")
[[ "${rate}" == closed:* ]] && clients=(--clients="${rate#closed:}" --rate=0)
cd "$(dirname "$0")/../../../.."  # the repository: tools/testing/cohortd.sh
source tools/testing/cohortd.sh
mkdir -p "${out}"
start_cohortd "${out}/cohortd.log" "${bin}/cohortd" --listen=127.0.0.1:0 \
  "${flags[@]}" --metrics_port=19391 || exit 1
pid=${COHORTD_PID}
trap 'stop_cohortd ${pid}' EXIT
"${bin}/cohort" load --server="127.0.0.1:${COHORTD_PORT}" --preset=fabret-1m --mode=none >/dev/null
curl -s http://127.0.0.1:19391/metrics >"${out}/before.txt"
cpu0=$(awk '{print $14 + $15}' "/proc/${pid}/stat")
"${bin}/cohort" load --server="127.0.0.1:${COHORTD_PORT}" --preset=fabret-1m \
  --skip_load --mode=unary --batch=1 "${clients[@]}" \
  --warmup=0 --duration=10 --out="${out}/load.json" >/dev/null
cpu1=$(awk '{print $14 + $15}' "/proc/${pid}/stat")
curl -s http://127.0.0.1:19391/metrics >"${out}/after.txt"
echo "server cpu seconds: $(( (cpu1 - cpu0) / 100 )).$(printf '%02d' $(( (cpu1 - cpu0) % 100 )))"
python3 - "${out}" <<'PY'
import re, sys, json
d = sys.argv[1]
def parse(f):
    v = {}
    for l in open(f):
        if l.startswith('#'): continue
        m = re.match(r'(\S+?)(\{[^}]*\})? (\S+)$', l.strip())
        if m: v[(m.group(1), m.group(2) or '')] = float(m.group(3))
    return v
a, b = parse(d + '/before.txt'), parse(d + '/after.txt')
delta = {k: b[k] - a.get(k, 0) for k in b}
load = json.load(open(d + '/load.json'))
print('offered %s achieved %.0f p50 %.2f ms p99 %.2f ms' % (
    sys.argv[1], load['events_per_s'], load['latency_us']['p50'] / 1e3, load['latency_us']['p99'] / 1e3))
for name in ('cohort_pipeline_sleeps_total', 'cohort_pipeline_wakeups_total',
             'cohort_stolen_matches_total'):
    print(name, '%.0f' % delta[(name, '')] if (name, '') in delta else '-')
for name in ('cohort_publish_duration_seconds',):
    s = sum(v for (n, l), v in delta.items() if n == name + '_sum')
    c = sum(v for (n, l), v in delta.items() if n == name + '_count')
    if c: print('publish: %d requests, mean %.3f ms' % (c, 1e3 * s / c))
labels = sorted({l for (n, l) in delta if n == 'cohort_stage_batches_total'})
for l in labels:
    def g(n): return delta.get((n, l), 0)
    batches = g('cohort_stage_batches_total')
    if not batches: continue
    wc = g('cohort_stage_wait_seconds_count'); ws = g('cohort_stage_wait_seconds_sum')
    sc = g('cohort_stage_service_seconds_count'); ss = g('cohort_stage_service_seconds_sum')
    bc = g('cohort_stage_batch_size_count'); bs = g('cohort_stage_batch_size_sum')
    print('%-45s batches %7d  size %5.2f  wait %7.3f ms  service %7.3f ms  busy %5.1f%%' % (
        l, batches, bs / bc if bc else 0, 1e3 * ws / wc if wc else 0,
        1e3 * ss / sc if sc else 0, 100 * ss / 10))
PY
