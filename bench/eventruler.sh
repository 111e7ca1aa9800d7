#!/usr/bin/env bash
# Cohort against AWS's Event Ruler (Maven Central, 1.8.1) on the same
# patterns and the same JSON events (issue 44). Outside ./test.sh: it needs
# Maven Central and a JDK (17; Debian's openjdk-17-jdk and maven).
#
#   bench/eventruler.sh [--rules=N] [--events=N] [--seed=S]
#                       [--time_rules=N] [--time_events=N] [--reps=N]
#                       [--out=DIR]
#
# 1. Compare (always): bench/eventruler_workload.py writes --rules patterns
#    (default 2000) and --events JSON events (default 200, with arrays);
#    Event Ruler (bench/eventruler/, RulerDriver match) answers every
#    event; a cohortd (-c opt, one partition) takes every pattern through
#    ParseFilter and Subscribe and every event as a JSON event, and
#    bench/eventruler_compare.py compares the answers pair by pair. Fails
#    (exit 1) on any disagreement that is not documented (the one
#    documented: anything-but across types, README's table).
# 2. Timing (with --time_rules=N): N patterns and --time_events events
#    (default 1000) of another seed; Event Ruler loads them and matches
#    every event --reps times (default 5), one thread (RulerDriver time);
#    Cohort lowers them through ParseFilter into a typed workload file and
#    matcher_bench loads it (one Index::AddBatch) and matches one event at
#    a time (MatchEvent), in cohorts of 1 and of 64, --reps times, one
#    thread.
# Writes DIR (default results/eventruler-<UTC time>/): the inputs,
# ruler.tsv, compare.txt, disagreements.tsv, and with timing time/ with
# ruler.txt, cohort-load.json, cohort.json, cohort.txt; and report.md.
set -euo pipefail
cd "$(dirname "$0")/.."

rules=2000
events=200
seed=44
time_rules=0
time_events=1000
reps=5
out=""
for arg in "$@"; do
  case "${arg}" in
    --rules=*) rules="${arg#*=}" ;;
    --events=*) events="${arg#*=}" ;;
    --seed=*) seed="${arg#*=}" ;;
    --time_rules=*) time_rules="${arg#*=}" ;;
    --time_events=*) time_events="${arg#*=}" ;;
    --reps=*) reps="${arg#*=}" ;;
    --out=*) out="${arg#*=}" ;;
    *) echo "eventruler.sh: unknown argument ${arg}" >&2; exit 2 ;;
  esac
done
out=${out:-results/eventruler-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "${out}"
out=$(cd "${out}" && pwd)

echo "==> building the Event Ruler driver (Maven) and cohortd, matcher_bench"
# (Debian's Maven prints terminal resets even with -q: its output goes to
# mvn.log, shown only on failure.)
(cd bench/eventruler && mvn -B -q package -DskipTests &&
  mvn -B -q dependency:build-classpath -Dmdep.outputFile=target/classpath.txt) \
  >"${out}/mvn.log" 2>&1 || { cat "${out}/mvn.log"; exit 1; }
ruler() {
  java -Xmx8g -cp "bench/eventruler/target/classes:$(cat bench/eventruler/target/classpath.txt)" \
    cohort.bench.RulerDriver "$@"
}
bazel build -c opt //service:cohortd //bench:matcher_bench \
  //bench:pattern_load >/dev/null 2>&1
readonly BIN=.bazel/out/k8-opt/bin
venv=${COHORT_VENV:-${HOME}/.cache/cohort/python-client-venv}
if [[ ! -x "${venv}/bin/python" ]]; then
  python3 -m venv "${venv}"
  "${venv}/bin/pip" install --quiet ./client/python
fi

source tools/testing/cohortd.sh
log="${out}/cohortd.log"
start_cohortd "${log}" "${BIN}/service/cohortd" --listen=127.0.0.1:0 --partitions=1
trap 'kill -TERM ${COHORTD_PID} 2>/dev/null' EXIT
target="127.0.0.1:${COHORTD_PORT}"

echo "==> compare: ${rules} patterns, ${events} events, seed ${seed}"
python3 bench/eventruler_workload.py --rules="${rules}" --events="${events}" \
  --seed="${seed}" --out="${out}"
ruler match "${out}/rules.jsonl" "${out}/events.jsonl" "${out}/ruler.tsv"
status=0
"${venv}/bin/python" bench/eventruler_compare.py --target="${target}" \
  --dir="${out}" >"${out}/compare.txt" || status=$?
cut -c1-300 "${out}/compare.txt"

if [[ "${time_rules}" -gt 0 ]]; then
  t="${out}/time"
  mkdir -p "${t}"
  echo "==> timing: ${time_rules} patterns, ${time_events} events, ${reps} reps"
  # (Without arrays: the timing path loads flattened events, events.txt.)
  python3 bench/eventruler_workload.py --rules="${time_rules}" \
    --events="${time_events}" --seed=$((seed + 1)) --arrays=0 --out="${t}"
  ruler time "${t}/rules.jsonl" "${t}/events.jsonl" "${time_rules}" "${reps}" \
    | tee "${t}/ruler.txt"
  "${BIN}/bench/pattern_load" --rules="${t}/rules.jsonl" \
    --events="${t}/events.txt" --workload_out="${t}/workload.txt" \
    --repetitions="${reps}" | tee "${t}/cohort-load.json"
  "${BIN}/bench/matcher_bench" --workload="${t}/workload.txt" \
    --cohort_max=event,1,64 --load_batch=0 --repetitions="${reps}" \
    --format=json >"${t}/cohort.json"
  "${BIN}/bench/matcher_bench" --workload="${t}/workload.txt" \
    --cohort_max=event,1,64 --load_batch=0 --repetitions="${reps}" \
    --format=text | tail -4 | tee "${t}/cohort.txt"
fi
{
  echo "# Cohort against Event Ruler 1.8.1"
  echo
  echo "Commit $(git rev-parse --short HEAD), $(nproc) cores, $(java -version 2>&1 | head -1)."
  echo "Command: \`bench/eventruler.sh $*\`."
  echo
  echo "## Answers"
  echo
  head -1 "${out}/compare.txt"
  if [[ "${time_rules}" -gt 0 ]]; then
    echo
    echo "## Timing, one thread"
    echo
    echo "Event Ruler: $(cat "${out}/time/ruler.txt")"
    echo
    echo "Cohort, loading (pattern_load): $(cat "${out}/time/cohort-load.json")"
    echo
    echo "Cohort, matching (matcher_bench):"
    echo
    sed 's/^/    /' "${out}/time/cohort.txt"
  fi
} >"${out}/report.md"
echo "report: ${out}/report.md"
exit "${status}"
