#!/usr/bin/env bash
# Checks deploy/ without building, running or deploying anything.
#
#   deploy/check.sh                          # from anywhere in the checkout
#   DEPLOY_CHECK_OFFLINE=1 deploy/check.sh   # never touch the network
#
# Prints one line per check,
#   deploy check: <name> ok
#   deploy check: <name> FAILED: <reason>
#   deploy check: <name> skipped: <reason>   (a tool is unavailable)
# and exits 1 if any check FAILED (skipped checks do not fail it).
#
# Checks:
#   build.sh syntax  bash -n deploy/build.sh and deploy/check.sh
#   systemd unit     systemd-analyze verify on a copy of the unit whose
#                    ExecStart is /bin/true (the real binary need not be
#                    installed); any warning fails. Without systemd-analyze,
#                    a Key=value syntax check of the unit.
#   k8s schema       kubernetes-validate --strict (PyPI; it bundles the
#                    Kubernetes OpenAPI schemas, so validation itself is
#                    offline) against KUBE_VERSIONS, on deploy/k8s/*.yaml
#                    and deploy/k8s/cluster/*.yaml. The package is installed
#                    once into a venv at ${DEPLOY_CHECK_VENV}; skipped if
#                    that install fails (no network) or DEPLOY_CHECK_OFFLINE=1.
#   dockerfile, systemd fields, k8s fields, data dir, k8s cluster fields,
#   compose cluster
#                    deploy/check_fields.py: the files agree with each other
#                    and with the server's flags and health service name;
#                    the cluster files (deploy/k8s/cluster/,
#                    deploy/compose/cluster.yml) run cohortd with
#                    --cluster_nats naming every NATS server, and every
#                    NATS configuration has sync_interval: always.
#   nats config (nats-server -t)
#                    nats-server -t on the NATS configurations of
#                    deploy/k8s/cluster/nats.yaml and deploy/compose/;
#                    skipped without nats-server (tools/setup.sh builds it).
#   compose, prometheus config, alert rules, grafana dashboard,
#   grafana provisioning
#                    deploy/check_fields.py on deploy/observability/: the
#                    structure of each file (PyYAML, json) and their
#                    agreement with each other, deploy/Dockerfile and the
#                    cohortd and cohort flags.
#   prometheus config (promtool), alert rules (promtool), alert tests
#   (promtool)       promtool check config / check rules / test rules
#                    (alerts_test.yml); skipped without promtool (Debian
#                    package prometheus).
#   promql checker, promql, dashboard promql (promtool)
#                    check_promql_test.py; check_promql.py: every metric and
#                    label the dashboard and the rules use is in the example
#                    scrape testdata/cohortd-metrics.prom, which follows the
#                    naming conventions; promtool parses the dashboard's
#                    expressions.
#   compose config, compose cluster config
#                    docker compose config -q (the Compose schema, offline)
#                    on deploy/observability/compose.yaml and
#                    deploy/compose/cluster.yml: the docker plugin if
#                    installed, else Compose v2 built once from the Go
#                    module proxy into a cache (2 to 3 minutes); skipped if
#                    neither works or DEPLOY_CHECK_OFFLINE=1.
# After the first run (about 20 s for the venv) it takes about a second.
set -uo pipefail
cd "$(dirname "$0")/.."

# Kubernetes versions to validate against: 1.27, where gRPC probes became
# GA (the oldest version deploy/k8s/ targets), and 1.30.
readonly KUBE_VERSIONS=(1.27.0 1.30.0)
# Pinned so that a run validates against the same schemas every time; it
# ships schemas for Kubernetes 1.25 to 1.37.
readonly KUBERNETES_VALIDATE=kubernetes-validate==1.37.0
# Docker Compose v2, for `config -q` on deploy/observability/compose.yaml
# and deploy/compose/cluster.yml.
readonly COMPOSE_VERSION=v2.31.0
readonly COMPOSE_BIN=${DEPLOY_CHECK_COMPOSE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/cohort/compose-${COMPOSE_VERSION}/docker-compose}
readonly VENV=${DEPLOY_CHECK_VENV:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/cohort/deploy-check-venv}

status=0
ok() { echo "deploy check: $1 ok${2:+ $2}"; }
failed() { echo "deploy check: $1 FAILED: $2"; status=1; }
skipped() { echo "deploy check: $1 skipped: $2"; }

# --- build.sh syntax
if errors=$(bash -n deploy/build.sh 2>&1 && bash -n deploy/check.sh 2>&1); then
  ok "build.sh syntax"
else
  failed "build.sh syntax" "$(echo "${errors}" | head -3 | tr '\n' ' ')"
fi

