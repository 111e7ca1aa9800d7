#!/usr/bin/env bash
# The cost of cluster mode (issue 42, docs/DESIGN.md section 11), with real
# nats-server and cohortd processes on this machine:
#
#   bench/cluster_bench.sh [--subscriptions=N] [--reps=R] [--duration=S]
#                          [--partitions=P] [--bin=DIR] [--out=DIR]
#
# 1. Subscribe through the log: fabret-1m's N subscriptions (default
#    1,000,000) in batches of 1,000, 4 in flight, to node 1 of a 3-server
#    NATS cluster (R3, sync_interval: always) while it is the only cohortd
#    (so the figure is the log's cost plus one node's apply, as on a machine
#    per node), and to a plain single-node cohortd for comparison.
# 2. Catch-up: cohortd 2 and 3 (each with a local copy at log position 1)
#    start and replay the rest of the log (N subscriptions); the time from
#    start to health SERVING. Then join: once a shared snapshot of the N
#    subscriptions is published, cohortd 3 loses its data directory
#    (kill -9, rm -rf) and starts again, from the shared snapshot: the
#    time from start to SERVING.
# 3. Publish: fabret-1m events by PublishStream (2 clients, batches of 64,
#    window 4) against the single node and against cluster node 1, R
#    repetitions interleaved, events/s and latency p50/p99: matching stays
#    local, so the ratio should be near 1.
# 4. Deliveries: 10 Listen streams (subscribers s0..s9) on the publishing
#    node, then on another node, then none; the publish rate and the
#    deliveries per event give the cost of a local and of a cross-node
#    delivery (the listeners are `cohort listen` processes on this machine,
#    so their own cost is in both).
# 5. --cluster_read=latest: node 1 restarted with --cluster_read=applied
#    and with latest in turn, R times, the publish run of 3 each time: what
#    a publish pays to see every change acknowledged before it (one
#    stream-info round trip shared by the requests waiting for one).
#
# On this 2-core machine the three nodes, three NATS servers and the load
# share the cores: figures are per node, not a cluster's capacity
# (bench/RESULTS.md says what N nodes serve). Output: a report directory
# (default results/cluster-bench-<time>/) with results.md, the load JSON
# files and the processes' logs.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/testing/cohortd.sh

subscriptions=1000000
reps=3
duration=10
partitions=1
bin=""
out=""
for arg in "$@"; do
  case "${arg}" in
    --subscriptions=*) subscriptions=${arg#*=} ;;
    --reps=*) reps=${arg#*=} ;;
    --duration=*) duration=${arg#*=} ;;
    --partitions=*) partitions=${arg#*=} ;;
    --bin=*) bin=${arg#*=} ;;
    --out=*) out=${arg#*=} ;;
    *) sed -n '2,37p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
  esac
done
cohort_binaries "${bin}"
out=${out:-results/cluster-bench-$(date +%Y%m%d-%H%M%S)}
mkdir -p "${out}"
out=$(cd "${out}" && pwd)
export COHORT_CLUSTER_DIR="${out}/cluster"
export COHORTD="${COHORTD_BIN}"
COHORTD="$(cd "$(dirname "${COHORTD}")" && pwd)/$(basename "${COHORTD}")"

single_pid=""
listeners=()
cleanup() {
  for pid in "${listeners[@]}"; do kill "${pid}" 2>/dev/null || true; done
  [[ -n "${single_pid}" ]] && stop_cohortd "${single_pid}" || true
  deploy/local-cluster.sh down >/dev/null 2>&1 || true
}
trap cleanup EXIT

number() {  # number JSON KEY: a top-level number of a load JSON file
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"
}
latency() {  # latency JSON P: the publish latency percentile P (p50, p99)
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["latency_us"][sys.argv[2]])' "$1" "$2"
}

subscribe() {  # subscribe NAME ADDRESS: fabret-1m's subscriptions
  "${COHORT_BIN}" --server="$2" load --preset=fabret-1m \
    --subscriptions="${subscriptions}" --mode=none --subscribe_batch=1000 \
    --subscribe_in_flight=4 >"${out}/subscribe-$1.log" 2>&1
  sed -n 's/.*= \([0-9]*\) subscriptions\/s.*/\1/p' "${out}/subscribe-$1.log" | tail -1
}

publish() {  # publish NAME ADDRESS: a measured PublishStream run
  "${COHORT_BIN}" --server="$2" load --preset=fabret-1m --skip_load \
    --subscriptions="${subscriptions}" --mode=stream --clients=2 --batch=64 \
    --window=4 --warmup=2 --duration="${duration}" \
    --out="${out}/publish-$1.json" >"${out}/publish-$1.log" 2>&1
  echo "$(number "${out}/publish-$1.json" events_per_s) $(latency "${out}/publish-$1.json" p50) $(latency "${out}/publish-$1.json" p99)"
}

