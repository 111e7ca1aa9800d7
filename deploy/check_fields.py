#!/usr/bin/env python3
"""Consistency checks across deploy/'s files and the server's source.

Called by deploy/check.sh (run from the repository root); needs PyYAML.
Prints one line per check,

    deploy check: <name> ok
    deploy check: <name> FAILED: <reason>; <reason>...

and exits 1 if any check failed. The checks read, never write. What they
compare:
  - flags: every --flag in the systemd unit, the Dockerfile's CMD and the
    StatefulSet's args is an ABSL_FLAG of service/cohortd_main.cc.
  - k8s fields: kinds and apiVersions; --listen on 0.0.0.0 and its port in
    the gRPC probes (all three, grpc, readiness on the service name
    server.cc registers), the container port and the Services; the data dir
    mounted from a volumeClaimTemplate; metrics port and host; Guaranteed
    QoS with an integer CPU count at least --partitions; non-root uid equal
    to the Dockerfile's USER; a termination grace period for the snapshot.
  - dockerfile: the build stage runs deploy/build.sh (which exists and runs
    tools/setup.sh and the same bazel build as ./run.sh); every repository
    script a RUN names exists; base images; non-root USER; VOLUME is the
    data dir; EXPOSE and HEALTHCHECK agree with CMD's ports.
  - systemd fields: the unit's data dir is its StateDirectory= and in
    ReadWritePaths=; non-root User= that cohortd.sysusers creates; SIGTERM,
    Restart=on-failure, a stop timeout for the snapshot, LimitNOFILE.
  - same data dir in all three.
  - k8s cluster fields (deploy/k8s/cluster/): kinds and apiVersions; the
    NATS StatefulSet started in parallel, an odd number >= 3 of replicas, a
    pinned nats image, its config a mounted ConfigMap file (nats.conf:
    sync_interval: always, server_name from an env of the pod's name,
    max_payload, the store on a volumeClaimTemplate, routes to every pod
    through the governing Service on the cluster port, ports as the
    container's, /healthz probes); cohortd with --cluster_nats naming
    every NATS pod on the client port, --cluster_node=$(POD_NAME),
    --max_connection_age_ms, --cluster_replicas at most the NATS servers,
    --data_dir mounted from a volumeClaimTemplate, known flags, readiness on the health
    service and startup/liveness not on it (tcpSocket on the gRPC port),
    Guaranteed QoS, the image's uid; governing Services headless with
    publishNotReadyAddresses, a headless client Service of ready pods only;
    PodDisruptionBudgets; no selector shared with deploy/k8s/*.yaml.
  - compose cluster (deploy/compose/cluster.yml): every cohortd service
    (image cohortd, built from deploy/Dockerfile) has --cluster_nats naming
    every NATS service on its client port, --data_dir on a volume of its
    own, its own
    --cluster_node and known flags; every NATS service's bind-mounted
    config has sync_interval: always, a server_name from its environment
    (distinct per service) and routes to every NATS service; ports are
    published on 127.0.0.1.
  - observability/ (deploy/observability/README.md), checked with PyYAML
    alone; deploy/check.sh adds promtool and `docker compose config` where
    they are installed:
    - prometheus config: scrape interval, rule files that exist, a cohortd
      job whose target port is the --metrics_port of the Dockerfile's CMD
      and of compose.yaml;
    - alert rules: every rule has an expr; every alert a for:, a severity
      label (warning or critical), summary and description annotations; a
      job="..." matcher names the scrape job; alerts_test.yml loads
      alerts.yml and has, for every alert, a case where it fires and one
      where it does not;
    - grafana dashboard: the JSON parses; a datasource variable of type
      prometheus and an instance variable; every panel but rows has the
      templated datasource, and targets each with a refId and an expr; ids
      unique, panels inside the 24-column grid and not overlapping;
    - grafana provisioning: the data source points at compose.yaml's
      prometheus service and its scrape interval; the dashboard provider's
      path is where compose.yaml mounts grafana/dashboards, which holds the
      dashboard; the home dashboard path exists;
    - compose: cohortd is built from deploy/Dockerfile with the image name
      deploy/Dockerfile and deploy/README.md build, its command repeats
      every flag of the Dockerfile's CMD (a command replaces CMD) with only
      real cohortd flags, the data dir is a volume, the stop grace period
      allows a snapshot; Prometheus and Grafana images are pinned; every
      bind mount exists; the cohort CLI services use real cohort flags and
      cohortd's gRPC port; published ports are on 127.0.0.1.
"""

import json
import re
import shlex
import sys
from pathlib import Path

import yaml

DATA_DIR = "/var/lib/cohortd"
MIN_STOP_SECONDS = 60  # drain (10 s) plus a snapshot of a few million subs
failed = False


def report(name, problems):
    global failed
    if problems:
        failed = True
        text = " ".join("; ".join(problems).split())  # one line
        print(f"deploy check: {name} FAILED: {text}")
    else:
        print(f"deploy check: {name} ok")


def parse_flags(args):
    """['--a=1', '--b'] -> {'a': '1', 'b': None}; other words are ignored."""
    flags = {}
    for arg in args:
        if arg.startswith("--"):
            name, _, value = arg[2:].partition("=")
            flags[name] = value if _ else None
    return flags


def listen_port(flags, where, problems):
    listen = flags.get("listen") or ""
    host, _, port = listen.rpartition(":")
    if host not in ("0.0.0.0", "[::]"):
        problems.append(f"{where}: --listen={listen} must bind 0.0.0.0 or [::]")
    if not port.isdigit():
        problems.append(f"{where}: --listen={listen} has no port")
        return None
    return int(port)


def known_flags(source_file="service/cohortd_main.cc"):
    source = Path(source_file).read_text()
    return set(re.findall(r"ABSL_FLAG\(\s*[^,]+,\s*(\w+)\s*,", source))


def health_service_name():
    source = Path("service/api/server.cc").read_text()
    match = re.search(r'kServiceName\[\]\s*=\s*"([^"]+)"', source)
    return match.group(1) if match else None


# ---------------------------------------------------------------- Dockerfile


def dockerfile_instructions(text):
    """[(INSTRUCTION, argument text)] with continuation lines joined."""
    instructions, current = [], ""
    for line in text.splitlines():
        stripped = line.strip()
        if not current and (not stripped or stripped.startswith("#")):
            continue
        if current and stripped.startswith("#"):
            continue  # a comment inside a continued instruction
        if stripped.endswith("\\"):
            current += stripped[:-1] + " "
            continue
        current += stripped
        keyword, _, rest = current.partition(" ")
        instructions.append((keyword.upper(), rest.strip()))
        current = ""
    return instructions


def exec_form(argument):
    """JSON exec form ["a", "b"] -> list; shell form -> shlex split."""
    argument = argument.strip()
    if argument.startswith("["):
        return yaml.safe_load(argument)  # JSON arrays are YAML flow sequences
    return shlex.split(argument)


