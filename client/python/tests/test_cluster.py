"""Cluster mode against real processes: three cohortd over a three-server
NATS JetStream cluster, started by deploy/local-cluster.sh
(docs/DESIGN.md section 11).

Properties:
  - agreement: randomized subscribes, unsubscribes and publishes spread
    over the nodes (a cluster client, round robin); every publish answer
    equals the brute-force reference over the log's state, and at the end
    every node holds the same subscriptions and answers alike;
  - read your writes across nodes, and the wait for a position bounded by
    the deadline;
  - a retried change (same request_id) is applied once;
  - faults, nothing acknowledged lost: kill -9 of a cohortd (it rejoins and
    agrees), kill -9 of one nats-server, a node cut off from NATS while the
    others carry on (it reaches NATS only through a TCP proxy that the test
    turns into a black hole: connections stay open, no byte passes; it goes
    NOT_SERVING within the lost timeout, refuses calls while cut off, and
    agrees again once reconnected), and every NATS server stopped (nodes go
    NOT_SERVING, then recover).
"""

from __future__ import annotations

import hashlib
import os
import queue
import random
import re
import select
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable, Dict, Iterable, Iterator, List, Set

import grpc
import pytest

import cohort
from cohort import F, Filter
from cohort.v1 import pubsub_pb2 as pb
from cohort.v1 import pubsub_pb2_grpc as pb_grpc
from helpers import REPO_ROOT, Server, cohortd_path
from test_differential import random_event, random_filter

Event = Dict[str, cohort.AttributeValue]
SCRIPT = REPO_ROOT / "deploy" / "local-cluster.sh"
LOST_TIMEOUT_MS = 1000
# --snapshot_every of the test cluster's nodes.
SNAPSHOT_EVERY = 300
# --cluster_trim_grace_ms: longer than any outage the tests cause, short
# enough for test_a_new_node_joins_from_the_shared_snapshot to see a trim.
TRIM_GRACE_MS = 15000
# COHORT_CLUSTER_LONG=1 (bench/cluster_faults.sh): the long variants, over
# 100k whole-event checks against the reference and 20 kill -9 cycles.
LONG = os.environ.get("COHORT_CLUSTER_LONG") == "1"
AGREEMENT_ROUNDS = 1000 if LONG else 60
KILL_CYCLES = 20 if LONG else 5
# Unsubscribe more once this many are live (the reference is brute force).
LIVE_CAP = 1500


class Cluster:
    """deploy/local-cluster.sh up 3, in a directory of its own."""

    def __init__(self, directory: Path) -> None:
        self.env = dict(os.environ,
                        COHORT_CLUSTER_DIR=str(directory),
                        COHORTD=str(cohortd_path()))
        self.dir = directory
        # Small folds: every test runs with shared snapshots being
        # published and the log being trimmed behind them.
        out = self._run("up", "3", "--partitions=1",
                        f"--cluster_lost_timeout_ms={LOST_TIMEOUT_MS}",
                        f"--snapshot_every={SNAPSHOT_EVERY}",
                        f"--cluster_trim_grace_ms={TRIM_GRACE_MS}")
        self.addresses: List[str] = out.split()
        assert len(self.addresses) == 3, out

    def _run(self, *args: str) -> str:
        done = subprocess.run([str(SCRIPT), *args],
                              env=self.env,
                              stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE,
                              text=True,
                              timeout=120,
                              check=False)
        assert done.returncode == 0, (args, done.stderr[-3000:])
        return done.stdout

    def kill(self, kind: str, i: int, signal: str = "KILL") -> None:
        self._run("kill", kind, str(i), signal)

    def start(self, kind: str, i: int) -> None:
        """Starts process i again, on the same ports."""
        out = self._run("start", kind, str(i))
        if kind == "cohortd":
            assert out.split()[-1] == self.addresses[i - 1], out

    @property
    def target(self) -> str:
        return ",".join(self.addresses)

    def down(self) -> None:
        self._run("down")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = Cluster(tmp_path_factory.mktemp("cluster"))
    yield c
    c.down()


def stats(address: str) -> pb.Stats:
    with cohort.Client(address) as c:
        return c.stats()


def wait_until(predicate: Callable[[], bool], seconds: float,
               what: str) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"not within {seconds} s: {what}")


def caught_up(address: str, position: int) -> bool:
    """Whether the node at `address` serves and has applied `position`."""
    cluster = stats(address).cluster
    return cluster.serving and cluster.applied_position >= position