# --- systemd unit
unit_syntax() {  # Key=value lines in known sections; continuations allowed
  awk '
    /^[ \t]*([#;].*)?$/ { next }
    continued { continued = /\\$/; next }
    /^\[(Unit|Service|Install)\]$/ { section = 1; next }
    /^\[/ { print "line " NR ": unknown section " $0; exit 1 }
    !section { print "line " NR ": outside a section"; exit 1 }
    /^[A-Za-z][A-Za-z0-9]*=/ { continued = /\\$/; next }
    { print "line " NR ": not Key=value: " $0; exit 1 }
  ' "$1"
}
tmp=$(mktemp -d)
trap 'rm -rf "${tmp}"' EXIT
if command -v systemd-analyze >/dev/null; then
  sed 's#^ExecStart=[^ ]*#ExecStart=/bin/true#' deploy/systemd/cohortd.service \
    >"${tmp}/cohortd.service"
  if out=$(SYSTEMD_LOG_COLOR=0 systemd-analyze verify "${tmp}/cohortd.service" 2>&1) &&
    [[ -z "${out}" ]]; then
    ok "systemd unit"
  else
    failed "systemd unit" "systemd-analyze verify: $(echo "${out}" | head -3 | tr '\n' ' ')"
  fi
elif out=$(unit_syntax deploy/systemd/cohortd.service); then
  ok "systemd unit"
  echo "deploy check: (systemd-analyze not installed; checked Key=value syntax only)"
else
  failed "systemd unit" "${out}"
fi

# --- k8s schema
venv_python=""
install_validator() {  # creates ${VENV} once; serialised between runs
  mkdir -p "$(dirname "${VENV}")" || return 1
  (
    flock 9 2>/dev/null || true  # flock(1) is util-linux; without it, no lock
    if [[ "$("${VENV}/bin/python" -c 'import importlib.metadata as m
print(m.version("kubernetes-validate"))' 2>/dev/null)" == "${KUBERNETES_VALIDATE##*==}" ]]; then
      exit 0
    fi
    rm -rf "${VENV}"
    python3 -m venv "${VENV}" &&
      PIP_DISABLE_PIP_VERSION_CHECK=1 "${VENV}/bin/python" -m pip install \
        --quiet --retries 1 --timeout 20 "${KUBERNETES_VALIDATE}" ||
      { rm -rf "${VENV}"; exit 1; }
  ) 9>"${VENV}.lock" >"${tmp}/pip.log" 2>&1
}
if [[ "${DEPLOY_CHECK_OFFLINE:-0}" == 1 ]]; then
  skipped "k8s schema" "DEPLOY_CHECK_OFFLINE=1"
elif ! install_validator; then
  skipped "k8s schema" "cannot install ${KUBERNETES_VALIDATE} into ${VENV} (offline?): $(tail -1 "${tmp}/pip.log")"
else
  venv_python="${VENV}/bin/python"
  schema_errors=""
  for version in "${KUBE_VERSIONS[@]}"; do
    if ! out=$("${venv_python}" -m kubernetes_validate --strict --quiet \
      -k "${version}" deploy/k8s/*.yaml deploy/k8s/cluster/*.yaml 2>&1); then
      schema_errors+="${version}: $(echo "${out}" | grep -v '^$' | head -3 | tr '\n' ' ')"
    fi
  done
  if [[ -z "${schema_errors}" ]]; then
    ok "k8s schema" "(${KUBERNETES_VALIDATE} --strict, Kubernetes ${KUBE_VERSIONS[*]})"
  else
    failed "k8s schema" "${schema_errors}"
  fi
fi

# --- field checks (need PyYAML: the venv has it; else Debian's python3-yaml)
python=""
for candidate in ${venv_python} python3 /usr/bin/python3; do
  if "${candidate}" -c 'import yaml' 2>/dev/null; then
    python=${candidate}
    break
  fi
done
if [[ -z "${python}" ]]; then
  failed "fields" "no python3 with PyYAML (apt-get install python3-yaml)"
else
  "${python}" deploy/check_fields.py || status=1
fi

# --- nats config: nats-server parses the cluster's NATS configurations (in
# both, the server name comes from the environment)
if ! command -v nats-server >/dev/null; then
  skipped "nats config (nats-server -t)" "nats-server not installed (tools/setup.sh builds it)"
elif [[ -z "${python}" ]]; then
  skipped "nats config (nats-server -t)" "no python3 with PyYAML to read the ConfigMap"
elif ! "${python}" -c 'import sys, yaml
for d in yaml.safe_load_all(open("deploy/k8s/cluster/nats.yaml")):
    if d and d.get("kind") == "ConfigMap":
        open(sys.argv[1], "w").write(d["data"]["nats.conf"])' "${tmp}/k8s-nats.conf" 2>/dev/null ||
  [[ ! -s "${tmp}/k8s-nats.conf" ]]; then
  failed "nats config (nats-server -t)" "no ConfigMap with nats.conf in deploy/k8s/cluster/nats.yaml"
elif out=$(POD_NAME=nats-0 nats-server -t -c "${tmp}/k8s-nats.conf" 2>&1 &&
  SERVER_NAME=nats-1 nats-server -t -c deploy/compose/nats.conf 2>&1); then
  ok "nats config (nats-server -t)"
else
  failed "nats config (nats-server -t)" "$(echo "${out}" | grep -v 'is valid' | head -3 | tr '\n' ' ')"
fi

# --- observability: promtool, the PromQL checker, docker compose
readonly OBS=deploy/observability
# run_check NAME COMMAND...: ok if COMMAND exits 0, else FAILED with the
# first lines of its output that say what is wrong.
run_check() {
  local name=$1 out
  shift
  if out=$("$@" 2>&1); then
    ok "${name}"
  else
    failed "${name}" "$(echo "${out}" | grep -E 'alertname:|FAIL|rror|not |invalid' |
      grep -vE '^[[:space:]]*FAILED:[[:space:]]*$' | head -3 | cut -c1-300 | tr -s ' \n' '  ')"
  fi
}
if command -v promtool >/dev/null; then
  run_check "prometheus config (promtool)" \
    promtool check config "${OBS}/prometheus/prometheus.yml"
  run_check "alert rules (promtool)" promtool check rules "${OBS}/prometheus/alerts.yml"
  run_check "alert tests (promtool)" promtool test rules "${OBS}/prometheus/alerts_test.yml"
else
  skipped "promtool" "not installed (Debian package prometheus); rules checked by structure only"
fi
if [[ -n "${python}" ]]; then
  run_check "promql checker" "${python}" "${OBS}/check_promql_test.py"
  # The dashboard and the rules against an example scrape of cohortd
  # (testdata/; e2e/dashboard_test.sh checks that it
  # still matches a real server's).
  run_check "promql" "${python}" "${OBS}/check_promql.py" \
    --exposition "${OBS}/testdata/cohortd-metrics.prom" \
    --dashboard "${OBS}/grafana/dashboards/cohort.json" \
    --rules "${OBS}/prometheus/alerts.yml" --emit-rules "${tmp}/dashboard-rules.yml"
  if command -v promtool >/dev/null && [[ -s "${tmp}/dashboard-rules.yml" ]]; then
    run_check "dashboard promql (promtool)" promtool check rules "${tmp}/dashboard-rules.yml"
  fi
fi
# Compose v2 (the docker compose plugin, which also runs on its own) is not
# packaged by Debian: without it, it is built once from the Go module proxy
# into ${COMPOSE_BIN} (2 to 3 minutes), as the k8s validator is installed
# once into its venv.
compose_cmd=()
install_compose() {  # builds ${COMPOSE_BIN} once; serialised between runs
  command -v go >/dev/null || return 1
  mkdir -p "$(dirname "${COMPOSE_BIN}")" || return 1
  (
    flock 9 2>/dev/null || true
    [[ -x "${COMPOSE_BIN}" ]] && exit 0
    GOBIN="$(dirname "${COMPOSE_BIN}")/gobin" GOFLAGS=-buildvcs=false \
      go install "github.com/docker/compose/v2/cmd@${COMPOSE_VERSION}" &&
      mv "$(dirname "${COMPOSE_BIN}")/gobin/cmd" "${COMPOSE_BIN}" &&
      rmdir "$(dirname "${COMPOSE_BIN}")/gobin"
  ) 9>"${COMPOSE_BIN}.lock" >"${tmp}/compose.log" 2>&1
}
if docker compose version >/dev/null 2>&1; then
  compose_cmd=(docker compose)
elif [[ -x "${COMPOSE_BIN}" ]]; then
  compose_cmd=("${COMPOSE_BIN}")
elif [[ "${DEPLOY_CHECK_OFFLINE:-0}" != 1 ]] && install_compose; then
  compose_cmd=("${COMPOSE_BIN}")
fi
if ((${#compose_cmd[@]} > 0)); then
  # config -q resolves and validates the file against the Compose schema
  # offline; the password only has to be set.
  run_check "compose config" env GRAFANA_ADMIN_PASSWORD=check \
    "${compose_cmd[@]}" -f "${OBS}/compose.yaml" config -q
  run_check "compose cluster config" "${compose_cmd[@]}" -f deploy/compose/cluster.yml config -q
else
  skipped "compose config, compose cluster config" "no docker compose, and cannot build Compose ${COMPOSE_VERSION} from the Go module proxy (offline, or no go): $(tail -1 "${tmp}/compose.log" 2>/dev/null)"
fi

exit "${status}"