def check_dockerfile(flags_known):
    problems = []
    text = Path("deploy/Dockerfile").read_text()
    inst = dockerfile_instructions(text)
    froms = [arg.split()[0] for kind, arg in inst if kind == "FROM"]
    if froms[:1] != ["debian:12"] or froms[-1:] != ["debian:12-slim"]:
        problems.append(f"base images {froms}: want debian:12 ... debian:12-slim")
    runs = [arg for kind, arg in inst if kind == "RUN"]
    if not any(re.search(r"(^|\s)deploy/build\.sh(\s|$)", r) for r in runs):
        problems.append("no RUN calls deploy/build.sh")
    for run in runs:
        for script in re.findall(r"(?<![\w/.])((?:deploy|tools|\.ci)/[\w./-]+)", run):
            if not Path(script).is_file():
                problems.append(f"RUN names {script}, which does not exist")
    build = Path("deploy/build.sh")
    if not build.is_file() or not build.stat().st_mode & 0o111:
        problems.append("deploy/build.sh missing or not executable")
    else:
        problems += check_build_script(build.read_text())
    users = [arg for kind, arg in inst if kind == "USER"]
    uid = users[-1].split(":")[0] if users else "root"
    if not uid.isdigit() or int(uid) == 0:
        problems.append(f"final USER {uid!r}: want a numeric non-root uid")
    volumes = [v for kind, arg in inst if kind == "VOLUME" for v in exec_form(arg)]
    entry = [arg for kind, arg in inst if kind == "ENTRYPOINT"]
    if not entry or exec_form(entry[-1])[:1] != ["/usr/local/bin/cohortd"]:
        problems.append("ENTRYPOINT is not [\"/usr/local/bin/cohortd\"]")
    cmd = [arg for kind, arg in inst if kind == "CMD"]
    flags = parse_flags(exec_form(cmd[-1])) if cmd else {}
    unknown = sorted(set(flags) - flags_known)
    if unknown:
        problems.append(f"CMD: unknown cohortd flags {unknown}")
    port = listen_port(flags, "CMD", problems)
    if flags.get("data_dir") not in volumes:
        problems.append(f"CMD --data_dir={flags.get('data_dir')} is not a VOLUME {volumes}")
    exposed = {p.split("/")[0] for kind, arg in inst if kind == "EXPOSE" for p in arg.split()}
    for what, value in (("--listen port", port), ("--metrics_port", flags.get("metrics_port"))):
        if value is not None and str(value) not in exposed:
            problems.append(f"{what} {value} not in EXPOSE {sorted(exposed)}")
    health = [arg for kind, arg in inst if kind == "HEALTHCHECK"]
    if not health:
        problems.append("no HEALTHCHECK")
    elif port is not None and f"127.0.0.1:{port}" not in health[-1]:
        problems.append(f"HEALTHCHECK does not ask 127.0.0.1:{port}")
    if "STOPSIGNAL SIGTERM" not in text:
        problems.append("no STOPSIGNAL SIGTERM")
    ignore = Path("deploy/Dockerfile.dockerignore")
    if not ignore.is_file() or ".bazel" not in ignore.read_text().split():
        problems.append("deploy/Dockerfile.dockerignore missing or not excluding .bazel")
    report("dockerfile", problems)
    return {"uid": int(uid) if uid.isdigit() else None, "flags": flags, "port": port}


def bazel_build_lines(text):
    return [line.strip() for line in text.splitlines()
            if line.strip().startswith("bazel build")]


def check_build_script(text):
    """build.sh runs CI's setup script and ./run.sh's opt build, verbatim."""
    problems = []
    if not re.search(r"^tools/setup\.sh\s*$", text, re.M):
        problems.append("deploy/build.sh does not run tools/setup.sh")
    if "tools/setup.sh" not in Path("test.sh").read_text():
        problems.append("./test.sh (CI) no longer runs tools/setup.sh")
    wanted = bazel_build_lines(Path("run.sh").read_text())
    have = bazel_build_lines(text)
    if not wanted or have != wanted[:1]:
        problems.append(f"deploy/build.sh's bazel build {have} differs from ./run.sh's {wanted}")
    return problems


# ------------------------------------------------------------------- systemd


def unit_entries(text):
    """{key: [values]} of a unit file, continuation lines joined."""
    entries, current = {}, ""
    for line in text.splitlines():
        if not current and (not line.strip() or line.lstrip()[:1] in "#;" or
                            line.startswith("[")):
            continue
        if line.rstrip().endswith("\\"):
            current += line.rstrip()[:-1] + " "
            continue
        current += line
        key, _, value = current.partition("=")
        entries.setdefault(key.strip(), []).append(value.strip())
        current = ""
    return entries


def seconds(value):
    match = re.fullmatch(r"(\d+)\s*(s|sec|min|m)?", value or "")
    if not match:
        return None
    return int(match.group(1)) * (60 if match.group(2) in ("min", "m") else 1)


def check_systemd(flags_known):
    problems = []
    unit = unit_entries(Path("deploy/systemd/cohortd.service").read_text())
    def value(key):  # the last assignment wins, as in systemd
        return (unit.get(key) or [None])[-1]
    exec_start = shlex.split(value("ExecStart") or "")
    if exec_start[:1] != ["/usr/local/bin/cohortd"]:
        problems.append(f"ExecStart runs {exec_start[:1]}, want /usr/local/bin/cohortd")
    flags = parse_flags(exec_start)
    unknown = sorted(set(flags) - flags_known)
    if unknown:
        problems.append(f"ExecStart: unknown cohortd flags {unknown}")
    listen_port(flags, "ExecStart", problems)
    data_dir = flags.get("data_dir")
    if data_dir != f"/var/lib/{value('StateDirectory')}":
        problems.append(f"--data_dir={data_dir} is not /var/lib/<StateDirectory=>")
    if data_dir not in (value("ReadWritePaths") or "").split():
        problems.append(f"--data_dir={data_dir} not in ReadWritePaths=")
    user = value("User")
    if user in (None, "root", "0"):
        problems.append(f"User={user}: want a non-root user")
    sysusers = Path("deploy/systemd/cohortd.sysusers").read_text()
    if not re.search(rf"^u\s+{re.escape(user or '-')}\s", sysusers, re.M):
        problems.append(f"cohortd.sysusers does not create User={user}")
    env = Path("deploy/systemd/cohortd.env").read_text()
    if "$COHORTD_FLAGS" not in exec_start:
        problems.append("ExecStart does not pass $COHORTD_FLAGS")
    if not re.search(r"^COHORTD_FLAGS=", env, re.M):
        problems.append("cohortd.env does not set COHORTD_FLAGS")
    wanted = {"Restart": "on-failure", "KillSignal": "SIGTERM", "LimitNOFILE": "1048576",
              "NoNewPrivileges": "yes", "ProtectSystem": "strict"}
    for key, want in wanted.items():
        if value(key) != want:
            problems.append(f"{key}={value(key)}, want {want}")
    stop = seconds(value("TimeoutStopSec"))
    if stop is None or stop < MIN_STOP_SECONDS:
        problems.append(f"TimeoutStopSec={value('TimeoutStopSec')}: want >= {MIN_STOP_SECONDS}s")
    report("systemd fields", problems)
    return {"flags": flags}


# ---------------------------------------------------------------- Kubernetes


