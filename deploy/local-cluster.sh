#!/usr/bin/env bash
# A Cohort cluster on this machine, for users and tests: N nats-servers (a
# JetStream cluster, R = min(3, N)) and N cohortd in cluster mode, on free
# loopback ports (docs/DESIGN.md section 11).
#
#   deploy/local-cluster.sh up N [COHORTD_FLAG ...]
#       starts it, waits until every cohortd serves (caught up with the
#       subscription log), and prints one gRPC address per line
#   deploy/local-cluster.sh down
#       stops every process it started (SIGTERM, then SIGKILL after 10 s)
#   deploy/local-cluster.sh status
#       prints each process with its pid and whether it runs
#   deploy/local-cluster.sh kill nats|cohortd I [SIGNAL]
#       sends SIGNAL (default KILL) to process I (1..N), for fault tests;
#       for KILL, TERM and INT waits until it has exited (60 s at most)
#   deploy/local-cluster.sh start nats|cohortd I [FLAG...]
#       starts process I again with its first configuration and ports
#       (cohortd: waits until it serves and prints its address; FLAGs are
#       added to its flags for this start only)
#
# Environment:
#   COHORT_CLUSTER_DIR   state: configs, pids, logs, JetStream data
#                        (default /tmp/cohort-cluster-$UID); `down` keeps the
#                        logs and removes the data
#   COHORTD              the cohortd binary (default: built with
#                        `bazel build -c opt //service:cohortd`)
#   NATS_SERVER          the nats-server binary (default: nats-server on
#                        PATH, which tools/setup.sh installs)
#
# Files in COHORT_CLUSTER_DIR: nats-I.conf, nats-I.log, cohortd-I.log,
# cohortd-I-data/ (node I's --data_dir: its local copy of the log), *.pid,
# addresses (the gRPC addresses), nats_urls (the NATS client URLs, comma
# separated), nats-I.client_port, nats-I.route_port, cohortd-I.port: every
# process keeps its ports across restarts, as a machine keeps its address.
#
# JetStream runs with sync_interval: always, so an acknowledged change is on
# disk on a majority of the NATS servers before cohortd answers: it survives
# kill -9 of any process and the loss of power to every machine.
set -euo pipefail
cd "$(dirname "$0")/.."

readonly DIR="${COHORT_CLUSTER_DIR:-/tmp/cohort-cluster-${UID}}"

