#!/usr/bin/env bash
# Runs clang-tidy (the checks in .clang-tidy) on the project's C++ sources.
#
#   tools/tidy.sh                 the .cc files changed since BASE (default
#                                 HEAD~1, the commit before the newest, or
#                                 everything in a one-commit clone), plus
#                                 uncommitted changes, plus the .cc files
#                                 beside changed headers
#   tools/tidy.sh --base=REF      changed since REF instead
#   tools/tidy.sh --all           every .cc file under matcher/ service/
#                                 client/ bench/ tools/
#   tools/tidy.sh FILE...         just these files
#
# Each file is checked with `-std=c++17 -I. -I<bazel-bin> -I<bazel-bin>/proto`
# (the generated proto headers live in bazel-bin, so it builds
# //proto:pubsub_cc_proto first). Every warning is an error (WarningsAsErrors: '*'); a finding that is
# right to keep is silenced where it is, with NOLINT(check) and the reason.
# Runs files two at a time. Ends with `tidy: N files, M with findings` and
# exits non-zero if any file has findings.
set -uo pipefail
cd "$(dirname "$0")/.."

readonly DIRS=(matcher service client bench tools)
base="HEAD~1"
all=0
files=()
for arg in "$@"; do
  case "${arg}" in
    --all) all=1 ;;
    --base=*) base="${arg#*=}" ;;
    -*) echo "tidy.sh: unknown argument ${arg}" >&2; exit 2 ;;
    *) files+=("${arg}") ;;
  esac
done

if ! command -v clang-tidy >/dev/null; then
  tools/setup.sh || exit 1
fi

if ((all)); then
  mapfile -t files < <(git ls-files -- "${DIRS[@]/%//*.cc}")
elif ((${#files[@]} == 0)); then
  if git rev-parse --verify --quiet "${base}^{commit}" >/dev/null; then
    changed=$( (git diff --name-only "${base}" --; git ls-files --others --exclude-standard) | sort -u)
  else
    echo "tidy.sh: no ${base} (a one-commit clone?): checking every file" >&2
    changed=$(git ls-files -- "${DIRS[@]/%//*.cc}")
  fi
  declare -A wanted=()
  while read -r f; do
    [[ -z "${f}" ]] && continue
    case "${f}" in
      matcher/* | service/* | client/* | bench/* | tools/*) ;;
      *) continue ;;
    esac
    case "${f}" in
      *.cc) [[ -f "${f}" ]] && wanted["${f}"]=1 ;;
      *.h)
        [[ -f "${f%.h}.cc" ]] && wanted["${f%.h}.cc"]=1
        [[ -f "${f%.h}_test.cc" ]] && wanted["${f%.h}_test.cc"]=1
        ;;
    esac
  done <<<"${changed}"
  files=("${!wanted[@]}")
fi
if ((${#files[@]} == 0)); then
  echo "tidy: 0 files, 0 with findings"
  exit 0
fi

bazel build //proto:pubsub_cc_proto >/dev/null 2>&1 ||
  { echo "tidy.sh: cannot build //proto:pubsub_cc_proto" >&2; exit 1; }
bin="$(bazel info bazel-bin 2>/dev/null)"

out="$(mktemp -d)"
trap 'rm -rf "${out}"' EXIT
# bench/public_driver.cc is not built by Bazel: it compiles against a
# checkout of the public matchers, so it is checked against their stand-ins.
printf '%s\n' "${files[@]}" | sort | xargs -P2 -I{} sh -c '
  log="$1/$(echo "{}" | tr / _).log"
  extra=""
  [ "{}" = bench/public_driver.cc ] &&
    extra="-DCOHORT_PUBLIC_TAMA -Itools/testing/fake_public/Tama"
  if clang-tidy --quiet "{}" -- -std=c++17 -x c++ -I. -I"$2" -I"$2/proto" ${extra} >"${log}" 2>&1; then
    echo "ok: {}"; rm -f "${log}"
  else
    echo "FINDINGS: {}"
  fi' _ "${out}" "${bin}"
bad=0
for log in "${out}"/*.log; do
  [[ -e "${log}" ]] || continue
  bad=$((bad + 1))
  grep -E '(warning|error):' -A3 "${log}" | grep -v '^--$'
done
echo "tidy: ${#files[@]} files, ${bad} with findings"
((bad == 0))