def node_client(address: str, position: int) -> cohort.Client:
    """A client of one node that reads at least up to `position`."""
    c = cohort.Client(address)
    c._note_position(position)  # pylint: disable=protected-access
    return c


def expected_ids(live: Dict[int, Filter], event: Event) -> List[int]:
    return sorted(i for i, f in live.items() if cohort.matches(f, event))


def check_publish(client: cohort.Client, live: Dict[int, Filter],
                  events: List[Event]) -> int:
    """Publishes `events`; asserts every answer; returns the decisions
    checked (events x live subscriptions)."""
    results = client.publish(events, return_ids=True)
    assert len(results) == len(events)
    for event, result in zip(events, results):
        want = expected_ids(live, event)
        assert list(result.subscription_ids) == want, (
            f"{client.target}: event {event}")
    return len(events) * max(1, len(live))


def test_agreement_with_the_reference(cluster: Cluster) -> None:
    rng = random.Random(42)
    live: Dict[int, Filter] = {}
    seen_ids: Set[int] = set()
    decisions = 0
    events_checked = 0
    with cohort.Client(cluster.target) as client:
        assert client.cluster
        for round_ in range(AGREEMENT_ROUNDS):
            filters = [random_filter(rng) for _ in range(rng.randint(5, 30))]
            ids = client.subscribe(f"s{round_ % 7}", *filters)
            assert len(ids) == len(filters)
            assert not seen_ids & set(ids), "an id was reused"
            assert all(i > 0 for i in ids)
            seen_ids.update(ids)
            live.update(zip(ids, filters))
            if live and rng.random() < 0.6:
                k = (rng.randint(1, 10) if len(live) < LIVE_CAP else
                     rng.randint(20, 40))
                gone = rng.sample(sorted(live), min(len(live), k))
                client.unsubscribe(gone)
                for i in gone:
                    del live[i]
                # Decided in log order, on whichever node answers.
                with pytest.raises(cohort.NotFound):
                    client.unsubscribe([gone[0]])
            events = [random_event(rng) for _ in range(100)]
            decisions += check_publish(client, live, events)
            events_checked += len(events)
        position = client.log_position
    assert position > 0
    # Every node: the same subscriptions, the same answers.
    events = [random_event(random.Random(7)) for _ in range(300)]
    for address in cluster.addresses:
        with node_client(address, position) as c:
            decisions += check_publish(c, live, events)
            events_checked += len(events)
        s = stats(address)
        assert s.subscriptions == len(live)
        assert s.cluster.applied_position >= position
        assert s.cluster.serving
        assert s.cluster.appended > 0, f"{address} answered no change"
    assert events_checked >= AGREEMENT_ROUNDS * 100 + 900
    assert decisions >= 100_000, decisions
    print(f"agreement: {events_checked} events, {decisions} decisions")


def test_read_your_writes_across_nodes(cluster: Cluster) -> None:
    a = cluster.addresses
    for i in range(30):
        with cohort.Client(a[i % 3]) as writer:
            [sid] = writer.subscribe(f"ryw{i}", f"ryw = {i}")
            position = writer.log_position
        with node_client(a[(i + 1) % 3], position) as reader:
            [result] = reader.publish({"ryw": i}, return_ids=True)
            assert sid in result.subscription_ids
    # A position the log has not reached: the wait ends at the deadline.
    channel = grpc.insecure_channel(a[0])
    stub = pb_grpc.PubSubStub(channel)
    request = pb.PublishRequest(min_log_position=10**12)
    request.events.add().attributes.add(name="ryw", value=1)
    with pytest.raises(grpc.RpcError) as info:
        stub.Publish(request, timeout=0.5)
    assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    channel.close()


def test_a_retried_change_is_applied_once(cluster: Cluster) -> None:
    request = pb.SubscribeRequest(request_id="retry-test-1")
    spec = request.subscriptions.add(subscriber="retry")
    spec.predicates.add(attribute="retry", op=pb.OP_EQ, value=1)
    answers = []
    for address in cluster.addresses:
        with grpc.insecure_channel(address) as channel:
            answers.append(
                pb_grpc.PubSubStub(channel).Subscribe(request, timeout=10))
    assert len({tuple(r.subscription_ids) for r in answers}) == 1
    assert len({r.log_position for r in answers}) == 1
    total = sum(stats(a).cluster.duplicates for a in cluster.addresses)
    assert total >= 2
    with cohort.Client(cluster.target) as c:
        c._note_position(answers[0].log_position)  # pylint: disable=protected-access
        [result] = c.publish({"retry": 1}, return_ids=True)
    # Earlier tests' subscriptions (NOT_EXISTS, NE) may match too, but only
    # with smaller ids: a second application would add a larger one.
    [sid] = answers[0].subscription_ids
    assert [i for i in result.subscription_ids if i >= sid] == [sid]


