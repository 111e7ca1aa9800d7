"""Test helpers: real cohortd servers on free ports.

The cohortd binary is $COHORTD, or the Bazel opt build in the repository
that holds this file (.bazel/out/k8-opt/bin/service/cohortd). Each server
starts with --listen=127.0.0.1:0 and is ready once it prints "cohortd:
serving on port N" (service/cohortd_main.cc); it is stopped with SIGTERM.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import threading
import time
from concurrent import futures
from pathlib import Path
from typing import Counter, Iterator, List, Optional

import grpc
import pytest

import cohort
from cohort.v1 import pubsub_pb2 as pb
from cohort.v1 import pubsub_pb2_grpc as pb_grpc

REPO_ROOT = Path(__file__).resolve().parents[3]
TLS_DIR = REPO_ROOT / "service" / "api" / "testdata" / "tls"


def cohortd_path() -> Path:
    path = Path(
        os.environ.get(
            "COHORTD", REPO_ROOT / ".bazel" / "out" / "k8-opt" / "bin" /
            "service" / "cohortd"))
    if not path.is_absolute():
        path = REPO_ROOT / path
    return path


class Server:
    """A cohortd process. `target` is "127.0.0.1:PORT"."""

    def __init__(self, *flags: str) -> None:
        binary = cohortd_path()
        if not os.access(binary, os.X_OK):
            pytest.fail(f"no cohortd at {binary}: build it (bazel build -c opt "
                        "//service:cohortd) or set COHORTD")
        self._log = tempfile.NamedTemporaryFile(prefix="cohortd-",
                                                suffix=".log",
                                                delete=False)
        self.log_path = Path(self._log.name)
        # Unpinned: tests run beside builds and other servers.
        args = [
            str(binary), "--listen=127.0.0.1:0", "--pin_cores=false", *flags
        ]
        self.process = subprocess.Popen(args,
                                        stdout=self._log,
                                        stderr=subprocess.STDOUT)
        self.port = self._wait_for_port(args)
        self.target = f"127.0.0.1:{self.port}"

    def _wait_for_port(self, args: List[str]) -> int:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            for line in self.log().splitlines():
                if line.startswith("cohortd: serving on port "):
                    return int(line.split()[4])
            if self.process.poll() is not None:
                break
            time.sleep(0.02)
        self.stop()
        pytest.fail(f"cohortd did not start ({' '.join(args)}):\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> Optional[int]:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()
        self.log_path.unlink(missing_ok=True)
        return self.process.returncode


def wait_for_listeners(client: cohort.Client,
                       count: int,
                       timeout: float = 10.0) -> None:
    """Waits until the server has `count` open Listen streams."""
    deadline = time.monotonic() + timeout
    while client.stats().listeners != count:
        if time.monotonic() > deadline:
            raise AssertionError(f"server never had {count} listeners "
                                 f"(has {client.stats().listeners})")
        time.sleep(0.01)


class FakeServer:
    """A PubSub server in Python that fails on purpose, for retry tests.

    Each method's first `fail` calls end with `code` (UNAVAILABLE by
    default); later ones answer (after `delay` seconds). `calls` counts the
    calls per method name, failed ones included. ParseFilter answers
    `parsed` (default: the predicate x = 1); `subscribed` keeps the
    SubscribeRequests answered.
    """

    def __init__(self,
                 fail: int = 0,
                 delay: float = 0.0,
                 code: grpc.StatusCode = grpc.StatusCode.UNAVAILABLE,
                 parsed: Optional[pb.ParseFilterResponse] = None) -> None:
        self.fail = fail
        self.delay = delay
        self.code = code
        self.parsed = parsed or pb.ParseFilterResponse(
            predicates=[pb.Predicate(attribute="x", op=pb.OP_EQ, value=1)])
        self.subscribed: List[pb.SubscribeRequest] = []
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        pb_grpc.add_PubSubServicer_to_server(_FakeServicer(self), self._server)
        self.port = self._server.add_insecure_port("127.0.0.1:0")
        self.target = f"127.0.0.1:{self.port}"
        self._server.start()

    def enter(self, method: str, context: grpc.ServicerContext) -> None:
        with self._lock:
            self.calls[method] += 1
            failing = self.calls[method] <= self.fail
        if failing:
            context.abort(self.code,
                          f"fake: {method} attempt {self.calls[method]} fails")
        if self.delay:
            time.sleep(self.delay)

    def stop(self) -> None:
        self._server.stop(grace=None)


class _FakeServicer(pb_grpc.PubSubServicer):

    def __init__(self, fake: FakeServer) -> None:
        self._fake = fake

    def GetStats(self, request: pb.GetStatsRequest,
                 context: grpc.ServicerContext) -> pb.Stats:
        self._fake.enter("GetStats", context)
        return pb.Stats(mode="fake")

    def ParseFilter(self, request: pb.ParseFilterRequest,
                    context: grpc.ServicerContext) -> pb.ParseFilterResponse:
        self._fake.enter("ParseFilter", context)
        return self._fake.parsed

    def Subscribe(self, request: pb.SubscribeRequest,
                  context: grpc.ServicerContext) -> pb.SubscribeResponse:
        self._fake.enter("Subscribe", context)
        self._fake.subscribed.append(request)
        return pb.SubscribeResponse(
            subscription_ids=range(1,
                                   len(request.subscriptions) + 1))

    def Unsubscribe(self, request: pb.UnsubscribeRequest,
                    context: grpc.ServicerContext) -> pb.UnsubscribeResponse:
        self._fake.enter("Unsubscribe", context)
        return pb.UnsubscribeResponse()

    def Publish(self, request: pb.PublishRequest,
                context: grpc.ServicerContext) -> pb.PublishResponse:
        self._fake.enter("Publish", context)
        return pb.PublishResponse(
            results=[pb.EventResult() for _ in request.events])

    def PublishStream(
            self, request_iterator: Iterator[pb.PublishRequest],
            context: grpc.ServicerContext) -> Iterator[pb.PublishResponse]:
        self._fake.enter("PublishStream", context)
        for request in request_iterator:
            yield pb.PublishResponse(
                results=[pb.EventResult() for _ in request.events])

    def Listen(self, request: pb.ListenRequest,
               context: grpc.ServicerContext) -> Iterator[pb.Delivery]:
        self._fake.enter("Listen", context)
        # Sequences 1, 2, 5, 6: two deliveries lost before the third.
        for sequence in (1, 2, 5, 6):
            yield pb.Delivery(
                subscription_ids=[7],
                sequence=sequence,
                event=pb.Event(
                    attributes=[pb.Attribute(name="n", value=sequence)]))
