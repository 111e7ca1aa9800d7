#!/usr/bin/env bash
# Scale-out against scale-up on one many-core machine (issue 42): K cohortd
# nodes of C partitions each, every node pinned to its own C cores, against
# one cohortd of K x C partitions, on fabret-1m.
#
#   bench/cluster_scale.sh [--nodes=4] [--partitions=4] [--clients=N]
#                          [--subscriptions=N] [--duration=S] [--reps=R]
#                          [--bin=DIR] [--out=DIR]
#
# Both setups get the same subscriptions (through the log for the cluster)
# and the same load: --clients PublishStream clients (default 2 x K x C /
# 4), batches of 64, window 4; the cluster's clients use the cluster target
# (round robin over the nodes). NATS servers and the load driver run on the
# cores left over (taskset), so the machine needs at least K x C + 2 CPUs;
# the script refuses otherwise. Repetitions are interleaved. Prints a table
# of events/s (median and range) and the ratio; writes it and the load JSON
# files to the report directory (default results/cluster-scale-<time>/).
#
# On a 16-core device machine (DEVELOPERS.md: tools/bundle.sh carries the
# binaries): bench/cluster_scale.sh --bin=bundle --nodes=4 --partitions=3
# leaves 4 cores for NATS and the clients. With fewer CPUs than that nothing
# is pinned and the run only checks the script (on this 2-core machine:
# --nodes=2 --partitions=1 --subscriptions=200000 --reps=1 --duration=3).
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/testing/cohortd.sh

nodes=4
partitions=4
clients=""
subscriptions=1000000
duration=10
reps=3
bin=""
out=""
for arg in "$@"; do
  case "${arg}" in
    --nodes=*) nodes=${arg#*=} ;;
    --partitions=*) partitions=${arg#*=} ;;
    --clients=*) clients=${arg#*=} ;;
    --subscriptions=*) subscriptions=${arg#*=} ;;
    --duration=*) duration=${arg#*=} ;;
    --reps=*) reps=${arg#*=} ;;
    --bin=*) bin=${arg#*=} ;;
    --out=*) out=${arg#*=} ;;
    *) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
  esac
done
cores=$((nodes * partitions))
cpus=$(nproc)
shared=0
if ((cpus < cores + 1)); then
  echo "cluster_scale.sh: ${nodes} x ${partitions} partitions need $((cores + 1)) CPUs to pin; this machine has ${cpus}: everything shares every CPU (a check that the script runs, not a measurement)" >&2
  shared=1
fi
clients=${clients:-$(((cores + 1) / 2))}
cohort_binaries "${bin}"
out=${out:-results/cluster-scale-$(date +%Y%m%d-%H%M%S)}
mkdir -p "${out}"
out=$(cd "${out}" && pwd)
export COHORT_CLUSTER_DIR="${out}/cluster"
COHORTD_ABS="$(cd "$(dirname "${COHORTD_BIN}")" && pwd)/$(basename "${COHORTD_BIN}")"
if ((shared)); then
  readonly spare="0-$((cpus - 1))"
else
  readonly spare="${cores}-$((cpus - 1))"
fi

single_pid=""
cleanup() {
  [[ -n "${single_pid}" ]] && stop_cohortd "${single_pid}" || true
  deploy/local-cluster.sh down >/dev/null 2>&1 || true
}
trap cleanup EXIT

