#!/usr/bin/env bash
# Tests the Python client (client/python): installs it into a virtual
# environment of its own, runs mypy --strict on the package, its tests and
# examples (one test case), then its pytest suite against a real cohortd.
#
#   tools/testing/python_client_test.sh
#   COHORTD=/path/to/cohortd tools/testing/python_client_test.sh
#
# The venv lives in ${XDG_CACHE_HOME:-$HOME/.cache}/cohort/python-client-venv
# and is reinstalled (pip install 'client/python[test]', which generates
# the gRPC modules from proto/) only when client/python, the proto or the
# Python version changed, so later runs need no network. If that install
# fails (offline) and the venv already holds the dependencies, it retries
# with pip --no-build-isolation --no-deps. COHORTD (default
# .bazel/out/k8-opt/bin/service/cohortd, from the repository root) is the
# server the tests start. The JUnit XML goes to $PYTHON_CLIENT_TEST_OUT
# (default: a temporary directory). Last line, always:
#   python: N passed, M failed
# (mypy counts as one case; a venv or install failure as one failure.)
set -uo pipefail
cd "$(dirname "$0")/../.."
readonly ROOT=$PWD
readonly PKG=client/python
readonly VENV="${XDG_CACHE_HOME:-$HOME/.cache}/cohort/python-client-venv"
readonly PY="${VENV}/bin/python"
export COHORTD="${COHORTD:-.bazel/out/k8-opt/bin/service/cohortd}"
[[ "${COHORTD}" = /* ]] || export COHORTD="${ROOT}/${COHORTD}"
out="${PYTHON_CLIENT_TEST_OUT:-}"
if [[ -z "${out}" ]]; then
  out=$(mktemp -d)
  trap 'rm -rf "${out}"' EXIT
fi
mkdir -p "${out}"
out=$(cd "${out}" && pwd)  # pytest runs in ${PKG}: the report path must be absolute

finish() {  # finish PASSED FAILED
  echo "python: $1 passed, $2 failed"
  (($2 == 0))
  exit
}

# What the installed package is built from: the package's own files (not
# what builds and tools write there), the proto and the Python version.
fingerprint() {
  {
    python3 --version 2>&1
    find "${PKG}" proto/cohort/v1/pubsub.proto -type f \
      -not -path "${PKG}/build/*" -not -path "*.egg-info/*" \
      -not -path "*/__pycache__/*" -not -path "*/.mypy_cache/*" \
      -not -path "*/.pytest_cache/*" -not -name "pubsub_pb2*" -print0 |
      sort -z | xargs -0 sha256sum
  } | sha256sum | cut -d' ' -f1
}

install() {
  local stamp="${VENV}/.cohort-client-fingerprint" want
  want=$(fingerprint)
  if [[ -x "${PY}" && -f "${stamp}" && "$(cat "${stamp}")" == "${want}" ]]; then
    echo "python_client_test: venv up to date (${VENV})"
    return 0
  fi
  if [[ ! -x "${PY}" ]]; then
    mkdir -p "$(dirname "${VENV}")"
    python3 -m venv "${VENV}" || {
      echo "python_client_test: python3 -m venv ${VENV} failed (python3-venv installed?)"
      return 1
    }
  fi
  # A stale in-tree build directory would put removed modules in the wheel.
  rm -rf "${PKG}/build"
  echo "python_client_test: pip install '${PKG}[test]' into ${VENV}"
  if ! "${PY}" -m pip install --disable-pip-version-check -q "${PKG}[test]"; then
    echo "python_client_test: install failed; trying offline (--no-build-isolation)"
    "${PY}" -m pip install --disable-pip-version-check -q --no-build-isolation \
      --no-deps --no-index "${PKG}" || return 1
  fi
  rm -rf "${PKG}/build" "${PKG}/src/cohort_client.egg-info"
  echo "${want}" >"${stamp}"
}

install || finish 0 1

passed=0
failed=0
echo "==> mypy --strict (package, tests, examples)"
mypy() { "${PY}" -m mypy --strict --cache-dir "${VENV}/.mypy_cache" "$@"; }
if (cd "${PKG}" && mypy -p cohort && mypy tests examples); then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
fi

echo "==> pytest ${PKG}/tests (COHORTD=${COHORTD})"
rm -f "${out}/python_client.xml"
(cd "${PKG}" && timeout 600 "${PY}" -m pytest -q -p no:cacheprovider \
  --junitxml="${out}/python_client.xml" tests)
read -r p f < <("${PY}" - "${out}/python_client.xml" <<'EOF'
import sys
import xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
except (OSError, ET.ParseError):
    print(0, 1)  # pytest did not get as far as writing its report
    sys.exit()
suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
count = lambda key: sum(int(s.get(key, 0)) for s in suites)
bad = count("failures") + count("errors")
ran = count("tests") - count("skipped")
print(ran - bad, bad if ran > 0 else max(bad, 1))
EOF
)
passed=$((passed + ${p:-0}))
failed=$((failed + ${f:-1}))
finish "${passed}" "${failed}"
