"""cohort.Client: the blocking client (grpc sync API).

One Client holds one gRPC channel (one HTTP/2 connection, reconnected by
gRPC as needed) and may be used from several threads at once. Use it as a
context manager, or call close().

Deadlines: unary calls (subscribe, unsubscribe, publish, stats,
parse_filter) take the client's `timeout` (seconds; default 10) unless
the call passes its own `timeout=`; None means no deadline. Streams
(listen, publish_stream) have no deadline unless the call passes one.

Retries: see cohort.Retry. Only the idempotent stats, parse_filter and the
connect of listen retry UNAVAILABLE, with bounded exponential backoff
inside the call's deadline.

Clusters (docs/DESIGN.md section 11): a target of several IP addresses
("127.0.0.1:50051,127.0.0.1:50052") or a DNS name ("dns:///cohort:50051")
spreads calls round robin over the nodes whose health is SERVING. Then
subscribe and unsubscribe carry a request_id and retry UNAVAILABLE (the log
applies a retried change once), publish retries only a refusal before
matching (UNAVAILABLE "not serving"), and every publish carries the highest
log position the client's changes were answered with, so it reads its own
writes on any node.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import (Any, Callable, Iterable, Iterator, List, Mapping, Optional,
                    Tuple, TypeVar, Union)

import grpc

from cohort import _convert
from cohort._convert import (Delivery, EventLike, FilterLike, Payload,
                             StreamItem)
from cohort._base import (DEFAULT_BATCH, DEFAULT_TIMEOUT, DEFAULT_WINDOW,
                          ChannelOptions, ClientBase, Deadline, ListenerBase,
                          refused_before_matching, retryable)
from cohort._errors import error_for, from_rpc_error
from cohort._filters import Filter, fill_spec
from cohort._options import TLS, Retry
from cohort.v1 import pubsub_pb2 as pb
from cohort.v1 import pubsub_pb2_grpc as pb_grpc

_Response = TypeVar("_Response")

__all__ = ["Client", "Listener", "DEFAULT_BATCH", "DEFAULT_TIMEOUT",
           "DEFAULT_WINDOW"]


class Client(ClientBase):
    """A blocking Cohort client.

        with cohort.Client("127.0.0.1:50051") as c:
            [sid] = c.subscribe("alice", "price <= 500")
            [result] = c.publish({"price": 420}, return_ids=True)
            print(result.subscription_ids)

    Args:
      target: "host:port" (any gRPC target).
      token: bearer token sent on every call as "authorization: Bearer
        <token>" (cohortd --auth_tokens).
      tls: a cohort.TLS (CA, optional client cert/key), True for TLS with
        the system's roots, or None for plaintext.
      timeout: default deadline of unary calls in seconds (None: none).
      retry: backoff for UNAVAILABLE on idempotent calls (cohort.Retry;
        Retry(max_attempts=1) turns retries off).
      options: extra gRPC channel options, e.g. [("grpc.lb_policy_name",
        "round_robin")].
    """

    def __init__(
        self,
        target: str,
        *,
        token: Optional[str] = None,
        tls: Union[TLS, bool, None] = None,
        timeout: Optional[float] = DEFAULT_TIMEOUT,
        retry: Optional[Retry] = None,
        options: ChannelOptions = ()
    ) -> None:
        super().__init__(target, token, tls, timeout, retry, options)
        if self._tls is None:
            self._channel = grpc.insecure_channel(
                self._grpc_target, options=self._channel_options)
        else:
            self._channel = grpc.secure_channel(self._grpc_target,
                                                self._tls.credentials(),
                                                options=self._channel_options)
        self._stub = pb_grpc.PubSubStub(self._channel)

    # Lifetime.

    def close(self) -> None:
        """Closes the channel; calls in progress end with CANCELLED."""
        self._channel.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # Plumbing.

    def _call(
            self,
            method: Callable[..., _Response],
            request: Any,
            timeout: Optional[float],
            idempotent: bool,
            retry_if: Callable[[grpc.RpcError], bool] = retryable
    ) -> _Response:
        deadline = Deadline(self._timeout(timeout))
        attempts = 0
        last_error: Optional[grpc.RpcError] = None
        while True:
            attempts += 1
            attempt_timeout = self._attempt_timeout(deadline, last_error)
            try:
                return method(request,
                              timeout=attempt_timeout,
                              metadata=self._metadata)
            except grpc.RpcError as e:
                last_error = e
                time.sleep(
                    self._retry_pause(e, attempts, deadline, idempotent,
                                      retry_if))

    def _change(self, method: Callable[..., _Response], request: Any,
                timeout: Optional[float]) -> _Response:
        """A Subscribe or Unsubscribe: against a cluster it carries a
        request_id and is retried on UNAVAILABLE (applied once); the log
        position it is answered with is remembered."""
        request.request_id = self._change_request_id()
        response = self._call(method, request, timeout,
                              idempotent=self.cluster)
        # Subscribe- and UnsubscribeResponse both have it.
        self._note_position(getattr(response, "log_position"))
        return response

    def _filter(self, filter: FilterLike,
                timeout: Optional[float]) -> Filter:
        text = _convert.filter_text(filter)
        if text is not None:
            return self.parse_filter(text, timeout=timeout)
        return _convert.to_filter(filter)

    # The API.

    def parse_filter(self,
                     text: Union[str, Mapping[str, Any]],
                     *,
                     timeout: Optional[float] = None) -> Filter:
        """Parses a filter on the server (ParseFilter RPC).

        text is CLI filter text, or an Event Ruler pattern or SNS filter
        policy: a dict, or its JSON text. Returns a cohort.Filter: the
        predicates in the order written (.predicates) and the "or" groups
        (.any_of: text's `or` and parentheses, a pattern's "$or"), as
        ParseFilterResponse has them (Filter.from_spec; a group of one
        alternative joins the predicates); subscribe() takes it as it is.
        Raises InvalidArgument with the server's message
        (for text, the column, the input echoed and carets under the
        mistake; for a pattern, the place, as "pattern: at
        detail.state[0]: ...") for a bad filter; retried on UNAVAILABLE.
        """
        if isinstance(text, Mapping):
            text = _convert.filter_text(text) or ""
        if not isinstance(text, str):
            raise TypeError(f"filter text: str, got {type(text).__name__}")
        response = self._call(self._stub.ParseFilter,
                              pb.ParseFilterRequest(filter=text),
                              timeout,
                              idempotent=True)
        return Filter.from_spec(response)

    def subscribe(self,
                  subscriber: str,
                  filter: FilterLike,
                  *more: FilterLike,
                  timeout: Optional[float] = None) -> List[int]:
        """Adds one subscription per filter for subscriber, in one call.

        Each filter is CLI text ("price <= 500 and kind = 7", parsed by the
        server's ParseFilter first), an Event Ruler pattern or SNS filter
        policy (a dict such as {"detail": {"price": [{"numeric": ["<=",
        500]}]}}, or its JSON text; ParseFilter too), a Filter from F
        (with "or" groups: SubscriptionSpec.any_of), one pb Predicate or a
        sequence of them (a conjunction). The Subscribe is all or nothing
        and never retried.
        Returns the new ids, one per filter, in order.
        """
        if not isinstance(subscriber, str):
            raise TypeError(f"subscriber: str, got {type(subscriber).__name__}")
        deadline = Deadline(self._timeout(timeout))
        request = pb.SubscribeRequest()
        for f in (filter,) + more:
            spec = request.subscriptions.add(subscriber=subscriber)
            fill_spec(spec, self._filter(f, deadline.remaining()))
        response = self._change(self._stub.Subscribe, request,
                                deadline.remaining())
        return list(response.subscription_ids)

    def subscribe_specs(self,
                        specs: Iterable[pb.SubscriptionSpec],
                        *,
                        timeout: Optional[float] = None) -> List[int]:
        """Subscribe with prebuilt specs (any subscribers), all or nothing."""
        request = pb.SubscribeRequest(subscriptions=list(specs))
        response = self._change(self._stub.Subscribe, request, timeout)
        return list(response.subscription_ids)

    def unsubscribe(self,
                    ids: Iterable[int],
                    *,
                    timeout: Optional[float] = None) -> None:
        """Removes subscriptions, all or nothing (NotFound names a dead id)."""
        request = pb.UnsubscribeRequest(subscription_ids=list(ids))
        self._change(self._stub.Unsubscribe, request, timeout)

    def publish(self,
                events: Union[EventLike, Iterable[EventLike]],
                payload: Payload = None,
                return_ids: bool = False,
                *,
                timeout: Optional[float] = None) -> List[pb.EventResult]:
        """Publishes events in one Publish call; one result per event.

        events: one event or an iterable of them; an event is a mapping
        {"price": 420, "kind": "order"} (int: int64; float: a number that
        may have a fraction, 19.99; str: UTF-8 string; bytes: string), a
        nested mapping {"detail": {"price": 19.99, "tags": ["a", "b"]}}
        (a dict, list, bool or None anywhere in it makes it a JSON event,
        Event.json: values named by path, arrays matched element by
        element), or a cohort.v1 Event. payload: bytes for every
        mapping event, or a sequence with one per event (a cohort.v1 Event
        keeps its own). Each result has match_count and, with
        return_ids=True, the matched subscription_ids (ascending). Never
        retried.
        """
        request = _convert.publish_request(events, payload, return_ids)
        request.min_log_position = self._log_position
        response = self._call(self._stub.Publish,
                              request,
                              timeout,
                              idempotent=self.cluster,
                              retry_if=refused_before_matching)
        return list(response.results)

    def publish_stream(
            self,
            items: Iterable[StreamItem],
            *,
            batch: int = DEFAULT_BATCH,
            window: int = DEFAULT_WINDOW,
            return_ids: bool = False,
            payload: Optional[bytes] = None,
            timeout: Optional[float] = None) -> Iterator[pb.EventResult]:
        """Publishes a stream of events over one PublishStream call.

        items: mappings or cohort.v1 Events, grouped into PublishRequests
        of `batch` events (with `payload` on each mapping event), or
        prebuilt PublishRequests, sent as they are (fastest: no per-event
        work in the client). At most `window` requests are in flight
        (sent, not yet answered). Yields one EventResult per event, in
        order, as answers arrive. The call starts when iteration starts;
        items are read (and converted) in the caller's thread, only as the
        window allows, so a bad item raises its TypeError or ValueError
        there. Not retried; raises CohortError if the stream fails (the
        results yielded before stand). Closing the generator early cancels
        the stream.
        """
        if window < 1:
            raise ValueError("window: at least 1 request in flight")
        requests = _convert.batch_requests(items, batch, return_ids, payload)
        if self._log_position > 0:
            requests = _at_position(requests, self._log_position)
        return _publish_stream(self._stub.PublishStream, requests, window,
                               self._timeout(timeout, default=False),
                               self._metadata)

    def listen(self,
               subscriber: str,
               *,
               timeout: Optional[float] = None) -> Listener:
        """Opens a Listen stream: an iterator of Delivery, with gaps.

        Each Delivery has subscription_ids, event, sequence and gap (the
        deliveries lost just before it because the listener fell behind).
        The stream is registered on the server shortly after the call
        starts (Stats.listeners counts it). UNAVAILABLE before the first
        delivery (the connect) is retried with backoff; later it is raised
        (a new stream would restart its sequence and miss what was
        published meanwhile). Use as a context manager or call cancel().
        """
        if not isinstance(subscriber, str):
            raise TypeError(f"subscriber: str, got {type(subscriber).__name__}")
        request = pb.ListenRequest(subscriber=subscriber)
        deadline = Deadline(self._timeout(timeout, default=False))
        metadata = self._metadata

        def start() -> Any:
            return self._stub.Listen(request,
                                     timeout=deadline.remaining(),
                                     metadata=metadata)

        return Listener(start, self.retry, deadline)

    def stats(self, *, timeout: Optional[float] = None) -> pb.Stats:
        """The server's counters and stage profile (GetStats); retried."""
        return self._call(self._stub.GetStats,
                          pb.GetStatsRequest(),
                          timeout,
                          idempotent=True)


class Listener(ListenerBase, Iterator[Delivery]):
    """The deliveries of one Listen stream (see Client.listen), with the
    counts of ListenerBase: received, missed, last_sequence."""

    def __init__(self, start: Callable[[], Any], retry: Retry,
                 deadline: Deadline) -> None:
        # Guards _call and _cancelled between cancel() and a reconnect.
        self._lock = threading.Lock()
        super().__init__(start, retry, deadline)

    def __iter__(self) -> Listener:
        return self

    def __next__(self) -> Delivery:
        while True:
            try:
                message = next(self._call)
            except grpc.RpcError as e:
                if self._cancelled:
                    raise StopIteration from None
                if not self._may_retry(e):
                    raise from_rpc_error(e) from None
                continue
            return self._tracker.delivery(message)

    def _may_retry(self, error: grpc.RpcError) -> bool:
        """After a connect failure: waits and restarts the call, or says no."""
        pause = self._reconnect_pause(error)
        if pause is None:
            return False
        time.sleep(pause)
        with self._lock:
            return not self._cancelled and self._restart()

    def cancel(self) -> None:
        """Ends the stream; iteration then stops (StopIteration)."""
        with self._lock:
            self._cancelled = True
            self._call.cancel()

    def __enter__(self) -> Listener:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cancel()


# Ends the request iterator that gRPC's sending thread reads.
_END_OF_REQUESTS = pb.PublishRequest()


def _publish_stream(
        method: Callable[..., Any], requests: Iterator[pb.PublishRequest],
        window: int, timeout: Optional[float],
        metadata: Tuple[Tuple[str, str], ...]) -> Iterator[pb.EventResult]:
    """One PublishStream call with at most `window` requests unanswered.

    gRPC's sync API reads the request iterator on a thread of its own.
    Here that thread only takes finished requests from a queue: the
    caller's thread builds them (so the caller's items are read, and their
    errors raised, in the caller's thread) and counts the requests in
    flight, topping the window up before it waits for each answer. Doing
    the conversion on the sending thread instead cost about 15% of the
    rate (GIL hand-offs between it, the caller and gRPC's polling thread).
    """
    outbox: "queue.SimpleQueue[pb.PublishRequest]" = queue.SimpleQueue()

    def send() -> Iterator[pb.PublishRequest]:
        while True:
            request = outbox.get()
            if request is _END_OF_REQUESTS:
                return
            yield request

    call = method(send(), timeout=timeout, metadata=metadata)
    in_flight = 0
    exhausted = False
    try:
        while True:
            while in_flight < window and not exhausted:
                request = next(requests, None)
                if request is None:
                    exhausted = True
                    outbox.put(_END_OF_REQUESTS)
                else:
                    outbox.put(request)
                    in_flight += 1
            if in_flight == 0:
                break
            response = next(call, None)
            if response is None:
                raise error_for(
                    grpc.StatusCode.INTERNAL,
                    f"PublishStream ended with {in_flight} requests unanswered")
            in_flight -= 1
            yield from response.results
        if next(call, None) is not None:  # waits for the status: OK or raises
            raise error_for(grpc.StatusCode.INTERNAL,
                            "PublishStream: an unasked-for answer")
    except grpc.RpcError as e:
        raise from_rpc_error(e) from None
    finally:
        outbox.put(_END_OF_REQUESTS)
        call.cancel()


def _at_position(requests: Iterable[pb.PublishRequest],
                 position: int) -> Iterator[pb.PublishRequest]:
    """Copies of `requests` that wait for log `position` (read your
    writes); the caller's messages are left as they are."""
    for request in requests:
        if request.min_log_position >= position:
            yield request
            continue
        copy = pb.PublishRequest()
        copy.CopyFrom(request)
        copy.min_log_position = position
        yield copy