# Node i (1..K) runs on cores (i-1)*C .. i*C-1: a wrapper pins it there.
wrapper="${out}/cohortd-pinned"
cat >"${wrapper}" <<EOF
#!/usr/bin/env bash
node=1
for a in "\$@"; do
  case "\${a}" in --cluster_node=node-*) node=\${a#--cluster_node=node-} ;; esac
done
first=\$(((node - 1) * ${partitions}))
if ((${shared})); then exec "${COHORTD_ABS}" "\$@"; fi
exec taskset -c "\${first}-\$((first + ${partitions} - 1))" "${COHORTD_ABS}" "\$@"
EOF
chmod +x "${wrapper}"

publish() {  # publish NAME TARGET
  taskset -c "${spare}" "${COHORT_BIN}" --server="$2" load --preset=fabret-1m \
    --skip_load --subscriptions="${subscriptions}" --mode=stream \
    --clients="${clients}" --batch=64 --window=4 --warmup=2 \
    --duration="${duration}" --out="${out}/$1.json" >"${out}/$1.log" 2>&1
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["events_per_s"])' "${out}/$1.json"
}

echo "cluster_scale: one node of ${cores} partitions" >&2
single_cpus="0-$((cores - 1))"
((shared)) && single_cpus=${spare}
start_cohortd "${out}/single.log" taskset -c "${single_cpus}" "${COHORTD_ABS}" \
  --listen=127.0.0.1:0 --partitions="${cores}" || exit 1
single_pid=${COHORTD_PID}
single=127.0.0.1:${COHORTD_PORT}
"${COHORT_BIN}" --server="${single}" load --preset=fabret-1m \
  --subscriptions="${subscriptions}" --mode=none --subscribe_batch=1000 \
  >"${out}/subscribe-single.log" 2>&1

echo "cluster_scale: ${nodes} nodes of ${partitions} partitions" >&2
# From the bundle (tools/bundle.sh copies it) or PATH.
NATS_SERVER=$(command -v nats-server || true)
if [[ -n "${bin}" && -x "${bin}/nats-server" ]]; then
  NATS_SERVER=$(cd "${bin}" && pwd)/nats-server
fi
[[ -n "${NATS_SERVER}" ]] || { echo "cluster_scale.sh: no nats-server" >&2; exit 1; }
export NATS_SERVER
# The NATS servers on the spare cores: local-cluster.sh starts them with
# NATS_SERVER, so wrap it too.
nats_wrapper="${out}/nats-pinned"
printf '#!/usr/bin/env bash\nexec taskset -c %s %s "$@"\n' "${spare}" "${NATS_SERVER}" >"${nats_wrapper}"
chmod +x "${nats_wrapper}"
NATS_SERVER="${nats_wrapper}" COHORTD="${wrapper}" \
  deploy/local-cluster.sh up "${nodes}" --partitions="${partitions}" \
  >"${out}/addresses" 2>"${out}/cluster-up.log"
target=$(paste -sd, "${out}/addresses")
"${COHORT_BIN}" --server="$(head -1 "${out}/addresses")" load --preset=fabret-1m \
  --subscriptions="${subscriptions}" --mode=none --subscribe_batch=1000 \
  >"${out}/subscribe-cluster.log" 2>&1
sleep 2  # every node applies the log

single_runs=()
cluster_runs=()
for ((r = 1; r <= reps; r++)); do
  single_runs+=("$(publish "single-${r}" "${single}")")
  cluster_runs+=("$(publish "cluster-${r}" "${target}")")
done

python3 - "${nodes}" "${partitions}" "${single_runs[*]}" "${cluster_runs[*]}" <<'EOF' | tee "${out}/results.md"
import statistics, sys
k, c, single, cluster = sys.argv[1:]
single = [float(x) for x in single.split()]
cluster = [float(x) for x in cluster.split()]
k, c = int(k), int(c)
print(f"| setup | events/s median | range |")
print("|---|---|---|")
print(f"| 1 node x {k * c} partitions | {statistics.median(single):.0f} | {min(single):.0f}-{max(single):.0f} |")
print(f"| {k} nodes x {c} partitions | {statistics.median(cluster):.0f} | {min(cluster):.0f}-{max(cluster):.0f} |")
ratios = [b / a for a, b in zip(single, cluster)]
print(f"\ncluster / single per interleaved pair: {', '.join(f'{r:.2f}' for r in ratios)}")
EOF
echo "cluster_scale: report in ${out}" >&2
