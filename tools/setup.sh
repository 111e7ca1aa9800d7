#!/usr/bin/env bash
# Installs the Debian packages the build needs, if any are missing.
#
#   tools/setup.sh               what building and testing need
#   tools/setup.sh experiment    also gnuplot, for
#                                bench/experiment.sh
#
# Checks each package with dpkg first and calls apt-get only when something is
# absent, so a repeated run takes well under a second. Uses sudo when not root.
# See third_party/usr.BUILD for what each library provides to Bazel, and
# /work/shared/notes/bazel-offline.md for why Debian's bazel-rules-cc must not
# be installed.
set -euo pipefail

readonly PACKAGES=(
  bazel-bootstrap   # Bazel 4.2.3
  g++
  pkg-config
  python3           # ./test.sh's result summary
  python3-yaml      # deploy/check.sh parses the manifests
  python3-venv      # deploy/check.sh's schema validator (kubernetes-validate)
  libabsl-dev
  libprotobuf-dev
  protobuf-compiler
  libgrpc++-dev
  protobuf-compiler-grpc  # grpc_cpp_plugin; libgrpc++-dev does not pull it in
  libgtest-dev
  libgmock-dev
  libbenchmark-dev
  liburing-dev
  libnuma-dev
  libssl-dev          # libcrypto: token hashes, TLS file checks
  openssl             # service/api/testdata/tls/make_certs.sh
  numactl
  clang               # bench/fuzz.sh: the libFuzzer builds (--config=fuzz)
  libclang-rt-14-dev  # libFuzzer and clang's sanitizer runtimes
  clang-tidy          # tools/tidy.sh
  valgrind            # valgrind/callgrind.h (bench/locality_probe); callgrind
  prometheus          # promtool (deploy/check.sh) and prometheus (dashboard_test)
)
readonly EXPERIMENT_PACKAGES=(
  gnuplot-nox  # the report's PNG plots (pngcairo)
)

packages=("${PACKAGES[@]}")
for group in "$@"; do
  case "${group}" in
    experiment) packages+=("${EXPERIMENT_PACKAGES[@]}") ;;
    *) echo "setup.sh: unknown group ${group} (known: experiment)" >&2; exit 2 ;;
  esac
done

missing=()
for package in "${packages[@]}"; do
  if ! dpkg -s "${package}" 2>/dev/null | grep -q '^Status: install ok installed'; then
    missing+=("${package}")
  fi
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "setup: installing ${missing[*]}" >&2
sudo=()
if ((EUID != 0)); then
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update
"${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
