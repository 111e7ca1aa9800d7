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
  libnats-dev         # cluster mode's NATS JetStream client (service/cluster/)
  libsimdjson-dev     # Event Ruler patterns and SNS policies (filter/pattern.h)
  libtcmalloc-minimal4  # the allocator of cohortd and the CLI (third_party/)
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

sudo=()
if ((EUID != 0)); then
  sudo=(sudo)
fi

if ((${#missing[@]} > 0)); then
  echo "setup: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update
  "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
fi

# nats-server for cluster mode's tests and deploy/local-cluster.sh: built from
# the Go module proxy (Debian's 2.9.10 rejects sync_interval). Needs Go 1.24
# or later on PATH or in /usr/local/go; GOTOOLCHAIN=local keeps Go from
# fetching another toolchain, which fails offline.
readonly NATS_SERVER_VERSION=v2.15.2
readonly NATS_SERVER=/usr/local/bin/nats-server
if [[ "$("${NATS_SERVER}" --version 2>/dev/null)" != "nats-server: ${NATS_SERVER_VERSION}" ]]; then
  go=$(command -v go || echo /usr/local/go/bin/go)
  echo "setup: building nats-server ${NATS_SERVER_VERSION} with ${go}" >&2
  gobin=$(mktemp -d)
  (cd "${gobin}" && GOBIN="${gobin}" GOTOOLCHAIN=local GOFLAGS=-mod=mod \
    "${go}" install "github.com/nats-io/nats-server/v2@${NATS_SERVER_VERSION}")
  "${sudo[@]}" install -m 0755 "${gobin}/nats-server" "${NATS_SERVER}"
  rm -rf "${gobin}"
fi