def load_k8s():
    docs = []
    for path in sorted(Path("deploy/k8s").glob("*.yaml")):
        docs += [(path.name, d) for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


def probe_problems(container, port, service_name):
    problems = []
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        spec = container.get(probe) or {}
        grpc = spec.get("grpc")
        if not grpc:
            problems.append(f"{probe}: missing or not a grpc probe")
            continue
        if grpc.get("port") != port:
            problems.append(f"{probe}: grpc port {grpc.get('port')} != --listen port {port}")
    readiness = (container.get("readinessProbe") or {}).get("grpc") or {}
    if service_name and readiness.get("service") != service_name:
        problems.append(f"readinessProbe: service {readiness.get('service')!r}, "
                        f"server.cc registers {service_name!r}")
    startup = container.get("startupProbe") or {}
    budget = startup.get("periodSeconds", 10) * startup.get("failureThreshold", 3)
    if budget < 600:
        problems.append(f"startupProbe allows {budget} s for recovery: want >= 600")
    return problems


def data_claim_problems(spec, container, flags, prefix):
    """--data_dir is mounted from one of the StatefulSet spec's claim
    templates. `prefix` starts each message."""
    data_dir = flags.get("data_dir")
    claims = {t["metadata"]["name"] for t in spec.get("volumeClaimTemplates", [])}
    mounts = {m.get("mountPath"): m.get("name") for m in container.get("volumeMounts", [])}
    if mounts.get(data_dir) not in claims:
        return [f"{prefix}--data_dir={data_dir} is not mounted from a volumeClaimTemplate "
                f"{sorted(claims)}"]
    return []


def guaranteed_qos_problems(container, flags, prefix):
    """Guaranteed QoS with an integer CPU count of at least --partitions.
    `prefix` starts the resource messages."""
    problems = []
    resources = container.get("resources", {})
    requests, limits = resources.get("requests", {}), resources.get("limits", {})
    if not requests or requests != limits:
        problems.append(f"{prefix}resources: requests {requests} != limits {limits} "
                        "(not Guaranteed QoS)")
    cpu = str(limits.get("cpu", ""))
    if not cpu.isdigit():
        problems.append(f"{prefix}limits.cpu {cpu!r}: want an integer (exclusive cores)")
    elif flags.get("partitions", "0").isdigit() and int(flags.get("partitions", "0")) > int(cpu):
        problems.append(f"--partitions={flags['partitions']} exceeds cpu {cpu}")
    return problems


def check_k8s(flags_known, image_uid):
    problems = []
    docs = load_k8s()
    sets = [d for _, d in docs if d.get("kind") == "StatefulSet"]
    services = [d for _, d in docs if d.get("kind") == "Service"]
    for name, d in docs:
        want = {"StatefulSet": "apps/v1", "Service": "v1"}.get(d.get("kind"))
        if want is None:
            problems.append(f"{name}: unexpected kind {d.get('kind')}")
        elif d.get("apiVersion") != want:
            problems.append(f"{name}: {d.get('kind')} apiVersion {d.get('apiVersion')}, want {want}")
    if len(sets) != 1 or not services:
        report("k8s fields", problems + ["want one StatefulSet and at least one Service"])
        return {}
    sts = sets[0]["spec"]
    pod = sts["template"]["spec"]
    containers = [c for c in pod["containers"] if c.get("name") == "cohortd"]
    if not containers:
        report("k8s fields", problems + ["no container named cohortd"])
        return {}
    c = containers[0]
    flags = parse_flags(c.get("args", []))
    unknown = sorted(set(flags) - flags_known)
    if unknown:
        problems.append(f"args: unknown cohortd flags {unknown}")
    port = listen_port(flags, "args", problems)
    problems += probe_problems(c, port, health_service_name())
    ports = {p.get("name"): p.get("containerPort") for p in c.get("ports", [])}
    if ports.get("grpc") != port:
        problems.append(f"containerPort grpc {ports.get('grpc')} != --listen port {port}")
    metrics = flags.get("metrics_port")
    if metrics is not None:
        if str(ports.get("metrics")) != metrics:
            problems.append(f"containerPort metrics {ports.get('metrics')} != --metrics_port {metrics}")
        if flags.get("metrics_host") != "0.0.0.0":
            problems.append("--metrics_port without --metrics_host=0.0.0.0 is unreachable")
    problems += data_claim_problems(sts, c, flags, "")
    problems += guaranteed_qos_problems(c, flags, "")
    security = pod.get("securityContext", {})
    if security.get("runAsNonRoot") is not True:
        problems.append("securityContext.runAsNonRoot is not true")
    if image_uid is not None and security.get("runAsUser") != image_uid:
        problems.append(f"runAsUser {security.get('runAsUser')} != Dockerfile USER {image_uid}")
    grace = pod.get("terminationGracePeriodSeconds", 30)
    if grace < MIN_STOP_SECONDS:
        problems.append(f"terminationGracePeriodSeconds {grace}: want >= {MIN_STOP_SECONDS}")
    labels = sts["template"]["metadata"].get("labels", {})
    if sts["selector"].get("matchLabels") != labels:
        problems.append("StatefulSet selector does not match the pod labels")
    headless = [s for s in services if s["spec"].get("clusterIP") == "None"]
    if not any(s["metadata"]["name"] == sts.get("serviceName") for s in headless):
        problems.append(f"serviceName {sts.get('serviceName')} is not a headless Service")
    for s in services:
        name = s["metadata"]["name"]
        selector = s["spec"].get("selector", {})
        if not selector or any(labels.get(k) != v for k, v in selector.items()):
            problems.append(f"Service {name}: selector does not match the pods")
        for p in s["spec"].get("ports", []):
            target = p.get("targetPort")
            number = ports.get(target) if isinstance(target, str) else target
            if number is None:
                problems.append(f"Service {name}: targetPort {target} is not a container port")
            elif p.get("name") == "grpc" and (number != port or p.get("port") != port):
                problems.append(f"Service {name}: grpc port {p.get('port')}->{number}, want {port}")
    report("k8s fields", problems)
    return {"flags": flags}


# ------------------------------------------------------------------- cluster
#
# deploy/k8s/cluster/ and deploy/compose/cluster.yml: cohortd in cluster mode
# (--cluster_nats) on a NATS cluster with JetStream.

K8S_CLUSTER = Path("deploy/k8s/cluster")
COMPOSE_CLUSTER = Path("deploy/compose/cluster.yml")
CLUSTER_KINDS = {"StatefulSet": "apps/v1", "Service": "v1", "ConfigMap": "v1",
                 "PodDisruptionBudget": "policy/v1"}
DRAIN_SECONDS = 10  # cohortd waits this long for calls in progress at SIGTERM


def nats_block(text, name):
    """The inside of a top-level `name { ... }` block of a nats.conf, or None."""
    match = re.search(rf"^{name}\s*[:=]?\s*\{{(.*?)^\}}", text, re.M | re.S)
    return match.group(1) if match else None


def nats_port(text, key):
    match = re.search(rf"^\s*{key}\s*[:=]\s*\"?[\w.\[\]:]*?:(\d+)\"?\s*$", text, re.M)
    return int(match.group(1)) if match else None


def nats_config(text, where):
    """What the checks need of a nats.conf (the subset these files use:
    `key: value` lines and `name { ... }` blocks), and its problems."""
    problems = []
    text = "\n".join(line.split("#", 1)[0].rstrip() for line in text.splitlines())
    jetstream, cluster = nats_block(text, "jetstream"), nats_block(text, "cluster")
    top = text
    for block in (jetstream, cluster):
        top = top.replace(block or "\0", "")
    found = {"client_port": nats_port(top, "listen"), "monitor_port": nats_port(top, "http"),
             "cluster_port": nats_port(cluster or "", "listen"), "routes": [],
             "store_dir": None, "name_variable": None}
    name = re.search(r"^server_name\s*[:=]\s*(\S+)", top, re.M)
    if not name:
        problems.append(f"{where}: no server_name")
    elif re.fullmatch(r"\$\w+", name.group(1)):
        found["name_variable"] = name.group(1)[1:]
    else:
        problems.append(f"{where}: server_name {name.group(1)} is one name for every "
                        "server: take it from an environment variable ($NAME)")
    if not re.search(r"^max_payload\s*[:=]\s*\S+", top, re.M):
        problems.append(f"{where}: no max_payload (bounds the largest Subscribe request)")
    for key in ("client_port", "monitor_port"):
        if found[key] is None:
            problems.append(f"{where}: no {'listen' if key == 'client_port' else 'http'} "
                            "host:port")
    if jetstream is None:
        problems.append(f"{where}: no jetstream block")
    else:
        if not re.search(r"^\s*sync_interval\s*[:=]\s*\"?always\"?\s*$", jetstream, re.M):
            problems.append(f"{where}: jetstream sync_interval is not always (an acknowledged "
                            "subscription must survive losing power on every machine)")
        store = re.search(r"^\s*store_dir\s*[:=]\s*\"?([^\"\s]+)", jetstream, re.M)
        found["store_dir"] = store.group(1) if store else None
        if not store:
            problems.append(f"{where}: jetstream has no store_dir")
        if not re.search(r"^\s*max_file_store\s*[:=]", jetstream, re.M):
            problems.append(f"{where}: jetstream has no max_file_store")
    if cluster is None:
        problems.append(f"{where}: no cluster block")
    else:
        if not re.search(r"^\s*name\s*[:=]\s*\S+", cluster, re.M):
            problems.append(f"{where}: the cluster block has no name")
        if found["cluster_port"] is None:
            problems.append(f"{where}: the cluster block has no listen host:port")
        found["routes"] = re.findall(r"nats-route://([\w.-]+):(\d+)", cluster)
        if not found["routes"]:
            problems.append(f"{where}: the cluster block has no nats-route:// routes")
    return found, problems


def route_problems(routes, hosts, port, where):
    """Routes (host, port) must name every server in hosts, on the route port."""
    problems = []
    named = {host for host, _ in routes}
    if named != set(hosts):
        problems.append(f"{where}: routes {sorted(named)}, want every server {sorted(hosts)}")
    for host, route_port in routes:
        if port is not None and int(route_port) != port:
            problems.append(f"{where}: route {host}:{route_port} is not the cluster port {port}")
    return problems


def nats_urls(value):
    """--cluster_nats=nats://h:p,... -> [(host, port or None)]; None if malformed."""
    urls = []
    for url in (value or "").split(","):
        match = re.fullmatch(r"nats://([^:/,]+):(\d+)", url.strip())
        if not match:
            return None
        urls.append((match.group(1), int(match.group(2))))
    return urls


def container_port(container, name_or_number):
    ports = {p.get("name"): p.get("containerPort") for p in container.get("ports", [])}
    return ports.get(name_or_number) if isinstance(name_or_number, str) else name_or_number


def selects(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def env_from_field(container, name, field):
    for env in container.get("env") or []:
        if env.get("name") == name:
            ref = ((env.get("valueFrom") or {}).get("fieldRef") or {}).get("fieldPath")
            return ref == field
    return False


def check_k8s_cluster(flags_known, image_uid):
    problems = []
    docs = []
    for path in sorted(K8S_CLUSTER.glob("*.yaml")):
        docs += [(path.name, d) for d in yaml.safe_load_all(path.read_text()) if d]
    for name, d in docs:
        want = CLUSTER_KINDS.get(d.get("kind"))
        if want is None:
            problems.append(f"{name}: unexpected kind {d.get('kind')}")
        elif d.get("apiVersion") != want:
            problems.append(f"{name}: {d.get('kind')} apiVersion {d.get('apiVersion')}, "
                            f"want {want}")
    of_kind = lambda kind: [d for _, d in docs if d.get("kind") == kind]  # noqa: E731
    services, maps = of_kind("Service"), of_kind("ConfigMap")

    def with_container(name):
        found = [(s, c) for s in of_kind("StatefulSet")
                 for c in s["spec"]["template"]["spec"]["containers"] if c.get("name") == name]
        return found[0] if len(found) == 1 else (None, None)
    cohort_set, c = with_container("cohortd")
    nats_set, n = with_container("nats")
    if cohort_set is None or nats_set is None:
        report("k8s cluster fields", problems + [
            "want one StatefulSet with a container cohortd and one with a container nats"])
        return
    for kind_set in (cohort_set, nats_set):
        spec, who = kind_set["spec"], kind_set["metadata"]["name"]
        labels = spec["template"]["metadata"].get("labels", {})
        if spec["selector"].get("matchLabels") != labels:
            problems.append(f"StatefulSet {who}: selector does not match the pod labels")
        governing = [s for s in services if s["metadata"]["name"] == spec.get("serviceName")]
        if not governing or governing[0]["spec"].get("clusterIP") != "None" or \
                governing[0]["spec"].get("publishNotReadyAddresses") is not True:
            problems.append(f"StatefulSet {who}: serviceName {spec.get('serviceName')} is not a "
                            "headless Service with publishNotReadyAddresses: true")
        security = spec["template"]["spec"].get("securityContext", {})
        if security.get("runAsNonRoot") is not True:
            problems.append(f"StatefulSet {who}: securityContext.runAsNonRoot is not true")
        if not any(selects((p["spec"].get("selector") or {}).get("matchLabels"), labels)
                   for p in of_kind("PodDisruptionBudget")):
            problems.append(f"StatefulSet {who}: no PodDisruptionBudget selects its pods")
    for s in services:
        name = s["metadata"]["name"]
        pods = [x for x in (cohort_set, nats_set)
                if selects(s["spec"].get("selector"), x["spec"]["template"]["metadata"]["labels"])]
        if len(pods) != 1:
            problems.append(f"Service {name}: selects {len(pods)} of the StatefulSets, want one")
            continue
        container = c if pods[0] is cohort_set else n
        for p in s["spec"].get("ports", []):
            if container_port(container, p.get("targetPort")) is None:
                problems.append(f"Service {name}: targetPort {p.get('targetPort')} is not a "
                                "container port")
    cohort_labels = cohort_set["spec"]["template"]["metadata"]["labels"]
    for name, d in load_k8s():  # the single-node manifests of deploy/k8s/
        if d.get("kind") == "Service" and selects(d["spec"].get("selector"), cohort_labels):
            problems.append(f"{name}: single-node Service {d['metadata']['name']} selects the "
                            "cluster's pods")
        if d.get("kind") == "StatefulSet" and any(
                selects(s["spec"].get("selector"), d["spec"]["template"]["metadata"]["labels"])
                for s in services):
            problems.append(f"a cluster Service selects the pods of {name}")

    # NATS: its configuration, mounted from the ConfigMap.
    nats_spec = nats_set["spec"]
    nats_name, nats_peers = nats_set["metadata"]["name"], nats_spec.get("serviceName")
    nats_replicas = nats_spec.get("replicas", 1)
    if nats_spec.get("podManagementPolicy") != "Parallel":
        problems.append("StatefulSet nats: podManagementPolicy is not Parallel (JetStream needs "
                        "a majority up before any server is ready)")
    if nats_replicas < 3 or nats_replicas % 2 == 0:
        problems.append(f"StatefulSet nats: {nats_replicas} replicas, want an odd number >= 3")
    if not (n.get("image") or "").startswith("nats:") or not pinned(n.get("image")):
        problems.append(f"nats image {n.get('image')!r} is not nats: pinned to a version")
    command = list(n.get("command") or []) + list(n.get("args") or [])
    config_path = next((command[i + 1] for i, a in enumerate(command[:-1])
                        if a in ("--config", "-c")), None)
    pod_volumes = {v.get("name"): v for v in nats_spec["template"]["spec"].get("volumes", [])}
    text = None
    for mount in n.get("volumeMounts", []):
        folder = mount.get("mountPath", "").rstrip("/") + "/"
        source = (pod_volumes.get(mount.get("name")) or {}).get("configMap")
        if config_path and source and config_path.startswith(folder):
            cm = [m for m in maps if m["metadata"]["name"] == source.get("name")]
            text = ((cm[0].get("data") or {}) if cm else {}).get(config_path[len(folder):])
    if text is None:
        problems.append(f"nats --config {config_path} is not a file of a mounted ConfigMap")
        report("k8s cluster fields", problems)
        return
    conf, conf_problems = nats_config(text, "nats.conf")
    problems += conf_problems
    if conf["name_variable"] and not env_from_field(n, conf["name_variable"], "metadata.name"):
        problems.append(f"nats.conf server_name ${conf['name_variable']}: the nats container "
                        "has no such env from metadata.name")
    problems += route_problems(conf["routes"],
                               [f"{nats_name}-{i}.{nats_peers}" for i in range(nats_replicas)],
                               conf["cluster_port"], "nats.conf")
    for key, port_name in (("client_port", "client"), ("cluster_port", "cluster"),
                           ("monitor_port", "monitor")):
        if conf[key] is not None and container_port(n, port_name) != conf[key]:
            problems.append(f"nats containerPort {port_name} {container_port(n, port_name)} != "
                            f"nats.conf's {conf[key]}")
    claims = {t["metadata"]["name"] for t in nats_spec.get("volumeClaimTemplates", [])}
    if not any(m.get("name") in claims and conf["store_dir"] and
               (conf["store_dir"] + "/").startswith(m.get("mountPath", "").rstrip("/") + "/")
               for m in n.get("volumeMounts", [])):
        problems.append(f"jetstream store_dir {conf['store_dir']} is not on a volumeClaimTemplate")
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        get = (n.get(probe) or {}).get("httpGet") or {}
        if not get.get("path", "").startswith("/healthz") or \
                container_port(n, get.get("port")) != conf["monitor_port"]:
            problems.append(f"nats {probe}: want httpGet /healthz on the monitoring port")

    # cohortd in cluster mode.
    spec, pod = cohort_set["spec"], cohort_set["spec"]["template"]["spec"]
    flags = parse_flags(c.get("args", []))
    unknown = sorted(set(flags) - flags_known)
    if unknown:
        problems.append(f"cohortd args: unknown cohortd flags {unknown}")
    port = listen_port(flags, "cohortd args", problems)
    # The local copy of the log (docs/DESIGN.md section 11.8): on the pod's
    # own claim, so that a restart reads only the log after it.
    problems += data_claim_problems(spec, c, flags, "cohortd: ")
    if spec.get("replicas", 1) < 2:
        problems.append(f"StatefulSet {cohort_set['metadata']['name']}: {spec.get('replicas', 1)} "
                        "replica: a cluster wants several")
    defined = {e.get("name") for e in c.get("env") or []}
    used = {var for arg in c.get("args", []) for var in re.findall(r"\$\((\w+)\)", arg)}
    for var in sorted(used - defined):
        problems.append(f"cohortd args: $({var}) is not an env of the container")
    if flags.get("cluster_node") != "$(POD_NAME)" or \
            not env_from_field(c, "POD_NAME", "metadata.name"):
        problems.append("cohortd: want --cluster_node=$(POD_NAME) with POD_NAME from "
                        "metadata.name (a name of its own for each node)")
    age = flags.get("max_connection_age_ms") or "0"
    if not age.isdigit() or int(age) <= 0:
        problems.append("cohortd: no --max_connection_age_ms (clients never find new nodes)")
    replicas = flags.get("cluster_replicas") or "3"
    if not replicas.isdigit() or not 1 <= int(replicas) <= nats_replicas:
        problems.append(f"--cluster_replicas={replicas}: want 1 to the {nats_replicas} "
                        "NATS servers")
    urls = nats_urls(re.sub(r"\$\((\w+)\)", r"\1", flags.get("cluster_nats") or ""))
    if not flags.get("cluster_nats") or urls is None:
        problems.append(f"--cluster_nats={flags.get('cluster_nats')}: want nats://host:port,...")
    else:
        wanted = {f"{nats_name}-{i}.{nats_peers}" for i in range(nats_replicas)}
        named = set()
        for host, url_port in urls:
            pod_name = ".".join(host.split(".")[:2])
            if pod_name not in wanted:
                problems.append(f"--cluster_nats: {host} is not a NATS pod ({sorted(wanted)})")
            named.add(pod_name)
            if url_port != conf["client_port"]:
                problems.append(f"--cluster_nats: {host}:{url_port} is not the NATS client "
                                f"port {conf['client_port']}")
        if named != wanted:
            problems.append(f"--cluster_nats misses NATS pods {sorted(wanted - named)}")
    ports = {p.get("name"): p.get("containerPort") for p in c.get("ports", [])}
    if ports.get("grpc") != port:
        problems.append(f"cohortd containerPort grpc {ports.get('grpc')} != --listen port {port}")
    metrics = flags.get("metrics_port")
    if metrics is None or str(ports.get("metrics")) != metrics or \
            flags.get("metrics_host") != "0.0.0.0":
        problems.append("cohortd: want --metrics_port as containerPort metrics and "
                        "--metrics_host=0.0.0.0")
    annotations = spec["template"]["metadata"].get("annotations") or {}
    if annotations.get("prometheus.io/port") != metrics:
        problems.append(f"annotation prometheus.io/port {annotations.get('prometheus.io/port')} "
                        f"!= --metrics_port {metrics}")
    readiness = (c.get("readinessProbe") or {}).get("grpc") or {}
    service_name = health_service_name()
    if readiness.get("port") != port or readiness.get("service") != service_name:
        problems.append(f"cohortd readinessProbe: want grpc on port {port}, service "
                        f"{service_name!r} (NOT_SERVING until caught up with the log)")
    for probe in ("startupProbe", "livenessProbe"):
        spec_probe = c.get(probe) or {}
        if "grpc" in spec_probe:
            problems.append(f"cohortd {probe}: the gRPC health check is NOT_SERVING while the "
                            "log is unreachable, so a NATS outage would restart every node "
                            "(use tcpSocket)")
        elif container_port(c, (spec_probe.get("tcpSocket") or {}).get("port")) != port:
            problems.append(f"cohortd {probe}: want tcpSocket on the gRPC port {port}")
    problems += guaranteed_qos_problems(c, flags, "cohortd ")
    security = pod.get("securityContext", {})
    if image_uid is not None and security.get("runAsUser") != image_uid:
        problems.append(f"cohortd runAsUser {security.get('runAsUser')} != Dockerfile USER "
                        f"{image_uid}")
    if pod.get("terminationGracePeriodSeconds", 30) < DRAIN_SECONDS + 5:
        problems.append("cohortd terminationGracePeriodSeconds: want >= "
                        f"{DRAIN_SECONDS + 5} for the drain")
    mine = [s for s in services if selects(s["spec"].get("selector"), cohort_labels)]
    clients = [s for s in mine if s["spec"].get("clusterIP") == "None" and
               not s["spec"].get("publishNotReadyAddresses")]
    if not clients:
        problems.append("no headless Service of ready cohortd pods only (for clients' "
                        "dns:/// round_robin)")
    for s in mine:
        grpc = [p for p in s["spec"].get("ports", []) if p.get("name") == "grpc"]
        if not grpc or grpc[0].get("port") != port or \
                container_port(c, grpc[0].get("targetPort")) != port:
            problems.append(f"Service {s['metadata']['name']}: want port grpc {port}")
    report("k8s cluster fields", problems)


def check_compose_cluster(flags_known):
    problems = []
    compose = yaml.safe_load(COMPOSE_CLUSTER.read_text()) or {}
    services = compose.get("services") or {}
    base = COMPOSE_CLUSTER.parent
    cohortd = {name: s for name, s in services.items() if s.get("image") == "cohortd"}
    nats = {name: s for name, s in services.items()
            if str(s.get("image", "")).startswith("nats:")}
    if len(cohortd) < 2 or len(nats) < 3:
        problems.append(f"{len(cohortd)} cohortd and {len(nats)} nats services: want a cluster")
    configs = {}
    for name, service in nats.items():
        if not pinned(service.get("image")):
            problems.append(f"{name}: image {service.get('image')!r} is not pinned")
        command = compose_list(service.get("command"))
        path = next((command[i + 1] for i, a in enumerate(command[:-1])
                     if a in ("--config", "-c")), None)
        host = host_path(mounts(service, base), path or "")
        if host is None or not host.is_file():
            problems.append(f"{name}: --config {path} is not a bind-mounted file")
            continue
        conf, conf_problems = nats_config(host.read_text(), f"{name} {host.name}")
        problems += conf_problems
        configs[name] = conf
        variable = conf["name_variable"]
        if variable and not (service.get("environment") or {}).get(variable):
            problems.append(f"{name}: server_name ${variable} is not in its environment")
        problems += route_problems(conf["routes"], list(nats), conf["cluster_port"],
                                   f"{name} {host.name}")
    names = [(s.get("environment") or {}).get((configs.get(n) or {}).get("name_variable"))
             for n, s in nats.items()]
    if len(set(names)) != len(names):
        problems.append(f"NATS server names {names} are not distinct")
    nodes = []
    data_volumes: set = set()
    for name, service in cohortd.items():
        build = service.get("build") or {}
        if (base / str(build.get("context", "."))).resolve() != Path(".").resolve() or \
                build.get("dockerfile") != "deploy/Dockerfile":
            problems.append(f"{name}: not built from the repository root with deploy/Dockerfile")
        flags = parse_flags(compose_list(service.get("command")))
        unknown = sorted(set(flags) - flags_known)
        if unknown:
            problems.append(f"{name}: unknown cohortd flags {unknown}")
        listen_port(flags, name, problems)
        volumes = {str(v).split(":")[1] if ":" in str(v) else None: str(v).split(":")[0]
                   for v in service.get("volumes") or []}
        source = volumes.get(flags.get("data_dir"))
        if source is None or source in data_volumes:
            problems.append(f"{name}: --data_dir={flags.get('data_dir')} is not on a volume "
                            "of its own")
        data_volumes.add(source)
        urls = nats_urls(flags.get("cluster_nats"))
        if not flags.get("cluster_nats") or urls is None:
            problems.append(f"{name}: --cluster_nats={flags.get('cluster_nats')}: want "
                            "nats://host:port,... (cluster mode)")
        else:
            for host, port in urls:
                if host not in configs or port != configs[host]["client_port"]:
                    problems.append(f"{name}: --cluster_nats {host}:{port} is not a NATS "
                                    "service's client port")
            if {host for host, _ in urls} != set(nats):
                problems.append(f"{name}: --cluster_nats does not name every NATS service")
        nodes.append(flags.get("cluster_node"))
        grace = duration_seconds(service.get("stop_grace_period") or "10s")
        if grace is None or grace < DRAIN_SECONDS + 5:
            problems.append(f"{name}: stop_grace_period {service.get('stop_grace_period')}: "
                            f"want >= {DRAIN_SECONDS + 5}s for the drain")
    if None in nodes or len(set(nodes)) != len(nodes):
        problems.append(f"--cluster_node {nodes}: want one name of its own per cohortd")
    for name, service in services.items():
        for published in service.get("ports") or []:
            if not str(published).startswith("127.0.0.1:"):
                problems.append(f"{name}: port {published} is published beyond 127.0.0.1")
    report("compose cluster", problems)


# ------------------------------------------------------------ observability

OBS = Path("deploy/observability")
SEVERITIES = ("warning", "critical")
GRID_COLUMNS = 24


def pinned(image):
    """An image reference with an explicit version tag (or a digest)."""
    name, _, tag = (image or "").rpartition(":")
    return "@sha256:" in (image or "") or (
        bool(name) and "/" not in tag and tag != "latest" and any(c.isdigit() for c in tag))


def compose_list(value):
    """A compose command/entrypoint: a list, or a string split as a shell would."""
    if isinstance(value, str):
        return shlex.split(value)
    return [str(v) for v in value or []]


def duration_seconds(value):
    """Compose/Prometheus durations ("300s", "5m", "1m30s") -> seconds."""
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)", str(value or ""))
    if not parts or "".join(a + b for a, b in parts) != str(value):
        return None
    return sum(float(number) * units[unit] for number, unit in parts)


def check_prometheus_config(expected_port):
    problems = []
    path = OBS / "prometheus/prometheus.yml"
    config = yaml.safe_load(path.read_text()) or {}
    interval = (config.get("global") or {}).get("scrape_interval")
    if duration_seconds(interval) is None:
        problems.append(f"global.scrape_interval {interval!r} is not a duration")
    for rule_file in config.get("rule_files") or []:
        if not (path.parent / rule_file).is_file():
            problems.append(f"rule_files: {rule_file} does not exist beside prometheus.yml")
    if not config.get("rule_files"):
        problems.append("no rule_files (alerts.yml)")
    jobs = {job.get("job_name"): job for job in config.get("scrape_configs") or []}
    job = jobs.get("cohortd")
    targets = []
    if job is None:
        problems.append(f"no scrape job named cohortd (jobs: {sorted(jobs)})")
    else:
        if job.get("metrics_path", "/metrics") != "/metrics":
            problems.append(f"metrics_path {job.get('metrics_path')}: cohortd serves /metrics")
        targets = [target for static in job.get("static_configs") or []
                   for target in static.get("targets") or []]
        if not targets:
            problems.append("job cohortd has no static target")
        for target in targets:
            host, _, port = str(target).rpartition(":")
            if expected_port is not None and port != str(expected_port):
                problems.append(f"target {target}: port is not --metrics_port={expected_port}")
    report("prometheus config", problems)
    return {"interval": interval, "targets": targets, "jobs": set(jobs)}


def alert_test_cases(path):
    """{alertname: set of 'fires'/'quiet'} from a promtool unit test file."""
    tests = yaml.safe_load(path.read_text()) or {}
    cases = {}
    for test in tests.get("tests") or []:
        for case in test.get("alert_rule_test") or []:
            cases.setdefault(case.get("alertname"), set()).add(
                "fires" if case.get("exp_alerts") else "quiet")
    return tests, cases


def check_alert_rules(jobs):
    problems = []
    path = OBS / "prometheus/alerts.yml"
    rules = yaml.safe_load(path.read_text()) or {}
    alerts = []
    for group in rules.get("groups") or []:
        if not group.get("name") or not group.get("rules"):
            problems.append(f"group {group.get('name')!r}: needs a name and rules")
        for rule in group.get("rules") or []:
            name = rule.get("alert") or rule.get("record")
            if not name or ("alert" in rule) == ("record" in rule):
                problems.append(f"rule {rule}: exactly one of alert: and record: is needed")
                continue
            if not isinstance(rule.get("expr"), str) or not rule["expr"].strip():
                problems.append(f"{name}: no expr")
                continue
            for job in re.findall(r'\bjob\s*=\s*"([^"]*)"', rule["expr"]):
                if job not in jobs:
                    problems.append(f"{name}: job=\"{job}\" is not a scrape job of prometheus.yml")
            if "record" in rule:
                continue
            alerts.append(name)
            if duration_seconds(rule.get("for")) is None:
                problems.append(f"{name}: no for: duration")
            if (rule.get("labels") or {}).get("severity") not in SEVERITIES:
                problems.append(f"{name}: severity label is not one of {SEVERITIES}")
            annotations = rule.get("annotations") or {}
            for key in ("summary", "description"):
                if not annotations.get(key):
                    problems.append(f"{name}: no {key} annotation")
    if len(set(alerts)) != len(alerts):
        problems.append("alert names are not unique")
    if not alerts:
        problems.append("no alerts")
    tests, cases = alert_test_cases(OBS / "prometheus/alerts_test.yml")
    if "alerts.yml" not in (tests.get("rule_files") or []):
        problems.append("alerts_test.yml does not load alerts.yml")
    for name in alerts:
        missing = {"fires", "quiet"} - cases.get(name, set())
        if missing:
            problems.append(f"alerts_test.yml: no case where {name} {' or '.join(sorted(missing))}")
    for name in sorted(set(cases) - set(alerts)):
        problems.append(f"alerts_test.yml tests {name}, which alerts.yml does not define")
    report("alert rules", problems)


def panels_of(dashboard):
    found = []
    def walk(panels):
        for panel in panels or []:
            found.append(panel)
            walk(panel.get("panels"))
    walk(dashboard.get("panels"))
    return found


def datasource_uid(datasource):
    if isinstance(datasource, dict):
        return datasource.get("uid"), datasource.get("type")
    return datasource, None


def check_dashboard():
    problems = []
    path = OBS / "grafana/dashboards/cohort.json"
    dashboard = json.loads(path.read_text())
    if not isinstance(dashboard.get("schemaVersion"), int) or dashboard["schemaVersion"] < 36:
        problems.append(f"schemaVersion {dashboard.get('schemaVersion')}: "
                        "want 36 or later (Grafana 9+)")
    if not dashboard.get("uid") or not dashboard.get("title"):
        problems.append("no uid or title")
    variables = {v.get("name"): v for v in (dashboard.get("templating") or {}).get("list", [])}
    source_names = [n for n, v in variables.items()
                    if v.get("type") == "datasource" and v.get("query") == "prometheus"]
    if not source_names:
        problems.append("no template variable of type datasource with query prometheus")
    allowed = ({f"${{{n}}}" for n in source_names} | {f"${n}" for n in source_names} |
               {"${DS_PROMETHEUS}"})
    if (variables.get("instance") or {}).get("type") != "query":
        problems.append("no query variable named instance")
    elif datasource_uid(variables["instance"].get("datasource"))[0] not in allowed:
        problems.append("variable instance does not use the datasource variable")
    ids, boxes = set(), []
    for panel in panels_of(dashboard):
        where = f"panel {panel.get('id')} {panel.get('title', '')!r}"
        if panel.get("id") in ids:
            problems.append(f"{where}: id used twice")
        ids.add(panel.get("id"))
        grid = panel.get("gridPos") or {}
        x, y, w, h = (grid.get(k) for k in ("x", "y", "w", "h"))
        if not all(isinstance(v, int) for v in (x, y, w, h)) or x < 0 or w <= 0 or h <= 0 \
                or x + w > GRID_COLUMNS:
            problems.append(f"{where}: gridPos {grid} is not inside the {GRID_COLUMNS}-column grid")
        else:
            for other, (ox, oy, ow, oh) in boxes:
                if x < ox + ow and ox < x + w and y < oy + oh and oy < y + h:
                    problems.append(f"{where} overlaps panel {other}")
            boxes.append((panel.get("id"), (x, y, w, h)))
        if panel.get("type") == "row":
            continue
        uid, kind = datasource_uid(panel.get("datasource"))
        if uid not in allowed or kind not in (None, "prometheus"):
            problems.append(f"{where}: datasource {panel.get('datasource')} is not the "
                            f"datasource variable {sorted(allowed)}")
        targets = panel.get("targets") or []
        if not targets:
            problems.append(f"{where}: no targets")
        for target in targets:
            if not target.get("refId") or not str(target.get("expr", "")).strip():
                problems.append(f"{where}: a target without refId or expr")
            if "datasource" in target and datasource_uid(target["datasource"])[0] not in allowed:
                problems.append(f"{where}: target {target.get('refId')} has another datasource")
    report("grafana dashboard", problems)


def mounts(service, base=None):
    """{container path: host path} of a compose service's bind mounts (short
    syntax); relative sources are relative to base (default observability/)."""
    base = OBS if base is None else base
    found = {}
    for volume in service.get("volumes") or []:
        if isinstance(volume, dict):
            source, target = volume.get("source", ""), volume.get("target")
        else:
            source, target = (str(volume).split(":") + [""])[:2]
        if source.startswith((".", "/")):
            found[target] = (base / source).resolve() if source.startswith(".") else Path(source)
        else:
            found[target] = None  # a named volume
    return found


def host_path(service_mounts, container_path):
    """The host file behind a container path, through the longest bind mount."""
    for target in sorted((t for t in service_mounts if service_mounts[t]), key=len, reverse=True):
        if container_path == target or container_path.startswith(target.rstrip("/") + "/"):
            return service_mounts[target] / container_path[len(target):].lstrip("/")
    return None


def check_provisioning(compose, prometheus):
    problems = []
    services = compose.get("services") or {}
    grafana = services.get("grafana") or {}
    grafana_mounts = mounts(grafana)
    provisioning = OBS / "grafana/provisioning"
    sources = yaml.safe_load((provisioning / "datasources/prometheus.yaml").read_text()) or {}
    prometheus_sources = [d for d in sources.get("datasources") or []
                          if d.get("type") == "prometheus"]
    if not prometheus_sources:
        problems.append("no prometheus data source")
    for source in prometheus_sources:
        match = re.fullmatch(r"http://([\w.-]+):(\d+)/?", str(source.get("url", "")))
        if not match or match.group(1) not in services:
            problems.append(f"data source url {source.get('url')} is not a compose service")
        elif match.group(2) != "9090":
            problems.append(f"data source url {source.get('url')}: Prometheus listens on 9090")
        interval = (source.get("jsonData") or {}).get("timeInterval")
        if interval != prometheus.get("interval"):
            problems.append(f"jsonData.timeInterval {interval} != scrape_interval "
                            f"{prometheus.get('interval')}")
    providers = yaml.safe_load((provisioning / "dashboards/cohort.yaml").read_text()) or {}
    for provider in providers.get("providers") or []:
        folder = host_path(grafana_mounts, (provider.get("options") or {}).get("path", ""))
        if provider.get("type") != "file" or folder is None:
            problems.append(f"provider {provider.get('name')}: path is not a bind mount "
                            "of compose.yaml's grafana")
        elif not (folder / "cohort.json").is_file():
            problems.append(f"provider {provider.get('name')}: {folder} has no cohort.json")
    if not providers.get("providers"):
        problems.append("no dashboard provider")
    mounted = host_path(grafana_mounts, "/etc/grafana/provisioning")
    if mounted is None or mounted.resolve() != provisioning.resolve():
        problems.append("compose.yaml does not mount grafana/provisioning "
                        "at /etc/grafana/provisioning")
    home = (grafana.get("environment") or {}).get("GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH")
    if home and not (host_path(grafana_mounts, home) or Path("/nonexistent")).is_file():
        problems.append(f"GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH {home} is not a mounted file")
    report("grafana provisioning", problems)


def check_compose(compose, flags_known, docker):
    problems = []
    services = compose.get("services") or {}
    for name in ("cohortd", "prometheus", "grafana"):
        if name not in services:
            problems.append(f"no service {name}")
    cohortd = services.get("cohortd") or {}
    build = cohortd.get("build") or {}
    context = (OBS / str(build.get("context", "."))).resolve()
    if context != Path(".").resolve() or build.get("dockerfile") != "deploy/Dockerfile":
        problems.append("cohortd is not built from the repository root with deploy/Dockerfile")
    documents = Path("deploy/Dockerfile").read_text() + Path("deploy/README.md").read_text()
    tags = set(re.findall(r"docker build -f deploy/Dockerfile -t ([\w./:-]+) \.", documents))
    if cohortd.get("image") not in tags:
        problems.append(f"cohortd image {cohortd.get('image')!r} is not the name deploy/Dockerfile "
                        f"and deploy/README.md build ({sorted(tags)})")
    flags = parse_flags(compose_list(cohortd.get("command")))
    unknown = sorted(set(flags) - flags_known)
    if unknown:
        problems.append(f"cohortd command: unknown cohortd flags {unknown}")
    for flag, value in (docker.get("flags") or {}).items():
        if flags.get(flag) != value:
            problems.append(f"cohortd command: --{flag}={flags.get(flag)}, the Dockerfile's "
                            f"CMD has --{flag}={value} (a command replaces all of CMD)")
    port = listen_port(flags, "cohortd command", problems)
    if flags.get("metrics_host") != "0.0.0.0" or flags.get("metrics_port") is None:
        problems.append("cohortd command: Prometheus needs --metrics_port and "
                        "--metrics_host=0.0.0.0")
    if flags.get("data_dir") not in mounts(cohortd):
        problems.append(f"--data_dir={flags.get('data_dir')} is not a volume of the "
                        "cohortd service")
    grace = duration_seconds(cohortd.get("stop_grace_period"))
    if grace is None or grace < MIN_STOP_SECONDS:
        problems.append(f"cohortd stop_grace_period {cohortd.get('stop_grace_period')}: "
                        f"want >= {MIN_STOP_SECONDS}s for the shutdown snapshot")
    for name in ("prometheus", "grafana"):
        image = (services.get(name) or {}).get("image")
        if not pinned(image):
            problems.append(f"{name} image {image!r} is not pinned to a version")
    prometheus = services.get("prometheus") or {}
    config = next((a.split("=", 1)[1] for a in compose_list(prometheus.get("command"))
                   if a.startswith("--config.file=")), "/etc/prometheus/prometheus.yml")
    config_host = host_path(mounts(prometheus), config)
    wanted = (OBS / "prometheus/prometheus.yml").resolve()
    if config_host is None or config_host.resolve() != wanted:
        problems.append(f"prometheus --config.file={config} is not prometheus/prometheus.yml")
    cli_flags = known_flags("client/cohort_main.cc")
    for name, service in services.items():
        for container_path, host in mounts(service).items():
            if host is not None and not host.exists():
                problems.append(f"{name}: bind mount {host} does not exist")
        for published in service.get("ports") or []:
            if not str(published).startswith("127.0.0.1:"):
                problems.append(f"{name}: port {published} is published beyond 127.0.0.1")
        if compose_list(service.get("entrypoint"))[:1] == ["/usr/local/bin/cohort"]:
            cli = parse_flags(compose_list(service.get("command")))
            unknown = sorted(set(cli) - cli_flags)
            if unknown:
                problems.append(f"{name}: unknown cohort flags {unknown}")
            if cli.get("server") != f"cohortd:{port}":
                problems.append(f"{name}: --server={cli.get('server')}, want cohortd:{port}")
    report("compose", problems)
    return {"metrics_port": flags.get("metrics_port")}


def check_observability(flags_known, docker):
    compose = guarded("compose", lambda: yaml.safe_load((OBS / "compose.yaml").read_text()) or {})
    found = guarded("compose", check_compose, compose, flags_known, docker) if compose else {}
    # compose.yaml repeats the Dockerfile's CMD flags (check_compose), so
    # either gives the port Prometheus must scrape.
    metrics_port = found.get("metrics_port") or (docker.get("flags") or {}).get("metrics_port")
    prometheus = guarded("prometheus config", check_prometheus_config, metrics_port)
    guarded("alert rules", check_alert_rules, prometheus.get("jobs") or set())
    guarded("grafana dashboard", check_dashboard)
    if compose:
        guarded("grafana provisioning", check_provisioning, compose, prometheus)


def guarded(name, check, *args):
    """check(*args), or a FAILED line if the files are too malformed to check."""
    try:
        return check(*args)
    except (OSError, KeyError, TypeError, AttributeError, ValueError, IndexError,
            yaml.YAMLError) as error:  # json.JSONDecodeError is a ValueError
        report(name, [f"cannot check: {type(error).__name__}: {error}"])
        return {}


def main():
    flags_known = known_flags()
    if not flags_known:
        report("flags", ["no ABSL_FLAG found in service/cohortd_main.cc"])
        return 1
    docker = guarded("dockerfile", check_dockerfile, flags_known)
    systemd = guarded("systemd fields", check_systemd, flags_known)
    k8s = guarded("k8s fields", check_k8s, flags_known, docker.get("uid"))
    dirs = {where: (found.get("flags") or {}).get("data_dir")
            for where, found in (("Dockerfile", docker), ("systemd", systemd), ("k8s", k8s))}
    # A file that could not be checked at all has already failed above.
    report("data dir", [f"{where}: --data_dir={d}, want {DATA_DIR}"
                        for where, d in dirs.items()
                        if d != DATA_DIR and (where == "Dockerfile" or d is not None)])
    guarded("k8s cluster fields", check_k8s_cluster, flags_known, docker.get("uid"))
    guarded("compose cluster", check_compose_cluster, flags_known)
    check_observability(flags_known, docker)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
