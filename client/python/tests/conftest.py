"""Fixtures: a shared cohortd (helpers.Server), clients, subscriber names."""

from __future__ import annotations

from typing import Iterator

import pytest

import cohort
from helpers import Server


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    """A plain cohortd shared by tests that tolerate others' subscriptions."""
    s = Server("--partitions=2")
    yield s
    s.stop()


@pytest.fixture()
def client(server: Server) -> Iterator[cohort.Client]:
    with cohort.Client(server.target) as c:
        yield c


@pytest.fixture(scope="module")
def own() -> Iterator[Server]:
    """A cohortd of the test module's own (one per module that asks):
    match counts see only that module's subscriptions."""
    s = Server("--partitions=2")
    yield s
    s.stop()


@pytest.fixture()
def oc(own: Server) -> Iterator[cohort.Client]:
    """A client of the module's own cohortd."""
    with cohort.Client(own.target) as c:
        yield c


_subscriber_counter = [0]


@pytest.fixture()
def subscriber(request: pytest.FixtureRequest) -> str:
    """A subscriber name no other test uses."""
    _subscriber_counter[0] += 1
    return f"{request.node.name[:40]}-{_subscriber_counter[0]}".replace(
        "[", "_").replace("]", "_")
