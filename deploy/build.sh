#!/usr/bin/env bash
# Builds the release binaries the way CI builds them, and collects them.
#
#   deploy/build.sh [OUT_DIR]     (default OUT_DIR: dist/release)
#
# 1. tools/setup.sh: the Debian packages the build needs (as in ./test.sh,
#    ./run.sh and CI);
# 2. bazel build -c opt //service:cohortd //client:cohort (the same command
#    as ./run.sh; every other setting comes from .bazelrc and WORKSPACE, so
#    the build is offline);
# 3. copies the two binaries to OUT_DIR/bin and writes
#    OUT_DIR/runtime-packages: the Debian packages that provide every shared
#    library the binaries load (from ldd and dpkg -S), one per line. A host
#    or image that runs the binaries needs exactly those installed
#    (deploy/Dockerfile installs them).
#
# deploy/Dockerfile runs this script in its build stage; run it by hand to
# build binaries for a systemd host (deploy/README.md). It leaves the Bazel
# server running, as any bazel command does (.bazelrc lets it exit after
# 10 idle minutes; `bazel shutdown` stops it now).
set -euo pipefail
cd "$(dirname "$0")/.."

readonly OUT=${1:-dist/release}
readonly BIN=.bazel/out/k8-opt/bin
readonly BINARIES=(service/cohortd client/cohort)

tools/setup.sh
bazel build -c opt //service:cohortd //client:cohort

mkdir -p "${OUT}/bin"
for binary in "${BINARIES[@]}"; do
  install -m 0755 "${BIN}/${binary}" "${OUT}/bin/$(basename "${binary}")"
done

# The package owning each library ldd resolves. dpkg knows a file by the
# path its package installed it under, which on Debian 12's merged /usr may
# be the /usr/lib or the /lib spelling: try the resolved path, then ldd's.
packages=()
while read -r library; do
  owner=$(dpkg -S "$(readlink -f "${library}")" 2>/dev/null ||
    dpkg -S "${library}" 2>/dev/null) || {
    echo "build.sh: no Debian package owns ${library}" >&2
    exit 1
  }
  owner=${owner%%:*}        # "libgrpc29:amd64: /usr/lib/..." -> libgrpc29
  packages+=("${owner%%,*}")  # "a, b: /path" (shared by two) -> a
done < <(for binary in "${BINARIES[@]}"; do ldd "${BIN}/${binary}"; done |
  awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u)
if ldd "${OUT}/bin/"* | grep -q 'not found'; then
  echo "build.sh: a shared library is missing:" >&2
  ldd "${OUT}/bin/"* | grep 'not found' >&2
  exit 1
fi
printf '%s\n' "${packages[@]}" | sort -u >"${OUT}/runtime-packages"

echo "build.sh: ${OUT}/bin: $(cd "${OUT}/bin" && echo *)"
echo "build.sh: runtime packages: $(tr '\n' ' ' <"${OUT}/runtime-packages")"
