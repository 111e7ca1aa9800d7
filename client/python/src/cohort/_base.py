"""What cohort.Client and cohort.aio.Client share: settings, deadlines,
and the decision whether a failed call is retried."""

from __future__ import annotations

import ipaddress
import json
import threading
import time
import uuid
from typing import Any, Callable, Optional, Sequence, Tuple, Union

import grpc

from cohort._convert import SequenceTracker
from cohort._errors import DeadlineExceeded, from_rpc_error, status_code
from cohort._options import (TLS, Retry, auth_metadata, channel_options,
                             resolve_tls)

# The client's default deadline for unary calls, in seconds: generous for a
# Subscribe of 10,000 specs on a journaled server, short enough that a hung
# call surfaces.
DEFAULT_TIMEOUT = 10.0
# PublishRequests of one publish_stream in flight by default: the server's
# own --stream_window default, so the client keeps it busy without queuing.
DEFAULT_WINDOW = 16
# Events per PublishRequest of publish_stream by default: the partitioned
# layout's largest cohort, so one request can fill one.
DEFAULT_BATCH = 64

ChannelOptions = Sequence[Tuple[str, Union[str, int]]]


class Deadline:
    """An absolute deadline on time.monotonic(); None: no deadline."""

    __slots__ = ("at",)

    def __init__(self, timeout: Optional[float]) -> None:
        self.at = None if timeout is None else time.monotonic() + timeout

    def remaining(self) -> Optional[float]:
        """Seconds left; raises DeadlineExceeded if none are."""
        if self.at is None:
            return None
        left = self.at - time.monotonic()
        if left <= 0:
            raise DeadlineExceeded(grpc.StatusCode.DEADLINE_EXCEEDED,
                                   "deadline passed before the call was made")
        return left

    def allows_sleep(self, seconds: float) -> bool:
        return self.at is None or time.monotonic() + seconds < self.at


def retryable(error: grpc.RpcError) -> bool:
    """Whether a failure may be retried by an idempotent call."""
    return status_code(error) == grpc.StatusCode.UNAVAILABLE


def refused_before_matching(error: grpc.RpcError) -> bool:
    """Whether a cluster node refused a Publish before matching anything
    (UNAVAILABLE "not serving"): only then may it go to another node."""
    details = error.details() if hasattr(error, "details") else ""
    return retryable(error) and (details or "").startswith("not serving")


def is_cluster_target(target: str) -> bool:
    """Several addresses, or a DNS name to resolve: a cluster."""
    return "," in target or target.startswith("dns:")


def channel_target(target: str) -> str:
    """The gRPC target for `target`: a comma list of IP host:port becomes
    gRPC's ipv4: (or ipv6:) form; anything else is unchanged."""
    if "," not in target:
        return target
    parts = target.split(",")
    families = set()
    for part in parts:
        host, _, port = part.rpartition(":")
        try:
            families.add(
                ipaddress.ip_address(host.strip("[]")).version)
        except ValueError:
            raise ValueError(
                f"target: {part!r} in a list of several targets must be an "
                "IP address and port; for host names use "
                "dns:///NAME:PORT") from None
        if not port.isdigit():
            raise ValueError(f"target: {part!r} has no port")
    if len(families) != 1:
        raise ValueError(f"target: {target!r} mixes IPv4 and IPv6")
    return ("ipv4:" if families == {4} else "ipv6:") + ",".join(parts)


# A cluster target: every node, round robin, skipping those whose health
# is NOT_SERVING (docs/DESIGN.md section 11).
CLUSTER_SERVICE_CONFIG = json.dumps({
    "loadBalancingConfig": [{"round_robin": {}}],
    "healthCheckConfig": {"serviceName": "cohort.v1.PubSub"},
})


