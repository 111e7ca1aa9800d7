#!/bin/bash
# Upper bounds for access by pairs of equalities on fabret-1m (see README).
#   bounds.sh BIN_DIR [ROUNDS]    # BIN_DIR holds bench/matcher_bench
# Writes /tmp/bounds/*.txt (the workload files) and prints each file's
# load line and its MatchEvent, cohort 1 and cohort 64 lines, ROUNDS times.
set -euo pipefail
bin="$1/bench/matcher_bench"; rounds="${2:-2}"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p /tmp/bounds
w=/tmp/bounds
[[ -s "${w}/fab.txt" ]] || "$1/bench/workload" --preset=fabret-1m \
  --events=6400 --out="${w}/fab.txt"
python3 "${here}/split.py" "${w}/fab.txt" "${w}/fab"
python3 "${here}/pairify.py" "${w}/fab.txt" "${w}/fab-pair.txt"
for r in $(seq "${rounds}"); do
  for f in fab fab-le1 fab-0 fab-1 fab-pair; do
    "${bin}" --workload="${w}/${f}.txt" --cohort_max=event,1,64 \
      --repetitions=5 --load_batch=0 --format=text 2>&1 |
      grep -E 'loaded|MatchEvent|cohort_max' | sed "s/^/${f}: /"
  done
done
