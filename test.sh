#!/usr/bin/env bash
# Builds and tests everything, then runs the tests again under
# AddressSanitizer + UndefinedBehaviorSanitizer (--config=asan: matcher,
# bench and service, end-to-end server tests included), then the concurrency
# tests that do not go through gRPC under ThreadSanitizer (--config=tsan: the
# engine's stages, queues, admission and listeners; the dictionaries; the
# stage profile; the metrics server; concurrent matcher readers). Debian's
# gRPC is not instrumented, so TSAN reports its internal hand-offs as races;
# the gRPC reactors are therefore covered by asan and the end-to-end tests,
# not by tsan.
#
# Then it smoke-tests ./run.sh, bench/experiment.sh --quick,
# bench/durability.sh --quick and bench/partition_work.sh --quick on small
# workloads and runs deploy/check.sh (tools/testing/scripts_test.sh; they
# build with -c opt and install valgrind and gnuplot through tools/setup.sh
# experiment; deploy/check.sh installs kubernetes-validate from PyPI into a
# cache venv, and skips the schema check if it cannot).
#
# Prints a line per test target and ends with exactly one line
#   tests: N passed, M failed
# counting test cases across both runs (see tools/test_summary.py for the
# rules: a target that does not build, or crashes, counts as failed). Copies
# each run's test.xml files to results/tests/<run>/. Exits non-zero if
# anything failed. Unknown arguments are ignored for now.
set -uo pipefail
cd "$(dirname "$0")"

for arg in "$@"; do
  echo "test.sh: ignoring argument ${arg}" >&2
done

tools/setup.sh || { echo "tests: 0 passed, 1 failed"; exit 1; }

readonly RESULTS=results/tests
rm -rf "${RESULTS}"
mkdir -p "${RESULTS}"
total_passed=0
total_failed=0

# run_tests NAME BAZEL_TEST_ARGS...: one `bazel test` run, summarised.
run_tests() {
  local name=$1
  shift
  local out="${RESULTS}/${name}"
  mkdir -p "${out}"
  echo "==> [${name}] bazel test $*"
  bazel test --keep_going --test_output=errors \
    --build_event_json_file="${out}/bep.json" "$@"
  local rc=$?
  echo "==> [${name}] results (bazel exit code ${rc}):"
  python3 tools/test_summary.py "${name}" "${out}/bep.json" "${rc}" "${out}" ||
    echo "1 1" >"${out}/counts"  # Could not summarise: count it as a failure.
  local passed failed
  read -r passed failed <"${out}/counts"
  total_passed=$((total_passed + passed))
  total_failed=$((total_failed + failed))
}

run_tests default //...

# The sanitizer run covers the packages that exist (they are added over time).
asan_patterns=()
for dir in matcher bench service client; do
  if [[ -f "${dir}/BUILD.bazel" || -f "${dir}/BUILD" ]]; then
    asan_patterns+=("//${dir}/...")
  fi
done
if ((${#asan_patterns[@]} > 0)); then
  run_tests asan --config=asan --build_tests_only "${asan_patterns[@]}"
else
  echo "==> [asan] skipped: no BUILD file in matcher/, bench/ or service/ yet"
fi

readonly TSAN_TARGETS=(
  //matcher:match_event_test
  //service:engine_test
  //service:journal_test
  //service:durability_test
  //service:interner_test
  //service:metrics_http_test
  //service:stage_profile_test
)
run_tests tsan --config=tsan --build_tests_only "${TSAN_TARGETS[@]}"

# The top-level scripts (./run.sh, bench/experiment.sh) call bazel, so they
# are checked here, not as Bazel tests; each check counts as one test case.
echo "==> [scripts] tools/testing/scripts_test.sh"
SCRIPTS_TEST_OUT="${RESULTS}/scripts" tools/testing/scripts_test.sh |
  tee "${RESULTS}/scripts.log"
read -r passed failed < <(sed -n 's/^scripts: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' \
  "${RESULTS}/scripts.log")
if [[ -z "${passed:-}" ]]; then passed=0 failed=1; fi
total_passed=$((total_passed + passed))
total_failed=$((total_failed + failed))

bazel shutdown >/dev/null 2>&1

echo "tests: ${total_passed} passed, ${total_failed} failed"
((total_failed == 0))