def collect(listener: Iterable[cohort.Delivery],
            into: "queue.Queue[cohort.Delivery]") -> threading.Thread:
    def read() -> None:
        try:
            for d in listener:
                into.put(d)
        except cohort.CohortError:
            pass
    t = threading.Thread(target=read, daemon=True)
    t.start()
    return t


def wait_for_interest(publisher: cohort.Client, tag: str,
                      received: "queue.Queue[cohort.Delivery]"
                      ) -> cohort.Delivery:
    """Publishes markers until the listener elsewhere gets one (the
    announcement of its interest has reached the publisher's node)."""
    for _ in range(100):
        publisher.publish({tag: -1, "o": -1})
        try:
            d = received.get(timeout=0.1)
        except queue.Empty:
            continue
        while True:  # drain the other markers
            try:
                received.get(timeout=0.3)
            except queue.Empty:
                return d
    raise AssertionError("the listener's interest never reached the node")


def test_deliveries_cross_nodes(cluster: Cluster) -> None:
    a = cluster.addresses
    with cohort.Client(a[0]) as c:
        [sid] = c.subscribe("dl", F("dl").exists())
        position = c.log_position
    clients = [node_client(x, position) for x in a]
    received: "queue.Queue[cohort.Delivery]" = queue.Queue()
    listener = clients[1].listen("dl")
    reader = collect(listener, received)
    for origin in (0, 2):
        wait_for_interest(clients[origin], "dl", received)
    first = listener.last_sequence
    per_origin = 150
    for origin in (0, 1, 2):
        for start in range(0, per_origin, 50):
            clients[origin].publish(
                [{"dl": n, "o": origin} for n in range(start, start + 50)])
    got: List[cohort.Delivery] = []
    while len(got) < 3 * per_origin:
        got.append(received.get(timeout=10))
    assert all(list(d.subscription_ids) == [sid] for d in got)
    assert all(d.gap == 0 for d in got)
    sequences = [d.sequence for d in got]
    assert sequences == list(range(first + 1, first + 1 + len(got)))
    for origin in (0, 1, 2):  # in order per publishing node
        ns = [d.event.attributes[0].value for d in got
              if d.event.attributes[1].value == origin]
        assert ns == list(range(per_origin)), origin
    assert stats(a[0]).cluster.deliveries_sent >= per_origin
    assert stats(a[2]).cluster.deliveries_sent >= per_origin
    assert stats(a[1]).cluster.deliveries_received >= 2 * per_origin
    # The listener moves to another node and keeps receiving.
    listener.cancel()
    reader.join(timeout=10)
    moved: "queue.Queue[cohort.Delivery]" = queue.Queue()
    listener = clients[2].listen("dl")
    reader = collect(listener, moved)
    wait_for_interest(clients[0], "dl", moved)
    clients[0].publish({"dl": 7, "o": 0})
    d = moved.get(timeout=10)
    assert d.event.attributes[0].value == 7
    listener.cancel()
    reader.join(timeout=10)
    for c in clients:
        c.close()


class Load:
    """A thread that subscribes through the cluster client and counts what
    was acknowledged."""

    def __init__(self, target: str, tag: str, publish: bool = False) -> None:
        self.target = target
        self.tag = tag
        self.publish = publish
        self.acked: List[int] = []
        # The largest n whose subscription ("tag = n") was acknowledged: a
        # refused Subscribe still uses up its n, so n may pass len(acked).
        self.last_n = 0
        self.failed = 0
        self.published = 0
        self.publish_failed = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run)
        self.thread.start()

    def _run(self) -> None:
        with cohort.Client(self.target, timeout=20) as c:
            n = 0
            while not self.stop.is_set():
                n += 1
                try:
                    self.acked.extend(
                        c.subscribe(self.tag, f"{self.tag} = {n}"))
                    self.last_n = n
                except cohort.CohortError:
                    self.failed += 1
                    time.sleep(0.05)
                if self.publish:
                    try:
                        c.publish({self.tag: n})
                        self.published += 1
                    except cohort.CohortError:
                        self.publish_failed += 1

    def finish(self) -> None:
        self.stop.set()
        self.thread.join()


