"""Retries and deadlines, against a Python server that fails on purpose.

Property: UNAVAILABLE is retried, with backoff and within the deadline, by
the idempotent calls only (stats, parse_filter, the connect of listen);
subscribe, unsubscribe and publish are attempted once.
"""

from __future__ import annotations

import socket
import time
from typing import Iterator

import grpc
import pytest

import cohort
from cohort import F
from helpers import FakeServer

FAST = cohort.Retry(max_attempts=4, initial_backoff=0.01, max_backoff=0.05)


@pytest.fixture()
def flaky() -> Iterator[FakeServer]:
    """Every method fails twice with UNAVAILABLE, then answers."""
    fake = FakeServer(fail=2)
    yield fake
    fake.stop()


def test_idempotent_calls_retry_unavailable(flaky: FakeServer) -> None:
    with cohort.Client(flaky.target, retry=FAST) as c:
        assert c.stats().mode == "fake"
        assert len(c.parse_filter("x = 1")) == 1
        deliveries = list(c.listen("s"))
    assert flaky.calls["GetStats"] == 3
    assert flaky.calls["ParseFilter"] == 3
    assert flaky.calls["Listen"] == 3
    assert [(d.sequence, d.gap) for d in deliveries] == [(1, 0), (2, 0), (5, 2),
                                                         (6, 0)]


def test_changing_calls_are_not_retried(flaky: FakeServer) -> None:
    with cohort.Client(flaky.target, retry=FAST) as c:
        with pytest.raises(cohort.Unavailable) as e:
            c.publish({"x": 1})
        assert e.value.code == grpc.StatusCode.UNAVAILABLE
        assert e.value.details == "fake: Publish attempt 1 fails"
        with pytest.raises(cohort.Unavailable):
            c.subscribe("s", F("x") == 1)
        with pytest.raises(cohort.Unavailable):
            c.unsubscribe([1])
        with pytest.raises(cohort.Unavailable):
            list(c.publish_stream([{"x": 1}]))
    assert flaky.calls == {
        "Publish": 1,
        "Subscribe": 1,
        "Unsubscribe": 1,
        "PublishStream": 1
    }


def test_attempts_are_bounded() -> None:
    fake = FakeServer(fail=100)
    try:
        with cohort.Client(fake.target, retry=FAST) as c:
            with pytest.raises(cohort.Unavailable, match="attempt 4 fails"):
                c.stats()
            with pytest.raises(cohort.Unavailable):
                next(c.listen("s"))
        with cohort.Client(fake.target,
                           retry=cohort.Retry(max_attempts=1)) as c:
            with pytest.raises(cohort.Unavailable):
                c.parse_filter("x = 1")
        assert fake.calls == {"GetStats": 4, "Listen": 4, "ParseFilter": 1}
    finally:
        fake.stop()


def test_other_codes_are_not_retried() -> None:
    fake = FakeServer(fail=1, code=grpc.StatusCode.RESOURCE_EXHAUSTED)
    try:
        with cohort.Client(fake.target, retry=FAST) as c:
            with pytest.raises(cohort.ResourceExhausted):
                c.stats()
        assert fake.calls["GetStats"] == 1
    finally:
        fake.stop()


def test_the_deadline_bounds_all_attempts() -> None:
    fake = FakeServer(fail=1000)
    slow_retry = cohort.Retry(max_attempts=1000,
                              initial_backoff=0.05,
                              max_backoff=0.1)
    try:
        with cohort.Client(fake.target, retry=slow_retry, timeout=0.5) as c:
            started = time.monotonic()
            with pytest.raises(cohort.Unavailable):
                c.stats()
            elapsed = time.monotonic() - started
        assert elapsed < 1.0
        assert 3 <= fake.calls["GetStats"] < 20
    finally:
        fake.stop()


# Retries with a short pause, each of which fits in a 0.3 s deadline.
SHORT_PAUSES = cohort.Retry(max_attempts=10, initial_backoff=0.05,
                            max_backoff=0.05)


@pytest.fixture()
def overrunning(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeServer]:
    """A server that always fails, and every pause of the client (it pauses
    with time.sleep) 0.4 s longer than asked, as on a loaded machine."""
    real_sleep = time.sleep
    monkeypatch.setattr(time, "sleep",
                        lambda seconds: real_sleep(seconds + 0.4))
    fake = FakeServer(fail=1000)
    yield fake
    fake.stop()


def test_a_pause_that_overruns_the_deadline_raises_the_last_error(
        overrunning: FakeServer) -> None:
    """A retry pause fits in the deadline when it starts, but the sleep
    ends past it: the call raises the attempt's UNAVAILABLE, not a
    DeadlineExceeded for an attempt never made."""
    with cohort.Client(overrunning.target, retry=SHORT_PAUSES,
                       timeout=0.3) as c:
        with pytest.raises(cohort.Unavailable):
            c.stats()
    assert overrunning.calls["GetStats"] == 1


def test_a_reconnect_pause_that_overruns_the_deadline_raises_the_error(
        overrunning: FakeServer) -> None:
    """As above, for the connect of listen: its retry ends with the
    connect's UNAVAILABLE."""
    with cohort.Client(overrunning.target, retry=SHORT_PAUSES) as c:
        with pytest.raises(cohort.Unavailable):
            list(c.listen("s", timeout=0.3))
    assert overrunning.calls["Listen"] == 1


def test_backoff_grows_and_is_capped() -> None:
    r = cohort.Retry(initial_backoff=0.1,
                     max_backoff=0.3,
                     multiplier=2,
                     jitter=0)
    assert [r.backoff(n) for n in (1, 2, 3, 4)] == [0.1, 0.2, 0.3, 0.3]
    jittered = cohort.Retry(initial_backoff=1, jitter=0.5)
    assert all(0.5 <= jittered.backoff(1) <= 1 for _ in range(100))
    with pytest.raises(ValueError):
        cohort.Retry(max_attempts=0)


def test_unreachable_server_retries_idempotent_calls_only() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    retry = cohort.Retry(max_attempts=4,
                         initial_backoff=0.1,
                         max_backoff=1,
                         jitter=0)
    with cohort.Client(f"127.0.0.1:{port}", retry=retry) as c:
        started = time.monotonic()
        with pytest.raises(cohort.Unavailable):
            c.stats()
        # Three backoffs: 0.1 + 0.2 + 0.4 s.
        assert time.monotonic() - started >= 0.7
        started = time.monotonic()
        with pytest.raises(cohort.Unavailable):
            c.publish({"x": 1})
        assert time.monotonic() - started < 0.5


def test_default_and_per_call_deadlines() -> None:
    fake = FakeServer(delay=0.3)
    try:
        with cohort.Client(fake.target, timeout=0.1) as c:
            with pytest.raises(cohort.DeadlineExceeded) as e:
                c.stats()
            assert e.value.code == grpc.StatusCode.DEADLINE_EXCEEDED
            assert c.stats(timeout=5).mode == "fake"  # the call's own wins
            with pytest.raises(cohort.DeadlineExceeded):
                c.publish({"x": 1})
        with cohort.Client(fake.target, timeout=None) as c:
            assert c.stats().mode == "fake"
            with pytest.raises(cohort.DeadlineExceeded):
                c.stats(timeout=0.05)
    finally:
        fake.stop()