echo "cluster_bench: single node" >&2
start_cohortd "${out}/single.log" "${COHORTD_BIN}" --listen=127.0.0.1:0 \
  --partitions="${partitions}" --pin_cores=false || exit 1
single_pid=${COHORTD_PID}
single=127.0.0.1:${COHORTD_PORT}
single_subscribe=$(subscribe single "${single}")

echo "cluster_bench: 3-node cluster" >&2
deploy/local-cluster.sh up 3 --partitions="${partitions}" --pin_cores=false \
  --snapshot_every="${subscriptions}" \
  >"${out}/addresses" 2>"${out}/cluster-up.log"
mapfile -t nodes <"${out}/addresses"
# One record every node applies: nodes 2 and 3 then restart from their
# local copy (position 1) and replay the log, not the shared snapshot.
"${COHORT_BIN}" --server="${nodes[0]}" subscribe --subscriber=bench 'bench = 1' >/dev/null
sleep 1
deploy/local-cluster.sh kill cohortd 2 TERM
deploy/local-cluster.sh kill cohortd 3 TERM
log_subscribe=$(subscribe log "${nodes[0]}")

cluster_stat() {  # cluster_stat ADDRESS FIELD: a ClusterStats number
  "${COHORT_BIN}" --server="$1" stats --json | python3 -c 'import json,sys; print(int(json.load(sys.stdin).get("cluster",{}).get(sys.argv[1],0)))' "$2"
}
elapsed() {  # elapsed COMMAND...: runs it, prints its seconds
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >/dev/null
  t1=$(date +%s.%N)
  python3 -c "print(f'{$t1 - $t0:.2f}')"
}
catch_up=()
for i in 2 3; do
  catch_up+=("$(elapsed deploy/local-cluster.sh start cohortd "${i}")")
done
echo "cluster_bench: join from the shared snapshot" >&2
for _ in $(seq 600); do
  (($(cluster_stat "${nodes[0]}" snapshotPosition) > 0)) && break
  sleep 0.5
done
snapshot_position=$(cluster_stat "${nodes[0]}" snapshotPosition)
deploy/local-cluster.sh kill cohortd 3
rm -rf "${COHORT_CLUSTER_DIR}/cohortd-3-data"
join=$(elapsed deploy/local-cluster.sh start cohortd 3)
join_line=$(sed -n 's/.*\(started from the shared snapshot.*\)/\1/p' "${COHORT_CLUSTER_DIR}/cohortd-3.log")
cp "${COHORT_CLUSTER_DIR}/cohortd-3.log" "${out}/join-cohortd-3.log"

echo "cluster_bench: publish, ${reps} repetitions interleaved" >&2
single_runs=()
cluster_runs=()
for ((r = 1; r <= reps; r++)); do
  single_runs+=("$(publish "single-${r}" "${single}")")
  cluster_runs+=("$(publish "cluster-${r}" "${nodes[0]}")")
done
stop_cohortd "${single_pid}"
single_pid=""

