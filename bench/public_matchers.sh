#!/usr/bin/env bash
# Cohort's matcher against the public interval matchers TAMA and REIN (the
# xizeroplus matching-algorithm collection, MIT), one thread each, on the
# same subscriptions and events, held to the same match count per event.
#
#   bench/public_matchers.sh --src=DIR [--presets=LIST] [--events=N]
#                            [--subscriptions=N] [--ne=POLICY] [--reps=N]
#                            [--cohorts=LIST] [--load_batch=N] [--out=DIR]
#                            [--quick]
#
# --src: a checkout of github.com/xizeroplus/matching-algorithm (its Tama/
# and Rein/ folders are compiled here, at -O3 -march=native, with
# bench/public_driver.cc; nothing of it enters this repository).
# For each preset (default fabret-1m,selective-1m,ranges-1m; the first
# --events=2000 events, as issue 18's table):
#   1. //bench:interval_export keeps what intervals can express (--ne:
#      drop_subscriptions leaves out subscriptions with an NE, as the issue's
#      "fabret-1m without NE" row; drop_predicates leaves out only the NE
#      predicates; the default, auto, is drop_subscriptions except on
#      ranges-1m, where five in six subscriptions hold an NE) and writes the
#      kept workload and its rank-interval form with Cohort's per-event match
#      counts;
#   2. matcher_bench runs Cohort on the kept workload (MatchEvent and the
#      --cohorts sizes, default event,1,4,16,64);
#   3. each public driver loads the intervals, matches every event alone and
#      exits 3 if any event's count differs from Cohort's.
# Writes DIR (default results/public-<UTC time>[-quick]/): meta.txt,
# <preset>.export.json, <preset>.cohort.json, <preset>.tama.json,
# <preset>.rein.json and report.md (tools/public_matchers_report.py).
# --load_batch=N: Cohort loads the kept workload with matcher_bench
# --load_batch=N. Default 0: the whole file in one Index::AddBatch, as each
# public matcher builds its structure from the whole file (reports before
# 2026-11-26's issue 18 step 10 loaded one Index::Add at a time: 1).
# --quick: 20,000 subscriptions, 300 events, 1 repetition.
set -euo pipefail
cd "$(dirname "$0")/.."

src=""
presets="fabret-1m,selective-1m,ranges-1m"
events=2000
subs=-1
ne=auto
reps=3
cohorts="event,1,4,16,64"
load_batch=0
out=""
quick=0
for arg in "$@"; do
  case "${arg}" in
    --src=*) src="${arg#*=}" ;;
    --presets=*) presets="${arg#*=}" ;;
    --events=*) events="${arg#*=}" ;;
    --subscriptions=*) subs="${arg#*=}" ;;
    --ne=*) ne="${arg#*=}" ;;
    --reps=*) reps="${arg#*=}" ;;
    --cohorts=*) cohorts="${arg#*=}" ;;
    --load_batch=*) load_batch="${arg#*=}" ;;
    --out=*) out="${arg#*=}" ;;
    --quick) quick=1 ;;
    *) echo "public_matchers.sh: unknown argument ${arg}" >&2; exit 2 ;;
  esac
done
if [[ -z "${src}" || ! -f "${src}/Tama/tama.cpp" || ! -f "${src}/Rein/rein.cpp" ]]; then
  echo "public_matchers.sh: --src=DIR must name a checkout of" \
    "xizeroplus/matching-algorithm (DIR/Tama/tama.cpp, DIR/Rein/rein.cpp)" >&2
  exit 2
fi
case "${ne}" in
  auto | drop_subscriptions | drop_predicates) ;;
  *) echo "public_matchers.sh: --ne must be auto, drop_subscriptions or drop_predicates" >&2
     exit 2 ;;
esac
if ((quick)); then
  subs=20000
  events=300
  reps=1
fi
[[ -n "${out}" ]] ||
  out="results/public-$(date -u +%Y%m%dT%H%M%SZ)$( ((quick)) && echo -quick)"
mkdir -p "${out}/bin"

tools/setup.sh
bazel build -c opt //bench:interval_export //bench:matcher_bench
bin=.bazel/out/k8-opt/bin/bench
flags=(-O3 -march=native -std=c++17 -w)
g++ "${flags[@]}" -DCOHORT_PUBLIC_TAMA -I"${src}/Tama" bench/public_driver.cc \
  "${src}/Tama/tama.cpp" -o "${out}/bin/tama_driver"
g++ "${flags[@]}" -DCOHORT_PUBLIC_REIN -I"${src}/Rein" bench/public_driver.cc \
  "${src}/Rein/rein.cpp" -o "${out}/bin/rein_driver"

{
  echo "date: $(date -u +%FT%TZ)"
  echo "machine: $(nproc) CPUs, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (modified)')"
  echo "public matchers: $(git -C "${src}" rev-parse --short HEAD 2>/dev/null || echo "${src}, not a git checkout"); drivers built with g++ ${flags[*]}"
  echo "command: bench/public_matchers.sh $*"
  echo "reps: ${reps}; Cohort paths: ${cohorts}; one thread"
} >"${out}/meta.txt"

tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT
for preset in ${presets//,/ }; do
  policy="${ne}"
  if [[ "${policy}" == auto ]]; then
    policy=drop_subscriptions
    [[ "${preset}" == ranges-1m ]] && policy=drop_predicates
  fi
  echo "public_matchers: ${preset} (--ne=${policy})"
  "${bin}/interval_export" --preset="${preset}" --subscriptions="${subs}" \
    --events="${events}" --ne="${policy}" --out_workload="${tmp}/w.txt" \
    --out_intervals="${tmp}/w.intervals" >"${out}/${preset}.export.json"
  "${bin}/matcher_bench" --workload="${tmp}/w.txt" --cohort_max="${cohorts}" \
    --repetitions="${reps}" --load_batch="${load_batch}" --format=json \
    >"${out}/${preset}.cohort.json"
  rm -f "${tmp}/w.txt"
  for m in tama rein; do
    if ! "${out}/bin/${m}_driver" "${tmp}/w.intervals" "${reps}" \
        >"${out}/${preset}.${m}.json"; then
      echo "public_matchers: ${m} on ${preset} failed or disagreed with Cohort:" >&2
      cat "${out}/${preset}.${m}.json" >&2
      exit 1
    fi
  done
  rm -f "${tmp}/w.intervals"
done
python3 tools/public_matchers_report.py "${out}" >"${out}/report.md"
cat "${out}/report.md"
