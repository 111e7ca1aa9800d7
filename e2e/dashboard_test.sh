#!/usr/bin/env bash
# Checks deploy/observability/ against what a real cohortd exports: starts
# cohortd with a data dir and 2 partitions, subscribes, listens and publishes
# with the cohort CLI so that every histogram has samples, scrapes /metrics,
# and checks
#   - the scrape follows Prometheus' conventions, and every metric and label
#     that the Grafana dashboard and the alert rules use is in it
#     (deploy/observability/check_promql.py);
#   - it has the same sample and label names as the example scrape the
#     static checks use (deploy/observability/testdata/cohortd-metrics.prom);
#   - `promtool check metrics` accepts it, and `promtool check rules` parses
#     every dashboard expression;
#   - a real Prometheus scraping the server every second evaluates every
#     dashboard expression to some series, and every rule without error.
# The last two need Debian's prometheus package (promtool, prometheus) and
# are skipped without it.
#
#   dashboard_test.sh [COHORTD [COHORT [OBSERVABILITY_DIR]]]
#
# Defaults: $COHORTD, $COHORT (else /tmp/cohort-dev/cohortd and cohort),
# $OBSERVABILITY_DIR (else deploy/observability in the runfiles under Bazel,
# or beside this script in a checkout). Uses $TEST_TMPDIR when set, only
# 127.0.0.1, and python3 (PyYAML for the rule files). Prints PASS, FAIL or
# SKIP per check and a closing "dashboard_test: N passed, M failed" line;
# exits 1 if any check failed.
set -uo pipefail

readonly COHORTD=${1:-${COHORTD:-/tmp/cohort-dev/cohortd}}
readonly COHORT=${2:-${COHORT:-/tmp/cohort-dev/cohort}}
obs=${3:-${OBSERVABILITY_DIR:-}}
if [[ -z "${obs}" && -n "${TEST_SRCDIR:-}" ]]; then
  obs="${TEST_SRCDIR}/${TEST_WORKSPACE:-_main}/deploy/observability"
fi
if [[ -z "${obs}" || ! -d "${obs}" ]]; then
  obs="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/deploy/observability"
fi
readonly OBS=${obs}
PYTHON=$(command -v /usr/bin/python3 || command -v python3)
readonly PYTHON
if [[ -n "${TEST_TMPDIR:-}" ]]; then
  readonly TMP=${TEST_TMPDIR}
else
  TMP=$(mktemp -d)
  readonly TMP
  trap 'rm -rf "${TMP}"' EXIT
fi
# Seconds to wait for cohortd's and Prometheus' startup lines and for the
# listener.
readonly START_TIMEOUT_S=30
readonly LISTEN_TIMEOUT_S=20
# Prometheus scrapes every second (its first scrape comes about 5 s after
# it starts: target discovery is throttled to 5 s) and the queries use 5 s
# rate windows ($__rate_interval), so 4 scrapes give every rate() 2 or more
# samples. At most PROMETHEUS_WAIT_S for them.
readonly PROMETHEUS_SCRAPES=4
readonly PROMETHEUS_WAIT_S=30

passed=0
failed=0
pass() { echo "PASS: $1"; passed=$((passed + 1)); }
fail() { echo "FAIL: $1"; failed=$((failed + 1)); }
skip() { echo "SKIP: $1"; }
# check DESCRIPTION COMMAND...: PASS if COMMAND exits 0, else FAIL.
check() {
  local description=$1
  shift
  if "$@"; then pass "${description}"; else fail "${description}"; fi
}
finish() {
  echo "dashboard_test: ${passed} passed, ${failed} failed"
  exit $((failed > 0))
}

for file in "${COHORTD}" "${COHORT}"; do
  if [[ ! -x "${file}" ]]; then
    fail "${file} is an executable"
    finish
  fi
done
for file in check_promql.py grafana/dashboards/cohort.json prometheus/alerts.yml \
  testdata/cohortd-metrics.prom; do
  if [[ ! -f "${OBS}/${file}" ]]; then
    fail "${OBS}/${file} exists"
    finish
  fi
done

# --- a server with every stage the dashboard shows (the journal too)
if [[ -n "${TEST_SRCDIR:-}" ]]; then
  source "${TEST_SRCDIR}/${TEST_WORKSPACE:-_main}/tools/testing/cohortd.sh"
else
  source "$(dirname "${BASH_SOURCE[0]}")/../tools/testing/cohortd.sh"
fi
log="${TMP}/cohortd.log"
listener_pid=""
prometheus_pid=""
COHORTD_PID=""
stop_all() {
  [[ -n "${listener_pid}" ]] && kill "${listener_pid}" 2>/dev/null
  [[ -n "${prometheus_pid}" ]] && kill "${prometheus_pid}" 2>/dev/null &&
    wait "${prometheus_pid}" 2>/dev/null
  [[ -n "${COHORTD_PID}" ]] && stop_cohortd "${COHORTD_PID}"
}
trap 'stop_all; [[ -z "${TEST_TMPDIR:-}" ]] && rm -rf "${TMP}"' EXIT
if ! start_cohortd "${log}" "${COHORTD}" --listen=127.0.0.1:0 --metrics_port=0 \
  --data_dir="${TMP}/data" --partitions=2; then
  fail "cohortd starts and prints its gRPC port"
  finish