echo "cluster_bench: deliveries" >&2
listen_on() {  # listen_on ADDRESS: 10 listeners, s0..s9
  local s
  for s in $(seq 0 9); do
    "${COHORT_BIN}" --server="$1" listen --subscriber="s${s}" >/dev/null 2>&1 &
    listeners+=($!)
  done
  sleep 2  # registered, and announced to the other nodes
}
stop_listeners() {
  for pid in "${listeners[@]}"; do kill "${pid}" 2>/dev/null || true; done
  listeners=()
  sleep 1
}
sent_before=$("${COHORT_BIN}" --server="${nodes[0]}" stats --json | python3 -c 'import json,sys; print(json.load(sys.stdin).get("cluster",{}).get("deliveriesSent",0))')
delivery_runs=()
for where in none local remote; do
  case "${where}" in
    local) listen_on "${nodes[0]}" ;;
    remote) listen_on "${nodes[1]}" ;;
  esac
  delivery_runs+=("${where} $(publish "deliveries-${where}" "${nodes[0]}") $("${COHORT_BIN}" --server="${nodes[0]}" stats --json | python3 -c '
import json, sys
s = json.load(sys.stdin)
print(sum(int(st.get("deliveries", 0)) for st in s.get("stages", [])),
      int(s.get("cluster", {}).get("deliveriesSent", 0)),
      int(s.get("eventsPublished", 0)))')")
  stop_listeners
done

echo "cluster_bench: --cluster_read, ${reps} repetitions interleaved" >&2
read_runs=()
for ((r = 1; r <= reps; r++)); do
  for mode in applied latest; do
    deploy/local-cluster.sh kill cohortd 1 TERM
    deploy/local-cluster.sh start cohortd 1 --cluster_read="${mode}" >/dev/null
    read_runs+=("${mode} $(publish "read-${mode}-${r}" "${nodes[0]}")")
  done
done

python3 - "${out}" "${subscriptions}" "${single_subscribe}" "${log_subscribe}" \
  "${catch_up[*]}" "${single_runs[*]}" "${cluster_runs[*]}" \
  "$(printf '%s;' "${delivery_runs[@]}")" "${join}" "${snapshot_position}" \
  "${join_line}" "$(printf '%s;' "${read_runs[@]}")" <<'EOF' | tee "${out}/results.md"
import statistics, sys
(out, n, single_sub, log_sub, catch_up, single, cluster, deliveries, join,
 snapshot_position, join_line, reads) = sys.argv[1:]
def runs(text):
    v = [float(x) for x in text.split()]
    return [v[i:i + 3] for i in range(0, len(v), 3)]
single, cluster = runs(single), runs(cluster)
def med(rows, k):
    return statistics.median(r[k] for r in rows)
def spread(rows, k):
    vals = [r[k] for r in rows]
    return f"{min(vals):.0f}-{max(vals):.0f}"
print(f"# Cluster bench ({int(n):,} fabret-1m subscriptions)\n")
print("| figure | value |")
print("|---|---|")
print(f"| Subscribe, single node (batches of 1,000) | {int(single_sub):,} subscriptions/s |")
print(f"| Subscribe through the R3 log, one applying node | {int(log_sub):,} subscriptions/s |")
print(f"| Catch-up of a restarted node from the log (nodes 2, 3) | {catch_up} s |")
print(f"| Join of a node without data from the shared snapshot (log position {snapshot_position}), start to SERVING | {join} s |")
print(f"\nThe joining node: {join_line}\n")
print()
print("| publish (PublishStream, 2 clients, batches of 64) | events/s median (range) | p50 us | p99 us |")
print("|---|---|---|---|")
for name, rows in (("single node", single), ("cluster node 1", cluster)):
    print(f"| {name} | {med(rows, 0):.0f} ({spread(rows, 0)}) | {med(rows, 1):.0f} | {med(rows, 2):.0f} |")
ratios = [c[0] / s[0] for s, c in zip(single, cluster)]
print(f"\ncluster / single, per interleaved pair: {', '.join(f'{r:.3f}' for r in ratios)}; median {statistics.median(ratios):.3f}\n")
print("| listeners (s0..s9) | events/s | deliveries/event |")
print("|---|---|---|")
rows = {}
prev_del = prev_sent = prev_events = 0
for line in filter(None, deliveries.split(";")):
    where, eps, p50, p99, delivered, sent, events = line.split()
    rows[where] = (float(eps), int(delivered) - prev_del, int(sent) - prev_sent,
                   int(events) - prev_events)
    prev_del, prev_sent, prev_events = int(delivered), int(sent), int(events)
for where, (eps, d, s, e) in rows.items():
    per = (s if where == "remote" else d) / e if e else 0
    print(f"| {where} | {eps:.0f} | {per:.2f} |")
if {"none", "local", "remote"} <= rows.keys():
    base = 1e6 / rows["none"][0]
    for where in ("local", "remote"):
        eps, d, s, e = rows[where]
        per = (s if where == "remote" else d) / e if e else 0
        if per:
            print(f"\n{where} delivery: {(1e6 / eps - base) / per:.2f} us of publishing node time per delivery")
by_mode = {"applied": [], "latest": []}
for line in filter(None, reads.split(";")):
    mode, eps, p50, p99 = line.split()
    by_mode[mode].append((float(eps), float(p50), float(p99)))
if by_mode["applied"] and by_mode["latest"]:
    print("\n| node 1, --cluster_read | events/s median (range) | p50 us | p99 us |")
    print("|---|---|---|---|")
    for mode, rows in by_mode.items():
        print(f"| {mode} | {med(rows, 0):.0f} ({spread(rows, 0)}) | {med(rows, 1):.0f} | {med(rows, 2):.0f} |")
    pairs = [l[0] / a[0] for a, l in zip(by_mode["applied"], by_mode["latest"])]
    print(f"\nlatest / applied, per interleaved pair: {', '.join(f'{r:.3f}' for r in pairs)}; median {statistics.median(pairs):.3f}")
EOF
echo "cluster_bench: report in ${out}" >&2