def check_all_acked(cluster: Cluster, load: Load) -> None:
    """Every node holds every acknowledged subscription of `load`."""
    with cohort.Client(cluster.target) as c:
        position = max(c.stats().cluster.known_position
                       for _ in range(3))
    for address in cluster.addresses:
        # A node that lost its NATS server catches up after the others; a
        # Publish to it meanwhile is UNAVAILABLE ("catching up"), which is
        # not what this checks.
        wait_until(lambda: caught_up(address, position), 60,
                   f"{address} applies the log up to {position}")
        with node_client(address, position) as c:
            acked = set(load.acked)
            for start in range(0, load.last_n, 500):
                n_values = range(start + 1, start + 501)
                results = c.publish([{load.tag: n} for n in n_values],
                                    return_ids=True)
                for r in results:
                    acked -= set(r.subscription_ids)
            assert not acked, f"{address} lost {len(acked)} acknowledged"


def test_kill_cohortd_nothing_acknowledged_lost(cluster: Cluster) -> None:
    load = Load(cluster.target, "k", publish=True)
    try:
        for cycle in range(KILL_CYCLES):
            time.sleep(0.5)
            node = cycle % 3 + 1
            cluster.kill("cohortd", node)
            before = len(load.acked)
            published = load.published
            time.sleep(0.5)
            # The other nodes carry on.
            wait_until(lambda: len(load.acked) > before + 5, 20,
                       "subscribes go on while a node is down")
            wait_until(lambda: load.published > published + 5, 20,
                       "publishes go on while a node is down")
            cluster.start("cohortd", node)
    finally:
        load.finish()
    assert len(load.acked) > 50
    assert len(set(load.acked)) == len(load.acked)
    check_all_acked(cluster, load)
    print(f"kill -9 x{KILL_CYCLES}: {len(load.acked)} subscriptions "
          f"acknowledged, 0 lost; {load.failed} subscribe calls failed; "
          f"{load.published} publishes answered, {load.publish_failed} "
          f"failed")


def recovered_position(cluster: Cluster, i: int) -> int:
    """The log position node i's --data_dir held when it started."""
    log = (cluster.dir / f"cohortd-{i}.log").read_text()
    found = re.search(r"subscription log applied to position (\d+)", log)
    assert found, log[-2000:]
    return int(found.group(1))


def test_restart_reads_only_the_log_after_its_local_copy(
        cluster: Cluster) -> None:
    """A node restarts from its --data_dir (snapshot and journal tagged with
    the log position) and applies only the records after it: after SIGTERM
    from the clean close's snapshot, after kill -9 from the journal."""
    with cohort.Client(cluster.target) as c:
        for n in range(20):
            c.subscribe("restart", f"r = {n}")
        known = c.stats().cluster.known_position
    for signal in ("TERM", "KILL"):
        wait_until(lambda: stats(cluster.addresses[1]).cluster.applied_position
                   >= known, 20, "node 2 applied the log")
        cluster.kill("cohortd", 2, signal)
        cluster.start("cohortd", 2)
        assert recovered_position(cluster, 2) >= known, signal
        s = stats(cluster.addresses[1])
        # Records applied since the start: only those after the local copy.
        assert s.cluster.applied <= s.cluster.known_position - known, signal
        assert s.subscriptions >= 20
        with cohort.Client(cluster.target) as c:
            c.subscribe("restart", "r = 100")
            known = c.stats().cluster.known_position


def test_a_new_node_joins_from_the_shared_snapshot(cluster: Cluster) -> None:
    """Node 3 loses its disk; meanwhile the others publish snapshots and trim
    the log. It comes back from the shared snapshot plus the log after it,
    and holds every acknowledged subscription."""
    cluster.kill("cohortd", 3)
    shutil.rmtree(cluster.dir / "cohortd-3-data")
    load = Load(",".join(cluster.addresses[:2]), "join")
    try:
        def trimmed() -> bool:
            return any(stats(a).cluster.log_first_position > 1
                       for a in cluster.addresses[:2])
        wait_until(trimmed, 60, "the log trimmed behind a shared snapshot")
    finally:
        load.finish()
    s1 = stats(cluster.addresses[0]).cluster
    assert s1.snapshot_position > 0
    # Concurrent claims of one position are not failures.
    assert s1.snapshot_failures == 0
    cluster.start("cohortd", 3)
    s3 = stats(cluster.addresses[2])
    assert s3.cluster.started_from_position >= s1.snapshot_position > 0
    log = (cluster.dir / "cohortd-3.log").read_text()
    assert "started from the shared snapshot at log position" in log, log
    assert s3.cluster.applied < s3.cluster.known_position
    check_all_acked(cluster, load)