usage() {
  sed -n '2,38p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

alive() {  # alive PID: running, not a zombie nobody has reaped yet
  local state
  state=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
  [[ -n "${state}" && "${state}" != Z* ]]
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

pids_of() {  # pids_of GLOB: the pids in DIR/GLOB.pid
  local f
  for f in "${DIR}"/$1.pid; do
    [[ -f "${f}" ]] && cat "${f}"
  done
  return 0
}

stop_all() {
  local pids=() pid
  for pid in $(pids_of 'cohortd-*') $(pids_of 'nats-*'); do
    alive "${pid}" && pids+=("${pid}")
  done
  # cohortd first, so that it does not see NATS go away.
  for pid in $(pids_of 'cohortd-*'); do kill -TERM "${pid}" 2>/dev/null || true; done
  for _ in $(seq 100); do
    local alive=0
    for pid in $(pids_of 'cohortd-*'); do alive "${pid}" && alive=1; done
    ((alive == 0)) && break
    sleep 0.1
  done
  for pid in $(pids_of 'nats-*'); do kill -TERM "${pid}" 2>/dev/null || true; done
  for _ in $(seq 100); do
    local alive=0
    for pid in "${pids[@]}"; do alive "${pid}" && alive=1; done
    ((alive == 0)) && break
    sleep 0.1
  done
  for pid in "${pids[@]}"; do kill -KILL "${pid}" 2>/dev/null || true; done
  rm -f "${DIR}"/*.pid "${DIR}/addresses"
  rm -rf "${DIR}"/jetstream-* "${DIR}"/cohortd-*-data
}

up() {
  local n=$1
  shift
  if ! [[ "${n}" =~ ^[1-9][0-9]*$ ]] || ((n > 9)); then
    echo "local-cluster.sh: N must be 1 to 9, not '${n}'" >&2
    exit 2
  fi
  if [[ -n "$(pids_of '*')" ]]; then
    echo "local-cluster.sh: a cluster is already up in ${DIR} (run down first)" >&2
    exit 1
  fi
  local nats="${NATS_SERVER:-$(command -v nats-server || true)}"
  if [[ -z "${nats}" || ! -x "${nats}" ]]; then
    echo "local-cluster.sh: no nats-server (run tools/setup.sh, or set NATS_SERVER)" >&2
    exit 1
  fi
  local cohortd="${COHORTD:-}"
  if [[ -z "${cohortd}" ]]; then
    bazel build -c opt //service:cohortd >&2
    cohortd=.bazel/out/k8-opt/bin/service/cohortd
  fi
  mkdir -p "${DIR}"
  rm -rf "${DIR}"/jetstream-* "${DIR}"/cohortd-*-data "${DIR}"/*.log
  local i routes="" urls=""
  for ((i = 1; i <= n; i++)); do
    free_port >"${DIR}/nats-${i}.client_port"
    free_port >"${DIR}/nats-${i}.route_port"
    routes+="${routes:+, }nats-route://127.0.0.1:$(cat "${DIR}/nats-${i}.route_port")"
    urls+="${urls:+,}nats://127.0.0.1:$(cat "${DIR}/nats-${i}.client_port")"
  done
  echo "${urls}" >"${DIR}/nats_urls"
  echo "${nats}" >"${DIR}/nats_binary"
  for ((i = 1; i <= n; i++)); do
    {
      echo "server_name: n${i}"
      echo "listen: 127.0.0.1:$(cat "${DIR}/nats-${i}.client_port")"
      echo "max_payload: 8MB"
      echo "jetstream {"
      echo "  store_dir: \"${DIR}/jetstream-${i}\""
      echo "  max_memory_store: 64MB"
      echo "  max_file_store: 4GB"
      echo "  sync_interval: always"
      echo "}"
      if ((n > 1)); then
        echo "cluster {"
        echo "  name: cohort"
        echo "  listen: 127.0.0.1:$(cat "${DIR}/nats-${i}.route_port")"
        echo "  routes: [${routes}]"
        echo "}"
      fi
    } >"${DIR}/nats-${i}.conf"
    start_nats "${i}"
  done
  local replicas=$((n < 3 ? n : 3))
  {
    echo "${cohortd}"
    echo "--cluster_nats=${urls}"
    echo "--cluster_replicas=${replicas}"
    printf '%s\n' "$@"
  } >"${DIR}/cohortd.args"
  for ((i = 1; i <= n; i++)); do
    free_port >"${DIR}/cohortd-${i}.port"
    launch_cohortd "${i}"
  done
  local addresses=()
  for ((i = 1; i <= n; i++)); do
    addresses+=("$(wait_serving "${i}")") || { stop_all; exit 1; }
  done
  printf '%s\n' "${addresses[@]}" | tee "${DIR}/addresses"
}

start_nats() {  # start_nats I
  # Read here, not in the background job: a job's expansions run after the
  # fork, when the caller may be rewriting files.
  local nats
  nats=$(cat "${DIR}/nats_binary")
  "${nats}" -c "${DIR}/nats-$1.conf" >>"${DIR}/nats-$1.log" 2>&1 &
  echo $! >"${DIR}/nats-$1.pid"
}

launch_cohortd() {  # launch_cohortd I [FLAG...]: the saved arguments, then FLAGs
  local args=() i=$1
  shift
  mapfile -t args <"${DIR}/cohortd.args"
  # Removed here: the job's own redirection truncates it only after the
  # fork, and wait_serving must not read an earlier run's port meanwhile.
  rm -f "${DIR}/cohortd-${i}.log"
  local port
  port=$(cat "${DIR}/cohortd-${i}.port")
  "${args[0]}" --listen="127.0.0.1:${port}" --cluster_node="node-${i}" \
    --data_dir="${DIR}/cohortd-${i}-data" "${args[@]:1}" "$@" \
    >"${DIR}/cohortd-${i}.log" 2>&1 &
  echo $! >"${DIR}/cohortd-${i}.pid"
}

wait_serving() {  # wait_serving I: prints 127.0.0.1:PORT once cohortd I serves
  local port="" pid
  pid=$(cat "${DIR}/cohortd-$1.pid")
  for _ in $(seq 600); do
    if ! alive "${pid}"; then
      echo "local-cluster.sh: cohortd $1 exited; its log:" >&2
      cat "${DIR}/cohortd-$1.log" >&2
      return 1
    fi
    port=$(sed -n 's/^cohortd: serving on port \([0-9]*\).*/\1/p' "${DIR}/cohortd-$1.log")
    if [[ -n "${port}" ]] && grep -q '^cohortd: cluster: serving' "${DIR}/cohortd-$1.log"; then
      echo "127.0.0.1:${port}"
      return 0
    fi
    sleep 0.1
  done
  echo "local-cluster.sh: cohortd $1 did not serve within 60 s; its log:" >&2
  cat "${DIR}/cohortd-$1.log" >&2
  return 1
}

check_process() {  # check_process KIND I
  if [[ "$1" != nats && "$1" != cohortd ]] || ! [[ "$2" =~ ^[1-9]$ ]] ||
    [[ ! -f "${DIR}/$1-$2.pid" ]]; then
    echo "local-cluster.sh: no process '$1 $2' in ${DIR}" >&2
    exit 2
  fi
}

status() {
  local f name pid
  for f in "${DIR}"/*.pid; do
    [[ -f "${f}" ]] || continue
    name=$(basename "${f}" .pid)
    pid=$(cat "${f}")
    if alive "${pid}"; then
      echo "${name} ${pid} running"
    else
      echo "${name} ${pid} stopped"
    fi
  done
}

case "${1:-}" in
  up)
    [[ $# -ge 2 ]] || usage
    shift
    up "$@"
    ;;
  down) stop_all ;;
  status) status ;;
  kill)
    [[ $# -ge 3 ]] || usage
    check_process "$2" "$3"
    pid=$(cat "${DIR}/$2-$3.pid")
    kill -"${4:-KILL}" "${pid}"
    case "${4:-KILL}" in
      KILL | TERM | INT | 9 | 15 | 2)  # wait until it has exited (60 s at most)
        for _ in $(seq 600); do alive "${pid}" || break; sleep 0.1; done
        ;;
    esac
    ;;
  start)
    [[ $# -ge 3 ]] || usage
    [[ $# -eq 3 || "$2" == cohortd ]] || usage
    check_process "$2" "$3"
    if alive "$(cat "${DIR}/$2-$3.pid")"; then
      echo "local-cluster.sh: $2 $3 is running" >&2
      exit 1
    fi
    if [[ "$2" == nats ]]; then
      start_nats "$3"
    else
      launch_cohortd "$3" "${@:4}"
      wait_serving "$3"
    fi
    ;;
  *) usage ;;
esac