fi
port=${COHORTD_PORT}
# The metrics line follows the serving line.
metrics_port=""
for _ in $(seq $((START_TIMEOUT_S * 10))); do
  metrics_port=$(sed -n 's|^cohortd: metrics on http://127\.0\.0\.1:\([0-9]*\)/metrics$|\1|p' "${log}" 2>/dev/null)
  [[ -n "${metrics_port}" ]] && break
  kill -0 "${COHORTD_PID}" 2>/dev/null || break
  sleep 0.1
done
if [[ -z "${metrics_port}" ]]; then
  fail "cohortd prints its metrics port"
  cat "${log}"
  finish
fi
pass "cohortd serves on port ${port}, metrics on ${metrics_port} (--data_dir, 2 partitions)"
cohort() { "${COHORT}" --server="127.0.0.1:${port}" --deadline_ms=10000 "$@"; }

# --- Prometheus, if installed, scraping it from before the traffic on
prometheus_url=""
if command -v prometheus >/dev/null; then
  cat >"${TMP}/prometheus.yml" <<EOF
global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: ["${OBS}/prometheus/alerts.yml"]
scrape_configs:
  - job_name: cohortd
    static_configs: [{targets: ["127.0.0.1:${metrics_port}"]}]
EOF
  prometheus --config.file="${TMP}/prometheus.yml" --storage.tsdb.path="${TMP}/tsdb" \
    --web.listen-address=127.0.0.1:0 >"${TMP}/prometheus.log" 2>&1 &
  prometheus_pid=$!
  for _ in $(seq $((START_TIMEOUT_S * 10))); do
    prometheus_url=$(sed -n 's|.*msg="Listening on" address=\(127\.0\.0\.1:[0-9]*\).*|http://\1|p' \
      "${TMP}/prometheus.log" 2>/dev/null)
    [[ -n "${prometheus_url}" ]] && break
    kill -0 "${prometheus_pid}" 2>/dev/null || break
    sleep 0.1
  done
  if [[ -n "${prometheus_url}" ]]; then
    pass "prometheus scrapes it every second (${prometheus_url})"
  else
    fail "prometheus starts: $(tail -3 "${TMP}/prometheus.log" | tr '\n' ' ')"
  fi
fi

# --- traffic: a subscription with a listener, then a small fabret-1m load
check "cohort subscribe" cohort subscribe --subscriber=dashboard 'kind = 7' \
  >"${TMP}/subscribe.log" 2>&1
cohort listen --subscriber=dashboard --count=3 >"${TMP}/listen.log" 2>&1 &
listener_pid=$!
# The listener registers asynchronously: publish until it has its 3
# deliveries (it then exits), for at most LISTEN_TIMEOUT_S.
for _ in $(seq $((LISTEN_TIMEOUT_S * 5))); do
  kill -0 "${listener_pid}" 2>/dev/null || break
  cohort publish 'kind=7 price=1' >/dev/null 2>&1
  sleep 0.2
done
if kill -0 "${listener_pid}" 2>/dev/null; then
  fail "a listener receives 3 deliveries: $(tail -2 "${TMP}/listen.log" | tr '\n' ' ')"
  kill "${listener_pid}" 2>/dev/null
else
  wait "${listener_pid}"
  check "a listener receives 3 deliveries" test $? -eq 0
fi
listener_pid=""
cohort load --preset=fabret-1m --subscriptions=2000 --events=500 --clients=2 \
  --warmup=0.5 --duration=1 >"${TMP}/load.log" 2>&1
load_status=$?
check "cohort load (2,000 fabret-1m subscriptions, 2 clients, 1 s)" test "${load_status}" -eq 0
((load_status == 0)) || tail -5 "${TMP}/load.log"

# --- the scrape
scrape="${TMP}/metrics.prom"
if "${PYTHON}" - "http://127.0.0.1:${metrics_port}/metrics" "${scrape}" <<'EOF'; then
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=10) as response:
    assert response.status == 200, response.status
    open(sys.argv[2], "wb").write(response.read())
EOF
  pass "GET /metrics ($(grep -vc '^#' "${scrape}") samples)"
else
  fail "GET /metrics"
  finish
fi

# Every panel family has samples, so the dashboard would draw something.
while IFS='|' read -r what selector; do
  check "${what} has samples: ${selector}" "${PYTHON}" - "${scrape}" "${selector}" <<'EOF'
import re, sys
name, _, want = sys.argv[2].partition("{")
want = dict(re.findall(r'(\w+)="([^"]*)"', want))
total = 0.0
for line in open(sys.argv[1]):
    match = re.match(r"([\w:]+)(?:\{(.*)\})? (\S+)", line)
    if match and match.group(1) == name:
        labels = dict(re.findall(r'(\w+)="([^"]*)"', match.group(2) or ""))
        if all(labels.get(k) == v for k, v in want.items()):
            total += float(match.group(3))
