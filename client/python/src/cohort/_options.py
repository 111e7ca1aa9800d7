"""Connection options shared by cohort.Client and cohort.aio.Client.

TLS says how to reach a TLS cohortd (--tls_cert/--tls_key, and
--tls_client_ca for mutual TLS); Retry is the backoff for UNAVAILABLE on
idempotent calls.
"""

from __future__ import annotations

import dataclasses
import os
import random
from typing import List, Optional, Sequence, Tuple, Union

import grpc

# A PEM source: a path (str or os.PathLike) to a PEM file, or the PEM bytes.
PemSource = Union[str, "os.PathLike[str]", bytes]

# The server's --max_message_bytes default: Publish answers with ids, Stats
# and large batches may exceed gRPC's 4 MiB default.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024


def _read_pem(source: Optional[PemSource], what: str) -> Optional[bytes]:
    if source is None:
        return None
    if isinstance(source, bytes):
        return source
    if isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as f:
            return f.read()
    raise TypeError(f"TLS {what}: expected a path or PEM bytes, got "
                    f"{type(source).__name__}")


@dataclasses.dataclass(frozen=True)
class TLS:
    """TLS settings: the roots to verify the server with, and an optional
    client certificate for mutual TLS.

    Each of ca, cert and key is a path (str or os.PathLike) to a PEM file
    or the PEM contents as bytes. Files are read when the client connects.

    Attributes:
      ca: CA certificates that sign the server's certificate (cohortd
        --tls_cert). None: the system's roots (as gRPC finds them).
      cert: this client's certificate chain, for a server with
        --tls_client_ca. Needs key.
      key: the unencrypted private key of cert.
      server_name: the name to expect in the server's certificate, when it
        differs from the host in the target (e.g. connecting by IP to a
        certificate for "localhost").
    """

    ca: Optional[PemSource] = None
    cert: Optional[PemSource] = None
    key: Optional[PemSource] = None
    server_name: Optional[str] = None

    def __post_init__(self) -> None:
        if (self.cert is None) != (self.key is None):
            raise ValueError(
                "TLS: cert and key go together (mutual TLS needs both)")

    def credentials(self) -> grpc.ChannelCredentials:
        """gRPC channel credentials for these settings (reads the files)."""
        return grpc.ssl_channel_credentials(
            root_certificates=_read_pem(self.ca, "ca"),
            private_key=_read_pem(self.key, "key"),
            certificate_chain=_read_pem(self.cert, "cert"))

    def channel_options(self) -> List[Tuple[str, str]]:
        if self.server_name is None:
            return []
        return [("grpc.ssl_target_name_override", self.server_name)]


@dataclasses.dataclass(frozen=True)
class Retry:
    """Bounded exponential backoff for UNAVAILABLE on idempotent calls.

    Only stats(), parse_filter() and the connect of listen() are retried
    (they change nothing on the server); subscribe, unsubscribe and publish
    never are, since a lost answer does not tell whether they were applied.
    Attempt n+1 starts after min(max_backoff, initial_backoff *
    multiplier**(n-1)) seconds, less up to `jitter` of it at random. The
    call's deadline bounds all attempts together: no attempt starts once
    the backoff would pass it.

    Attributes:
      max_attempts: attempts in all, the first included (1: no retry).
      initial_backoff: seconds before the second attempt.
      max_backoff: the most seconds between two attempts.
      multiplier: growth of the backoff per attempt.
      jitter: fraction (0 to 1) of each backoff taken off at random, so
        that many clients do not retry in step.
    """

    max_attempts: int = 4
    initial_backoff: float = 0.05
    max_backoff: float = 1.0
    multiplier: float = 2.0
    jitter: float = 0.2

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("Retry.max_attempts must be at least 1")
        if self.initial_backoff < 0 or self.max_backoff < 0:
            raise ValueError("Retry backoffs must not be negative")
        if self.multiplier < 1:
            raise ValueError("Retry.multiplier must be at least 1")
        if not 0 <= self.jitter <= 1:
            raise ValueError("Retry.jitter must be between 0 and 1")

    def backoff(self, failed_attempts: int) -> float:
        """Seconds to wait after `failed_attempts` attempts failed (>= 1)."""
        base = min(
            self.max_backoff,
            self.initial_backoff * self.multiplier**(failed_attempts - 1))
        return base * (1.0 - self.jitter * random.random())


def channel_options(
    tls: Optional[TLS], extra: Sequence[Tuple[str, Union[str, int]]]
) -> List[Tuple[str, Union[str, int]]]:
    options: List[Tuple[str, Union[str, int]]] = [
        ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
        ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ]
    if tls is not None:
        options += tls.channel_options()
    options += list(extra)
    return options


def resolve_tls(tls: Union[TLS, bool, None]) -> Optional[TLS]:
    """tls=True means TLS with the system's roots; False/None plaintext."""
    if tls is True:
        return TLS()
    if tls is False or tls is None:
        return None
    if isinstance(tls, TLS):
        return tls
    raise TypeError(
        f"tls: expected cohort.TLS, bool or None, got {type(tls).__name__}")


def auth_metadata(token: Optional[str]) -> Tuple[Tuple[str, str], ...]:
    """The metadata every call carries: "authorization: Bearer <token>"."""
    if token is None:
        return ()
    if not isinstance(token, str) or not token or any(
            c in token for c in "\r\n"):
        raise ValueError("token: a non-empty string without line breaks")
    return (("authorization", f"Bearer {token}"),)
