#!/usr/bin/env bash
# Runs the libFuzzer targets (tools/fuzz/README.md) for a while each.
#
#   bench/fuzz.sh [--minutes=N | --seconds=N] [--targets=A,B] [--merge]
#                 [--out=DIR]
#
# Builds //matcher:index_fuzzer, //service/model:validation_fuzzer,
# //service/storage:store_fuzzer and //service/model:parse_fuzzer with
# --config=fuzz (clang, libFuzzer, ASan + UBSan) in an output base of their
# own, since switching the C++ compiler re-configures Bazel's toolchain; then fuzzes each target for
# the given time (default 5 minutes; ./test.sh runs --seconds=20), starting
# from its committed seed corpus. New inputs go to DIR/<target>/corpus, not to
# the seeds; --merge adds those that reach new coverage to the committed seed
# folder (libFuzzer -merge=1) afterwards.
#
# A crash, leak, sanitizer report, timeout (over 10 s per input) or memory
# blow-up (over 2 GB) fails the target; libFuzzer saves the input as
# DIR/<target>/crash-* (or leak-*, timeout-*, oom-*) and the script prints how
# to replay it. Writes DIR/summary.md (a table: seconds run, inputs executed,
# executions per second, edges covered of those instrumented, features,
# corpus size, result) and DIR/<target>/log. DIR defaults to
# results/fuzz-<UTC time>. Ends with one line `fuzz: N passed, M failed` and
# exits non-zero if any target failed.
set -uo pipefail
cd "$(dirname "$0")/.."

readonly ALL_TARGETS=(
  //matcher:index_fuzzer
  //service/model:validation_fuzzer
  //service/storage:store_fuzzer
  //service/model:parse_fuzzer
)
# Slower than this per input is a hang, not a slow input: the targets' inputs
# are at most a few KB.
readonly TIMEOUT_S=10
readonly RSS_LIMIT_MB=2048

seconds=300
out=""
merge=0
targets=("${ALL_TARGETS[@]}")
for arg in "$@"; do
  case "${arg}" in
    --minutes=*) seconds=$((${arg#*=} * 60)) ;;
    --seconds=*) seconds="${arg#*=}" ;;
    --merge) merge=1 ;;
    --out=*) out="${arg#*=}" ;;
    --targets=*)
      IFS=, read -r -a names <<<"${arg#*=}"
      targets=()
      for name in "${names[@]}"; do
        found=""
        for t in "${ALL_TARGETS[@]}"; do
          [[ "${t}" == "${name}" || "${t##*:}" == "${name}" ]] && found="${t}"
        done
        if [[ -z "${found}" ]]; then
          echo "fuzz.sh: unknown target ${name} (known: ${ALL_TARGETS[*]})" >&2
          exit 2
        fi
        targets+=("${found}")
      done
      ;;
    *) echo "fuzz.sh: unknown argument ${arg}" >&2; exit 2 ;;
  esac
done
if ! [[ "${seconds}" =~ ^[0-9]+$ ]] || ((seconds < 1)); then
  echo "fuzz.sh: the time must be a whole number of seconds (or minutes) >= 1" >&2
  exit 2
fi
[[ -n "${out}" ]] || out="results/fuzz-$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "${out}"
out="$(cd "${out}" && pwd)"

tools/setup.sh || exit 1

# One output base per checkout, beside Bazel's default ones.
output_base="${HOME}/.cache/cohort-fuzz/$(pwd | sha256sum | cut -c1-16)"
fuzz_bazel() { bazel --output_base="${output_base}" "$@"; }
echo "==> building ${targets[*]} with --config=fuzz"
# ld.gold warns about every ASan helper symbol in a static link; keep the
# log, show it only on failure.
if ! fuzz_bazel build --config=fuzz --symlink_prefix=.bazel/fuzz- "${targets[@]}" \
  >"${out}/build.log" 2>&1; then
  grep -v 'Cannot export local symbol' "${out}/build.log" | tail -40
  echo "fuzz.sh: the fuzz build failed (log: ${out}/build.log)" >&2
  echo "fuzz: 0 passed, ${#targets[@]} failed"
  exit 1
