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
"""

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


def known_flags():
    source = Path("service/cohortd_main.cc").read_text()
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
    data_dir = flags.get("data_dir")
    claims = {t["metadata"]["name"] for t in sts.get("volumeClaimTemplates", [])}
    mounts = {m.get("mountPath"): m.get("name") for m in c.get("volumeMounts", [])}
    if mounts.get(data_dir) not in claims:
        problems.append(f"--data_dir={data_dir} is not mounted from a volumeClaimTemplate {sorted(claims)}")
    resources = c.get("resources", {})
    requests, limits = resources.get("requests", {}), resources.get("limits", {})
    if not requests or requests != limits:
        problems.append(f"resources: requests {requests} != limits {limits} (not Guaranteed QoS)")
    cpu = str(limits.get("cpu", ""))
    if not cpu.isdigit():
        problems.append(f"limits.cpu {cpu!r}: want an integer (exclusive cores)")
    elif flags.get("partitions", "0").isdigit() and int(flags.get("partitions", "0")) > int(cpu):
        problems.append(f"--partitions={flags['partitions']} exceeds cpu {cpu}")
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


def guarded(name, check, *args):
    """check(*args), or a FAILED line if the files are too malformed to check."""
    try:
        return check(*args)
    except (OSError, KeyError, TypeError, AttributeError, ValueError, IndexError,
            yaml.YAMLError) as error:
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
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