def test_data_dirs_of_the_other_mode_are_refused(cluster: Cluster,
                                                 tmp_path: Path) -> None:
    """A single node's --data_dir is not a copy of the log, and a cluster
    node's copy is not a single node's state: both starts fail, naming the
    directory."""
    single = tmp_path / "single"
    server = Server(f"--data_dir={single}")
    try:
        with cohort.Client(server.target) as c:
            c.subscribe("alone", "a = 1")
    finally:
        server.stop()
    nats = (cluster.dir / "nats_urls").read_text().strip()
    copy = tmp_path / "copy"
    shutil.copytree(cluster.dir / "cohortd-1-data", copy)
    assert (copy / "CLUSTER").read_text() == "stream COHORT_LOG\n"
    other = tmp_path / "other"
    shutil.copytree(copy, other)
    (other / "CLUSTER").write_text("stream ELSEWHERE\n")
    for flags, says in (
        ([f"--data_dir={single}", f"--cluster_nats={nats}"],
         "holds a single-node cohortd's subscriptions"),
        ([f"--data_dir={copy}"],
         "holds a cluster node's copy of the subscription log"),
        ([f"--data_dir={other}", f"--cluster_nats={nats}"],
         "of stream ELSEWHERE, not of stream COHORT_LOG"),
    ):
        done = subprocess.run(
            [str(cohortd_path()), "--listen=127.0.0.1:0", "--pin_cores=false",
             *flags],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            timeout=60, check=False)
        assert done.returncode == 1, (flags, done.stdout[-2000:])
        assert says in done.stdout, done.stdout[-2000:]


def test_kill_one_nats_server_nothing_acknowledged_lost(
        cluster: Cluster) -> None:
    load = Load(cluster.target, "n")
    try:
        time.sleep(0.5)
        cluster.kill("nats", 1)
        before = len(load.acked)
        # A new stream leader within JetStream's election time.
        wait_until(lambda: len(load.acked) > before + 20, 30,
                   "subscribes go on with one NATS server down")
        cluster.start("nats", 1)
        time.sleep(0.5)
    finally:
        load.finish()
    check_all_acked(cluster, load)


def test_auth_ownership_decided_in_log_order(cluster: Cluster,
                                             tmp_path: Path) -> None:
    """With --auth_tokens, an Unsubscribe's ownership check happens when its
    record is applied, so a node that has not applied the Subscribe yet does
    not answer NOT_FOUND. Two nodes of their own log stream."""
    tokens = {"alice": "alice-token", "bob": "bob-token"}
    path = tmp_path / "tokens"
    path.write_text("".join(
        f"subscriber {name} {hashlib.sha256(t.encode()).hexdigest()}\n"
        for name, t in tokens.items()))
    urls = (cluster.dir / "nats_urls").read_text().strip()
    nodes = [
        Server("--partitions=1", f"--auth_tokens={path}",
               f"--cluster_nats={urls}", "--cluster_stream=AUTH_LOG",
               f"--cluster_node=auth-{i}") for i in (1, 2)
    ]
    try:
        for n in nodes:
            wait_until(lambda: stats(n.target).cluster.serving, 30,
                       "the auth node serves")
        a, b = (n.target for n in nodes)
        for round_ in range(20):
            with cohort.Client(a, token=tokens["alice"]) as alice:
                [sid] = alice.subscribe("alice", f"auth = {round_}")
            with cohort.Client(b, token=tokens["bob"]) as bob:
                with pytest.raises(cohort.PermissionDenied):
                    bob.unsubscribe([sid])
            with cohort.Client(b, token=tokens["alice"]) as alice:
                alice.unsubscribe([sid])  # B may not have applied it yet
                with pytest.raises(cohort.NotFound):
                    alice.unsubscribe([sid])
        for n in nodes:
            assert stats(n.target).subscriptions == 0
    finally:
        for n in nodes:
            n.stop()


