"""TLS, mutual TLS and bearer tokens against cohortd.

Uses the test-only certificates in service/api/testdata/tls (server.pem:
CN localhost, SAN 127.0.0.1; client.pem signed by ca.pem; other_ca.pem and
other_client.pem trusted by nobody).
"""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path
from typing import Iterator

import grpc
import pytest

import cohort
from cohort import F
from helpers import TLS_DIR, Server, wait_for_listeners

CA = TLS_DIR / "ca.pem"
SERVER_FLAGS = (f"--tls_cert={TLS_DIR / 'server.pem'}",
                f"--tls_key={TLS_DIR / 'server.key'}")


@pytest.fixture(scope="module")
def tls_server() -> Iterator[Server]:
    s = Server(*SERVER_FLAGS, "--partitions=1")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def mtls_server() -> Iterator[Server]:
    s = Server(*SERVER_FLAGS, f"--tls_client_ca={CA}", "--partitions=1")
    yield s
    s.stop()


def test_tls_with_ca_path_or_bytes(tls_server: Server) -> None:
    for ca in (CA, str(CA), CA.read_bytes()):
        with cohort.Client(tls_server.target, tls=cohort.TLS(ca=ca)) as c:
            assert c.stats().mode == "staged"


def test_tls_server_name_override(tls_server: Server) -> None:
    good = cohort.TLS(ca=CA, server_name="localhost")
    with cohort.Client(tls_server.target, tls=good) as c:
        assert c.stats().mode == "staged"
    bad = cohort.TLS(ca=CA, server_name="not-the-server.example")
    with cohort.Client(tls_server.target,
                       tls=bad,
                       retry=cohort.Retry(max_attempts=1)) as c:
        with pytest.raises(cohort.Unavailable):
            c.stats()


def test_tls_refuses_plaintext_and_other_ca(tls_server: Server) -> None:
    once = cohort.Retry(max_attempts=1)
    with cohort.Client(tls_server.target, retry=once) as plain:
        with pytest.raises(cohort.Unavailable):
            plain.stats()
    with cohort.Client(tls_server.target,
                       retry=once,
                       tls=cohort.TLS(ca=TLS_DIR / "other_ca.pem")) as other:
        with pytest.raises(cohort.Unavailable):
            other.stats()


def test_mutual_tls_needs_a_client_certificate_from_its_ca(
        mtls_server: Server) -> None:
    once = cohort.Retry(max_attempts=1)
    with cohort.Client(mtls_server.target,
                       tls=cohort.TLS(ca=CA,
                                      cert=TLS_DIR / "client.pem",
                                      key=(TLS_DIR /
                                           "client.key").read_bytes())) as c:
        [sid] = c.subscribe("mtls", F("x") == 1)
        assert sid in c.publish({"x": 1}, return_ids=True)[0].subscription_ids
    with cohort.Client(mtls_server.target, tls=cohort.TLS(ca=CA),
                       retry=once) as no_cert:
        with pytest.raises(cohort.Unavailable):
            no_cert.stats()
    with cohort.Client(mtls_server.target,
                       retry=once,
                       tls=cohort.TLS(ca=CA,
                                      cert=TLS_DIR / "other_client.pem",
                                      key=TLS_DIR / "other_client.key")) as c:
        with pytest.raises(cohort.Unavailable):
            c.stats()


def test_tls_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="cert and key"):
        cohort.TLS(ca=CA, cert=TLS_DIR / "client.pem")
    with pytest.raises(FileNotFoundError):
        cohort.Client("127.0.0.1:1", tls=cohort.TLS(ca="/nonexistent/ca.pem"))
    with pytest.raises(ValueError, match="token"):
        cohort.Client("127.0.0.1:1", token="two\nlines")


# Tokens (--auth_tokens): alice and bob are subscribers, feed a publisher.

TOKENS = {
    "alice": "alice-token-1",
    "bob": "bob-token-2",
    "feed": "feed-token-3"
}


@pytest.fixture(scope="module")
def auth_server() -> Iterator[Server]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "tokens"
        lines = ["# test tokens"]
        for name, token in TOKENS.items():
            kind = "publisher" if name == "feed" else "subscriber"
            lines.append(
                f"{kind} {name} {hashlib.sha256(token.encode()).hexdigest()}")
        path.write_text("\n".join(lines) + "\n")
        s = Server(f"--auth_tokens={path}", "--partitions=1")
        yield s
        s.stop()


def client_as(server: Server, name: str) -> cohort.Client:
    return cohort.Client(server.target, token=TOKENS[name])


def test_token_acts_as_its_subscriber(auth_server: Server) -> None:
    with client_as(auth_server,
                   "alice") as alice, client_as(auth_server, "feed") as feed:
        [sid] = alice.subscribe("alice", F("auth") == 1)
        with alice.listen("alice") as deliveries:
            wait_for_listeners(feed, 1)
            [result] = feed.publish({"auth": 1}, return_ids=True)
            assert list(result.subscription_ids) == [sid]
            d = next(deliveries)
            assert (d.subscription_ids, d.sequence) == ([sid], 1)
        alice.unsubscribe([sid])


def test_missing_or_unknown_token_is_unauthenticated(
        auth_server: Server) -> None:
    with cohort.Client(auth_server.target) as anonymous:
        with pytest.raises(cohort.Unauthenticated) as e:
            anonymous.subscribe("alice", F("auth") == 1)
        assert e.value.code == grpc.StatusCode.UNAUTHENTICATED
        with pytest.raises(cohort.Unauthenticated):
            anonymous.publish({"auth": 1})
        assert anonymous.stats().mode == "staged"  # GetStats is open
        assert len(anonymous.parse_filter("auth = 1")) == 1  # so is ParseFilter
    with cohort.Client(auth_server.target,
                       token="not-a-known-token") as stranger:
        with pytest.raises(cohort.Unauthenticated):
            stranger.subscribe("alice", F("auth") == 1)
        with pytest.raises(cohort.Unauthenticated):
            stranger.stats()  # a token that is sent must be known


def test_permission_denied_names_the_field(auth_server: Server) -> None:
    with client_as(auth_server,
                   "alice") as alice, client_as(auth_server, "bob") as bob:
        [sid] = alice.subscribe("alice", F("auth") == 2)
        with pytest.raises(cohort.PermissionDenied) as e:
            bob.subscribe("alice", F("auth") == 2)
        assert e.value.code == grpc.StatusCode.PERMISSION_DENIED
        assert "subscriptions[0].subscriber" in e.value.details
        with pytest.raises(cohort.PermissionDenied) as e:
            bob.unsubscribe([sid])
        assert "subscription_ids[0]" in e.value.details
        with pytest.raises(cohort.PermissionDenied) as e:
            next(bob.listen("alice"))
        assert "subscriber" in e.value.details
        with pytest.raises(cohort.PermissionDenied):
            alice.publish({"auth": 2
                          })  # publisher lines exist: a subscriber may not
        alice.unsubscribe([sid])  # still there: bob removed nothing
        [own] = bob.subscribe("bob", F("auth") == 2)  # as himself he may
        bob.unsubscribe([own])