class ClientBase:
    """The settings of a client; its channel is made by the subclass.

    Attributes:
      target, timeout, retry: as given (retry defaulted).
    """

    def __init__(self, target: str, token: Optional[str],
                 tls: Union[TLS, bool, None], timeout: Optional[float],
                 retry: Optional[Retry], options: ChannelOptions) -> None:
        self.target = target
        self.timeout = timeout
        self.retry = retry if retry is not None else Retry()
        self._metadata = auth_metadata(token)
        self._tls: Optional[TLS] = resolve_tls(tls)
        self.cluster = is_cluster_target(target)
        self._grpc_target = channel_target(target)
        extra = list(options)
        if self.cluster:
            extra.append(("grpc.service_config", CLUSTER_SERVICE_CONFIG))
        self._channel_options = channel_options(self._tls, extra)
        self._position_lock = threading.Lock()
        self._log_position = 0

    @property
    def log_position(self) -> int:
        """The highest subscription log position this client's changes were
        answered with (0 from a single node); publishes wait for it."""
        return self._log_position

    def _note_position(self, position: int) -> None:
        with self._position_lock:
            if position > self._log_position:
                self._log_position = position

    def _change_request_id(self) -> str:
        """A request_id for a change: retried changes apply once."""
        return uuid.uuid4().hex if self.cluster else ""

    def _timeout(self,
                 timeout: Optional[float],
                 default: bool = True) -> Optional[float]:
        """A call's timeout: its own, else (if `default`) the client's."""
        if timeout is not None:
            if timeout <= 0:
                raise ValueError(
                    "timeout: seconds, above 0 (None: no deadline)")
            return timeout
        return self.timeout if default else None

    @staticmethod
    def _attempt_timeout(deadline: Deadline,
                         last_error: Optional[grpc.RpcError]) -> Optional[float]:
        """The timeout of the next attempt of a call: what is left of its
        deadline. If none is left after a failed attempt (a retry pause
        can end a little past the deadline it fitted in), raises that
        attempt's CohortError rather than DeadlineExceeded."""
        try:
            return deadline.remaining()
        except DeadlineExceeded:
            if last_error is None:
                raise
            raise from_rpc_error(last_error) from None

    def _retry_pause(
            self,
            error: grpc.RpcError,
            attempts: int,
            deadline: Deadline,
            idempotent: bool,
            retry_if: Callable[[grpc.RpcError], bool] = retryable) -> float:
        """The pause before retrying a call that failed with `error` after
        `attempts` attempts; raises the error's CohortError if it is not
        retried (not idempotent, not `retry_if` (UNAVAILABLE), attempts or
        deadline used up)."""
        if not (idempotent and retry_if(error) and
                attempts < self.retry.max_attempts):
            raise from_rpc_error(error) from None
        pause = self.retry.backoff(attempts)
        if not deadline.allows_sleep(pause):
            raise from_rpc_error(error) from None
        return pause


class ListenerBase:
    """What both clients' Listeners share: the stream's sequence accounting
    and the retry of its connect.

    Attributes:
      received: deliveries received so far.
      missed: deliveries lost so far (the sum of the gaps).
      last_sequence: the highest Delivery.sequence seen.
    """

    def __init__(self, start: Callable[[], Any], retry: Retry,
                 deadline: Deadline) -> None:
        self._start = start
        self._retry = retry
        self._deadline = deadline
        self._tracker = SequenceTracker()
        self._attempts = 1
        self._cancelled = False
        self._call = start()

    @property
    def received(self) -> int:
        return self._tracker.received

    @property
    def missed(self) -> int:
        return self._tracker.missed

    @property
    def last_sequence(self) -> int:
        return self._tracker.last_sequence

    def _restart(self) -> bool:
        """Starts the stream again after a reconnect pause; False if the
        pause ended past the deadline (it fitted when it began): the
        failure that caused it then stands, not a DeadlineExceeded."""
        try:
            call = self._start()
        except DeadlineExceeded:
            return False
        self._attempts += 1
        self._call = call
        return True

    def _reconnect_pause(self, error: grpc.RpcError) -> Optional[float]:
        """After the stream failed with `error`: the pause before starting
        it again, or None if it is not retried (not UNAVAILABLE, after a
        delivery — a new stream would restart its sequence and miss what
        was published meanwhile — or attempts or deadline used up)."""
        if not retryable(error) or self._tracker.received > 0:
            return None
        if self._attempts >= self._retry.max_attempts:
            return None
        pause = self._retry.backoff(self._attempts)
        if not self._deadline.allows_sleep(pause):
            return None
        return pause
