#!/usr/bin/env bash
# Runs the matcher benchmark on the Fabret workload with 1M subscriptions,
# without and with cohort matching (cohort size 1 and 64), and prints a text
# table. Extra arguments go to the benchmark (later flags win), e.g.
#   ./run.sh --cohort_max=1,16,64,256
set -euo pipefail
cd "$(dirname "$0")"

tools/setup.sh

cmd=(bazel run -c opt //bench:matcher_bench --
  --preset=fabret-1m --cohort_max=1,64 --format=text "$@")
echo "run.sh: ${cmd[*]}" >&2
exec "${cmd[@]}"
