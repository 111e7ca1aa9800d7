#!/usr/bin/env bash
# Packs cohortd, cohort and locality_probe (built -c opt), nats-server (a
# static Go binary, for cluster mode: bench/cluster_scale.sh), and numactl if
# it is installed, with every shared library they load, the dynamic loader
# included, into a self-contained folder for a machine without Bazel or the
# Debian packages:
#
#   tools/bundle.sh [DIR]      # default dist/bundle (git-ignored)
#   bench/experiment.sh --bin=DIR/bin ...
#
# DIR/bin holds one wrapper script per binary that starts it through the
# bundled loader with --library-path DIR/lib, so neither the other machine's
# libc nor LD_LIBRARY_PATH matters.
set -euo pipefail
cd "$(dirname "$0")/.."
readonly DIR="${1:-dist/bundle}"
readonly TARGETS=(//service:cohortd //client:cohort //bench:locality_probe)
readonly BINARIES=(service/cohortd client/cohort bench/locality_probe)

tools/setup.sh
bazel build -c opt "${TARGETS[@]}"
rm -rf "${DIR}"
mkdir -p "${DIR}/bin" "${DIR}/libexec" "${DIR}/lib"
for binary in "${BINARIES[@]}"; do
  cp ".bazel/out/k8-opt/bin/${binary}" "${DIR}/libexec/"
  ldd ".bazel/out/k8-opt/bin/${binary}" |
    awk '/=> \// {print $3} /^\t\/.*ld-linux/ {print $1}' |
    while read -r lib; do cp -L "${lib}" "${DIR}/lib/"; done
  name=$(basename "${binary}")
  cat >"${DIR}/bin/${name}" <<WRAPPER
#!/bin/sh
here=\$(dirname "\$0")/..
exec "\${here}/lib/ld-linux-x86-64.so.2" --library-path "\${here}/lib" \\
  "\${here}/libexec/${name}" "\$@"
WRAPPER
  chmod +x "${DIR}/bin/${name}" "${DIR}/libexec/${name}"
done
# nats-server, which tools/setup.sh installs: static, copied as it is.
if command -v nats-server >/dev/null; then
  cp "$(command -v nats-server)" "${DIR}/bin/nats-server"
fi
# numactl, when installed, so the other machine's NUMA layout can be read
# (`numactl --hardware`) without its packages.
if command -v numactl >/dev/null; then
  cp "$(command -v numactl)" "${DIR}/libexec/"
  ldd "$(command -v numactl)" |
    awk '/=> \// {print $3}' |
    while read -r lib; do cp -L "${lib}" "${DIR}/lib/"; done
  cat >"${DIR}/bin/numactl" <<'WRAPPER'
#!/bin/sh
here=$(dirname "$0")/..
exec "${here}/lib/ld-linux-x86-64.so.2" --library-path "${here}/lib" \
  "${here}/libexec/numactl" "$@"
WRAPPER
  chmod +x "${DIR}/bin/numactl"
fi
du -sh "${DIR}"