sys.exit(0 if total > 0 else 1)
EOF
done <<'EOF'
publish latency|cohort_publish_duration_seconds_count
journal fsync latency|cohort_journal_fsync_duration_seconds_count
journal group size|cohort_stage_batch_size_count{stage="journal"}
cohort size|cohort_stage_batch_size_count{stage="partition",partition="1"}
stage wait time|cohort_stage_wait_seconds_count{stage="reply"}
stage service time|cohort_stage_service_seconds_count{stage="predicate"}
queue length|cohort_stage_queue_length_count{stage="partition"}
matches|cohort_stage_matches_total{stage="reply"}
listener deliveries|cohort_stage_deliveries_total
subscriptions|cohort_subscriptions
resident memory|process_resident_memory_bytes
EOF

# --- the dashboard and alert rules against the scrape
out="${TMP}/check_promql.out"
"${PYTHON}" "${OBS}/check_promql.py" --exposition "${scrape}" \
  --dashboard "${OBS}/grafana/dashboards/cohort.json" \
  --rules "${OBS}/prometheus/alerts.yml" \
  --expect-families "${OBS}/testdata/cohortd-metrics.prom" \
  --emit-rules "${TMP}/dashboard-rules.yml" >"${out}" 2>&1
check_status=$?
# One PASS/FAIL per part of check_promql.py's report (its FAIL lines shown).
report_part() {  # report_part DESCRIPTION PATTERN
  local count
  count=$(grep -cE "^(ok  |FAIL) ${2}" "${out}")
  if ((count == 0)); then
    fail "$1: no lines in check_promql.py's output"
  elif grep -qE "^FAIL ${2}" "${out}"; then
    fail "$1"
    grep -E "^FAIL ${2}" "${out}" | cut -c1-400 | sed 's/^/    /'
  else
    pass "$1 (${count} checked)"
  fi
}
report_part "the scrape follows the exposition conventions" "exposition [a-z]+:"
report_part "the scrape has the sample and label names of testdata/cohortd-metrics.prom" \
  "exposition vs "
report_part "dashboard expressions use metrics and labels of the scrape" "[^ ]*cohort\.json:"
report_part "alert and recording rules use metrics and labels of the scrape" "[^ ]*alerts\.yml:"
check "check_promql.py exits 0 ($(tail -1 "${out}"))" test "${check_status}" -eq 0

if command -v promtool >/dev/null; then
  check "promtool check metrics accepts the scrape" \
    bash -c 'promtool check metrics <"$1" >"$2" 2>&1 || { cat "$2"; exit 1; }' \
    _ "${scrape}" "${TMP}/promtool-metrics.out"
  check "promtool parses every dashboard expression" \
    bash -c 'promtool check rules "$1" >"$2" 2>&1 || { cat "$2"; exit 1; }' \
    _ "${TMP}/dashboard-rules.yml" "${TMP}/promtool-rules.out"
else
  skip "promtool check metrics / rules: promtool not installed (Debian package prometheus)"
fi

# --- every expression evaluated by Prometheus against the live server
if [[ -n "${prometheus_url}" ]]; then
  check "Prometheus has ${PROMETHEUS_SCRAPES} scrapes" "${PYTHON}" - "${prometheus_url}" \
    "${PROMETHEUS_SCRAPES}" "${PROMETHEUS_WAIT_S}" <<'EOF'
import json, sys, time, urllib.parse, urllib.request
url, scrapes, wait_s = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
query = urllib.parse.urlencode({"query": 'count_over_time(up{job="cohortd"}[1m])'})
deadline = time.time() + wait_s
while time.time() < deadline:
    try:
        with urllib.request.urlopen(f"{url}/api/v1/query?{query}", timeout=5) as response:
            result = json.load(response)["data"]["result"]
        if result and float(result[0]["value"][1]) >= scrapes:
            sys.exit(0)
    except OSError:
        pass
    time.sleep(0.25)
sys.exit(1)
EOF
  out="${TMP}/check_promql_prometheus.out"
  "${PYTHON}" "${OBS}/check_promql.py" --exposition "${scrape}" \
    --dashboard "${OBS}/grafana/dashboards/cohort.json" \
    --rules "${OBS}/prometheus/alerts.yml" --prometheus "${prometheus_url}" \
    --variable "instance=127.0.0.1:${metrics_port}" --variable __rate_interval=5s \
    >"${out}" 2>&1
  report_part "Prometheus evaluates every dashboard expression to series" \
    "[^ ]*cohort\.json:"
  report_part "Prometheus evaluates every rule without error" "[^ ]*alerts\.yml:"
elif ! command -v prometheus >/dev/null; then
  skip "evaluation by Prometheus: prometheus not installed (Debian package prometheus)"
fi

stop_all
trap '[[ -z "${TEST_TMPDIR:-}" ]] && rm -rf "${TMP}"' EXIT
finish
