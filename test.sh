#!/usr/bin/env bash
# Builds and tests everything, then runs the tests again under
# AddressSanitizer + UndefinedBehaviorSanitizer (--config=asan: matcher,
# filter, workload, bench, service, client and the end-to-end tests of
# e2e/), then the concurrency
# tests that do not go through gRPC under ThreadSanitizer (--config=tsan: the
# engine's stages, queues, admission and listeners; the dictionaries; the
# stage profile; the metrics server; concurrent matcher readers). Debian's
# gRPC is not instrumented, so TSAN reports its internal hand-offs as races;
# the gRPC reactors are therefore covered by asan and the end-to-end tests,
# not by tsan.
#
# Then it smoke-tests ./run.sh, bench/experiment.sh --quick,
# bench/durability.sh --quick, bench/partition_work.sh --quick and
# bench/matcher_presets.sh --quick on small workloads and runs deploy/check.sh (tools/testing/scripts_test.sh; they
# build with -c opt and install valgrind and gnuplot through tools/setup.sh
# experiment; deploy/check.sh installs kubernetes-validate from PyPI into a
# cache venv, and skips the schema check if it cannot; the observability
# files are checked with promtool and Compose v2, built once from the Go
# module proxy).
#
# Then it tests the Python client (client/python: a venv of its own, mypy
# --strict and pytest against a real cohortd; tools/testing/
# python_client_test.sh).
#
# Then each libFuzzer target fuzzes for FUZZ_SECONDS from its seed corpus
# (bench/fuzz.sh, built with clang; the corpora themselves are replayed by
# the *_fuzzer tests in both Bazel runs above), the layering is checked
# (tools/check_layers.sh), every Markdown link is checked
# (tools/check_links.py), and clang-tidy checks the C++ files
# changed by the newest commit (tools/tidy.sh).
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
# Seconds each libFuzzer target runs (bench/fuzz.sh --minutes=N runs longer).
readonly FUZZ_SECONDS=20
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

# add_counts NAME LOG: adds the counts of LOG's "NAME: N passed, M failed"
# line to the totals; a log without that line counts as one failure.
add_counts() {
  local passed failed
  read -r passed failed < <(sed -n "s/^$1: \\([0-9]*\\) passed, \\([0-9]*\\) failed\$/\\1 \\2/p" "$2")
  if [[ -z "${passed:-}" ]]; then passed=0 failed=1; fi
  total_passed=$((total_passed + passed))
  total_failed=$((total_failed + failed))
}

run_tests default //...

# The sanitizer run covers the packages that exist (they are added over time).
asan_patterns=()
for dir in matcher filter workload bench service client e2e; do
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
  //matcher:match_event_concurrency_test
  //matcher:partitioned_index_test
  //service/stages:admission_test
  //service/stages:cohort_pipeline_test
  //service/stages:engine_test
  //service/storage:journal_test
  //service/storage:durability_test
  //service/model:interner_test
  //service/observability:latency_histogram_test
  //service/observability:metrics_http_test
  //service/observability:stage_profile_test
)
run_tests tsan --config=tsan --build_tests_only "${TSAN_TARGETS[@]}"

# The top-level scripts (./run.sh, bench/experiment.sh) call bazel, so they
# are checked here, not as Bazel tests; each check counts as one test case.
echo "==> [scripts] tools/testing/scripts_test.sh"
SCRIPTS_TEST_OUT="${RESULTS}/scripts" tools/testing/scripts_test.sh |
  tee "${RESULTS}/scripts.log"
add_counts scripts "${RESULTS}/scripts.log"

# The Python client (client/python): installed into a venv of its own,
# mypy --strict, then its pytest suite against a real -c opt cohortd
# (tools/testing/python_client_test.sh); every case counts.
echo "==> [python] tools/testing/python_client_test.sh"
if bazel build -c opt //service:cohortd >"${RESULTS}/python-build.log" 2>&1; then
  PYTHON_CLIENT_TEST_OUT="${RESULTS}/python" \
    COHORTD=.bazel/out/k8-opt/bin/service/cohortd \
    tools/testing/python_client_test.sh | tee "${RESULTS}/python.log"
else
  tail -20 "${RESULTS}/python-build.log"
  echo "python: 0 passed, 1 failed" | tee "${RESULTS}/python.log"
fi
add_counts python "${RESULTS}/python.log"

# Fuzzing: the corpus replays ran above as tests (//...:*_fuzzer, plain
# and under asan); here each libFuzzer target fuzzes for a short while from
# its seeds (bench/fuzz.sh; clang, its own Bazel output base). Each target
# counts as one test case.
echo "==> [fuzz] bench/fuzz.sh --seconds=${FUZZ_SECONDS}"
bench/fuzz.sh --seconds="${FUZZ_SECONDS}" --out="${RESULTS}/fuzz" |
  tee "${RESULTS}/fuzz.log"
add_counts fuzz "${RESULTS}/fuzz.log"

# Every dependency points down the layers (docs/DESIGN.md section 10), also
# through middle packages (tools/check_layers.sh; Bazel visibility refuses
# direct ones at build time). Each rule counts as one test case.
echo "==> [layers] tools/check_layers.sh"
tools/check_layers.sh | tee "${RESULTS}/layers.log"
add_counts layers "${RESULTS}/layers.log"

# Every relative link in every Markdown file resolves, anchors included
# (tools/check_links.py). One test case.
echo "==> [links] tools/check_links.py"
if python3 tools/check_links.py | tee "${RESULTS}/links.log" | tail -1; then
  total_passed=$((total_passed + 1))
else
  grep -v '^links:' "${RESULTS}/links.log"
  total_failed=$((total_failed + 1))
fi

# Static checks: clang-tidy (.clang-tidy) on the C++ files changed by the
# newest commit and any uncommitted change (tools/tidy.sh). One test case.
echo "==> [tidy] tools/tidy.sh"
if tools/tidy.sh; then
  total_passed=$((total_passed + 1))
else
  total_failed=$((total_failed + 1))
fi

bazel shutdown >/dev/null 2>&1

echo "tests: ${total_passed} passed, ${total_failed} failed"
((total_failed == 0))
