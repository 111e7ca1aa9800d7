#!/usr/bin/env bash
# The long variants of the cluster's agreement and fault tests (issue 42,
# docs/DESIGN.md section 11.6), with real nats-server and cohortd processes:
#
#   bench/cluster_faults.sh [--bin=DIR] [--out=DIR]
#
# Runs client/python/tests/test_cluster.py with COHORT_CLUSTER_LONG=1 on a
# 3-node cluster (nodes with --data_dir and --snapshot_every=300, so shared
# snapshots are published and the log trimmed throughout):
#   - agreement: 1,000 rounds of randomized subscribes and unsubscribes
#     spread over the nodes, each followed by 100 events checked against the
#     brute-force reference, then 300 events on every node: over 100k
#     whole-event checks;
#   - kill -9 of a cohortd 20 times (nodes in turn) under subscribe and
#     publish load: subscribes and publishes go on through the other nodes,
#     the node restarts from its copy plus the log, and every acknowledged
#     subscription is then on every node;
#   - and the rest of the file (read your writes, retries, deliveries, a
#     NATS server killed, a node cut off, all NATS restarted, a node that
#     joins from the shared snapshot) once.
# Needs the Python client's venv (tools/testing/python_client_test.sh, which
# ./test.sh runs, makes it). Output: a report directory (default
# results/cluster-faults-<time>/) with results.md and pytest's output.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/testing/cohortd.sh

bin=""
out=""
for arg in "$@"; do
  case "${arg}" in
    --bin=*) bin=${arg#*=} ;;
    --out=*) out=${arg#*=} ;;
    *) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
  esac
done
cohort_binaries "${bin}"
readonly PY="${XDG_CACHE_HOME:-$HOME/.cache}/cohort/python-client-venv/bin/python"
if [[ ! -x "${PY}" ]]; then
  echo "cluster_faults: no Python client venv at ${PY}; run tools/testing/python_client_test.sh first" >&2
  exit 1
fi
out=${out:-results/cluster-faults-$(date +%Y%m%d-%H%M%S)}
mkdir -p "${out}"
out=$(cd "${out}" && pwd)
COHORTD="$(cd "$(dirname "${COHORTD_BIN}")" && pwd)/$(basename "${COHORTD_BIN}")"
export COHORTD COHORT_CLUSTER_LONG=1

start=$(date +%s)
status=0
(cd client/python && "${PY}" -m pytest -q -s -p no:cacheprovider \
  --basetemp="${out}/pytest" tests/test_cluster.py) 2>&1 |
  tee "${out}/pytest.log" || status=$?
seconds=$(($(date +%s) - start))

{
  echo "# Cluster faults, long variants"
  echo
  echo "commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' (modified)'), $(nproc) CPUs, ${seconds} s"
  echo
  grep -oE '(agreement:|kill -9 x).*' "${out}/pytest.log" | sed 's/^/- /' || true
  echo "- pytest: $(grep -E '[0-9]+ (passed|failed)' "${out}/pytest.log" | tail -1)"
} | tee "${out}/results.md"
echo "cluster_faults: report in ${out}" >&2
exit "${status}"