fi
bin_dir="$(fuzz_bazel info --config=fuzz bazel-bin 2>/dev/null)"

passed=0
failed=0
{
  echo "# Fuzzing, ${seconds} s per target"
  echo
  echo "Commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)," \
    "$(nproc) cores, $(clang --version | head -1)."
  echo "Command: \`bench/fuzz.sh --seconds=${seconds}\`."
  echo "Edges: libFuzzer's \`cov\`, edges reached of those instrumented in"
  echo "the binary (which includes code the target cannot reach)."
  echo
  echo "| target | seconds | inputs run | exec/s | edges | features | corpus | result |"
  echo "|---|---:|---:|---:|---|---:|---:|---|"
} >"${out}/summary.md"

for target in "${targets[@]}"; do
  package="${target#//}"
  package="${package%%:*}"
  name="${target##*:}"
  binary="${bin_dir}/${package}/${name}"
  seeds="${package}/testdata/${name}"
  work="${out}/${name}"
  mkdir -p "${work}/corpus"
  echo "==> ${name}: ${seconds} s from ${seeds}"
  start=${SECONDS}
  "${binary}" -max_total_time="${seconds}" -timeout="${TIMEOUT_S}" \
    -rss_limit_mb="${RSS_LIMIT_MB}" -print_final_stats=1 \
    -artifact_prefix="${work}/" "${work}/corpus" "${seeds}" \
    >"${work}/log" 2>&1
  rc=$?
  elapsed=$((SECONDS - start))
  runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "${work}/log" | tail -1)"
  rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "${work}/log" | tail -1)"
  total="$(sed -n 's/.*Loaded 1 modules *(\([0-9]*\) inline 8-bit counters).*/\1/p' "${work}/log" | head -1)"
  last="$(grep -E '^#[0-9]+' "${work}/log" | tail -1)"
  cov="$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"${last}")"
  ft="$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"${last}")"
  corp="$(sed -n 's/.* corp: \([0-9]*\)\/.*/\1/p' <<<"${last}")"
  artifact="$(ls "${work}"/{crash,leak,timeout,oom,slow-unit}-* 2>/dev/null | head -1)"
  if ((rc == 0)) && [[ -z "${artifact}" ]]; then
    result="clean"
    passed=$((passed + 1))
    echo "ok: ${name} ran clean: ${runs:-?} inputs, ${rate:-?}/s, cov ${cov:-?}/${total:-?}, ft ${ft:-?}"
  else
    result="FAILED (exit ${rc})"
    failed=$((failed + 1))
    echo "FAILED: ${name} (exit ${rc}); from ${work}/log:"
    grep -E '_fuzzer: |ERROR|SUMMARY|runtime error' "${work}/log" | head -8
    if [[ -n "${artifact}" ]]; then
      result="${result}: $(basename "${artifact}")"
      echo "  input saved as ${artifact}; replay it with"
      echo "    bazel run //${package}:${name} -- ${artifact}"
      echo "  and, once fixed, commit it under ${seeds}/ as a regression input"
    fi
  fi
  echo "| ${name} | ${elapsed} | ${runs:-?} | ${rate:-?} | ${cov:-?} of ${total:-?} | ${ft:-?} | ${corp:-?} | ${result} |" \
    >>"${out}/summary.md"
  if ((merge)); then
    "${binary}" -merge=1 -timeout="${TIMEOUT_S}" -rss_limit_mb="${RSS_LIMIT_MB}" \
      "${seeds}" "${work}/corpus" >"${work}/merge.log" 2>&1 ||
      echo "fuzz.sh: merging into ${seeds} failed (${work}/merge.log)" >&2
    echo "   merged: ${seeds} now holds $(ls "${seeds}" | wc -l) inputs"
  fi
done

fuzz_bazel shutdown >/dev/null 2>&1
echo "summary: ${out}/summary.md"
echo "fuzz: ${passed} passed, ${failed} failed"
((failed == 0))