class BlackHoleProxy:
    """A TCP proxy to one NATS server whose forwarding can be stopped: while
    `blocked`, connections stay open and every byte is held back (as a cut
    network does), and new connections are accepted and starved."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.blocked = threading.Event()
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]
        self.stopped = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stopped:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(
                    ("127.0.0.1", self.upstream_port))
            except OSError:
                client.close()
                continue
            threading.Thread(target=self._pump, args=(client, server),
                             daemon=True).start()

    def _pump(self, a: socket.socket, b: socket.socket) -> None:
        peers = {a: b, b: a}
        try:
            while not self.stopped:
                if self.blocked.is_set():
                    time.sleep(0.05)  # hold everything back
                    continue
                ready, _, _ = select.select([a, b], [], [], 0.05)
                for s in ready:
                    data = s.recv(65536)
                    if not data:
                        return
                    peers[s].sendall(data)
        except OSError:
            pass
        finally:
            a.close()
            b.close()

    def close(self) -> None:
        self.stopped = True
        self.listener.close()


def test_node_cut_off_from_nats(cluster: Cluster) -> None:
    port = int((cluster.dir / "nats-2.client_port").read_text())
    proxy = BlackHoleProxy(port)
    node = Server("--partitions=1",
                  f"--cluster_nats=nats://127.0.0.1:{proxy.port}",
                  "--cluster_node=cut-off",
                  f"--cluster_lost_timeout_ms={LOST_TIMEOUT_MS}")
    try:
        wait_until(lambda: stats(node.target).cluster.serving, 30,
                   "the proxied node serves")
        proxy.blocked.set()
        cut_at = time.monotonic()
        wait_until(lambda: not stats(node.target).cluster.serving,
                   LOST_TIMEOUT_MS / 1000 + 5, "NOT_SERVING once cut off")
        went = time.monotonic() - cut_at
        assert went < LOST_TIMEOUT_MS / 1000 + 3, went
        # The rest of the cluster carries on ...
        with cohort.Client(cluster.target) as c:
            [sid] = c.subscribe("cut", "cut = 1")
            position = c.log_position
        # ... and the cut-off node never answers from its stale view.
        with cohort.Client(node.target) as c:
            for _ in range(5):
                with pytest.raises(cohort.Unavailable) as info:
                    c.publish({"cut": 1}, return_ids=True)
                assert "not serving" in str(info.value)
                with pytest.raises(cohort.Unavailable):
                    c.subscribe("cut", "cut = 2")
                time.sleep(0.2)
        proxy.blocked.clear()
        wait_until(lambda: stats(node.target).cluster.serving, 60,
                   "serves again once reconnected")
        with node_client(node.target, position) as c:
            [result] = c.publish({"cut": 1}, return_ids=True)
            assert sid in result.subscription_ids
        with cohort.Client(cluster.target) as c:
            known = c.stats().cluster.known_position
        for address in (node.target, cluster.addresses[0]):
            wait_until(lambda: caught_up(address, known), 60,
                       f"{address} applies the log up to {known}")
        assert stats(node.target).subscriptions == stats(
            cluster.addresses[0]).subscriptions
    finally:
        node.stop()
        proxy.close()


def test_all_nats_stopped_then_restarted(cluster: Cluster) -> None:
    load = Load(cluster.target, "a")
    try:
        time.sleep(0.5)
        for i in (1, 2, 3):
            cluster.kill("nats", i, "TERM")
        # Every node stops serving within the lost timeout (and a margin).
        for address in cluster.addresses:
            wait_until(lambda: not stats(address).cluster.serving,
                       LOST_TIMEOUT_MS / 1000 + 5,
                       f"{address} goes NOT_SERVING")
        with cohort.Client(cluster.addresses[0]) as c:
            with pytest.raises(cohort.Unavailable) as info:
                c.publish({"a": 1})
            assert "not serving" in str(info.value)
        for i in (1, 2, 3):
            cluster.start("nats", i)
        for address in cluster.addresses:
            wait_until(lambda: stats(address).cluster.serving, 60,
                       f"{address} serves again")
        before = len(load.acked)
        wait_until(lambda: len(load.acked) > before + 5, 30,
                   "subscribes go on after the restart")
    finally:
        load.finish()
    check_all_acked(cluster, load)
