#!/usr/bin/env bash
# Builds the Python client's wheel and sdist (client/python) into
# dist/python/ (git-ignored), for installing where there is no checkout:
#
#   tools/python_wheel.sh            # then: pip install dist/python/cohort_client-*.whl
#
# The build runs in an isolated environment that pip sets up (setuptools,
# grpcio-tools and mypy-protobuf from PyPI), generates the gRPC modules
# from proto/cohort/v1/pubsub.proto into the wheel, and copies the proto
# into the sdist. Needs python3 with venv (tools/setup.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
readonly OUT=dist/python
readonly VENV=${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/cohort/python-build-venv
if [[ ! -x "${VENV}/bin/python" ]] ||
  ! "${VENV}/bin/python" -c 'import build' 2>/dev/null; then
  rm -rf "${VENV}"
  python3 -m venv "${VENV}"
  PIP_DISABLE_PIP_VERSION_CHECK=1 "${VENV}/bin/pip" install --quiet build
fi
rm -rf "${OUT}"
mkdir -p "${OUT}"
"${VENV}/bin/python" -m build --outdir "${OUT}" client/python >"${OUT}/build.log" 2>&1 ||
  { tail -20 "${OUT}/build.log"; exit 1; }
rm -f "${OUT}/build.log"
ls -1 "${OUT}"
