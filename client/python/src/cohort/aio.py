"""cohort.aio.Client: the asyncio twin of cohort.Client (grpc.aio).

The same methods, arguments, errors, deadlines and retries as
cohort.Client; the calls are coroutines, and listen() and publish_stream()
return async iterators:

    async with cohort.aio.Client("127.0.0.1:50051") as c:
        [sid] = await c.subscribe("alice", (F("price") <= 500))
        async with c.listen("alice") as deliveries:
            await c.publish({"price": 420})
            async for d in deliveries:
                print(d.sequence, d.gap, d.attributes)
                break

Create the client inside a running event loop and use it from that loop.
"""

from __future__ import annotations

import asyncio
from typing import (Any, AsyncIterable, AsyncIterator, Awaitable, Callable,
                    Iterable, List, Mapping, Optional, TypeVar, Union)

import grpc
import grpc.aio

from cohort import _convert
from cohort._base import (DEFAULT_BATCH, DEFAULT_TIMEOUT, DEFAULT_WINDOW,
                          ChannelOptions, ClientBase, Deadline, ListenerBase,
                          refused_before_matching, retryable)
from cohort._convert import (Delivery, EventLike, FilterLike, Payload,
                             StreamItem)
from cohort._errors import from_rpc_error
from cohort._filters import Filter, fill_spec
from cohort._options import TLS, Retry
from cohort.v1 import pubsub_pb2 as pb
from cohort.v1 import pubsub_pb2_grpc as pb_grpc

_Response = TypeVar("_Response")

__all__ = ["Client", "Listener"]

# What read() returns at the end of a stream (through getattr: some
# releases of the grpcio type stubs lack it).
_EOF: object = getattr(grpc.aio, "EOF")


class Client(ClientBase):
    """An asyncio Cohort client; see cohort.Client for every argument."""

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
            self._channel = grpc.aio.insecure_channel(
                self._grpc_target, options=self._channel_options)
        else:
            self._channel = grpc.aio.secure_channel(
                self._grpc_target, self._tls.credentials(),
                options=self._channel_options)
        self._stub = pb_grpc.PubSubStub(self._channel)

    async def close(self) -> None:
        """Closes the channel; calls in progress end with CANCELLED."""
        await self._channel.close()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _call(
            self,
            method: Callable[..., Awaitable[_Response]],
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
                return await method(request,
                                    timeout=attempt_timeout,
                                    metadata=self._metadata)
            except grpc.RpcError as e:
                last_error = e
                await asyncio.sleep(
                    self._retry_pause(e, attempts, deadline, idempotent,
                                      retry_if))

    async def _change(self, method: Callable[..., Awaitable[_Response]],
                      request: Any, timeout: Optional[float]) -> _Response:
        """See cohort.Client._change."""
        request.request_id = self._change_request_id()
        response = await self._call(method, request, timeout,
                                    idempotent=self.cluster)
        # Subscribe- and UnsubscribeResponse both have it.
        self._note_position(getattr(response, "log_position"))
        return response

    async def _filter(self, filter: FilterLike,
                      timeout: Optional[float]) -> Filter:
        text = _convert.filter_text(filter)
        if text is not None:
            return await self.parse_filter(text, timeout=timeout)
        return _convert.to_filter(filter)

    async def parse_filter(
            self,
            text: Union[str, Mapping[str, Any]],
            *,
            timeout: Optional[float] = None) -> Filter:
        """See cohort.Client.parse_filter."""
        if isinstance(text, Mapping):
            text = _convert.filter_text(text) or ""
        if not isinstance(text, str):
            raise TypeError(f"filter text: str, got {type(text).__name__}")
        response = await self._call(self._stub.ParseFilter,
                                    pb.ParseFilterRequest(filter=text),
                                    timeout,
                                    idempotent=True)
        return Filter.from_spec(response)

    async def subscribe(self,
                        subscriber: str,
                        filter: FilterLike,
                        *more: FilterLike,
                        timeout: Optional[float] = None) -> List[int]:
        """See cohort.Client.subscribe."""
        if not isinstance(subscriber, str):
            raise TypeError(f"subscriber: str, got {type(subscriber).__name__}")
        deadline = Deadline(self._timeout(timeout))
        request = pb.SubscribeRequest()
        for f in (filter,) + more:
            spec = request.subscriptions.add(subscriber=subscriber)
            fill_spec(spec, await self._filter(f, deadline.remaining()))
        response = await self._change(self._stub.Subscribe, request,
                                      deadline.remaining())
        return list(response.subscription_ids)

    async def subscribe_specs(self,
                              specs: Iterable[pb.SubscriptionSpec],
                              *,
                              timeout: Optional[float] = None) -> List[int]:
        """See cohort.Client.subscribe_specs."""
        request = pb.SubscribeRequest(subscriptions=list(specs))
        response = await self._change(self._stub.Subscribe, request,
                                      timeout)
        return list(response.subscription_ids)

    async def unsubscribe(self,
                          ids: Iterable[int],
                          *,
                          timeout: Optional[float] = None) -> None:
        """See cohort.Client.unsubscribe."""
        request = pb.UnsubscribeRequest(subscription_ids=list(ids))
        await self._change(self._stub.Unsubscribe, request, timeout)

    async def publish(self,
                      events: Union[EventLike, Iterable[EventLike]],
                      payload: Payload = None,
                      return_ids: bool = False,
                      *,
                      timeout: Optional[float] = None) -> List[pb.EventResult]:
        """See cohort.Client.publish."""
        request = _convert.publish_request(events, payload, return_ids)
        request.min_log_position = self._log_position
        response = await self._call(self._stub.Publish,
                                    request,
                                    timeout,
                                    idempotent=self.cluster,
                                    retry_if=refused_before_matching)
        return list(response.results)

    def publish_stream(
            self,
            items: Union[Iterable[StreamItem], AsyncIterable[StreamItem]],
            *,
            batch: int = DEFAULT_BATCH,
            window: int = DEFAULT_WINDOW,
            return_ids: bool = False,
            payload: Optional[bytes] = None,
            timeout: Optional[float] = None) -> AsyncIterator[pb.EventResult]:
        """See cohort.Client.publish_stream; items may be an async iterable.

        Returns an async iterator of one EventResult per event, in order.
        """
        if window < 1:
            raise ValueError("window: at least 1 request in flight")
        batcher = _convert.Batcher(batch, return_ids, payload)
        deadline = self._timeout(timeout, default=False)
        metadata = self._metadata

        def start() -> Any:  # when iteration starts
            return self._stub.PublishStream(timeout=deadline, metadata=metadata)

        return _publish_stream(start, items, batcher, window,
                               self._log_position)

    def listen(self,
               subscriber: str,
               *,
               timeout: Optional[float] = None) -> Listener:
        """See cohort.Client.listen; returns an async iterator of Delivery."""
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

    async def stats(self, *, timeout: Optional[float] = None) -> pb.Stats:
        """See cohort.Client.stats."""
        return await self._call(self._stub.GetStats,
                                pb.GetStatsRequest(),
                                timeout,
                                idempotent=True)


async def _items(
    items: Union[Iterable[StreamItem], AsyncIterable[StreamItem]]
) -> AsyncIterator[StreamItem]:
    if isinstance(items, AsyncIterable):
        async for item in items:
            yield item
    else:
        for item in items:
            yield item


async def _publish_stream(start: Callable[[], Any],
                          items: Union[Iterable[StreamItem],
                                       AsyncIterable[StreamItem]],
                          batcher: _convert.Batcher,
                          window: int,
                          position: int = 0) -> AsyncIterator[pb.EventResult]:
    """Writes requests (at most `window` unanswered) while reading answers.

    A task writes: it reads the items, builds the requests and waits for a
    slot before each write; this generator reads the answers and frees a
    slot per answer. A bad item is raised here, not in the task. Requests
    below log `position` are sent as copies that wait for it (read your
    writes in a cluster).
    """
    call = start()
    slots = asyncio.Semaphore(window)
    item_error: List[BaseException] = []

    async def send(request: pb.PublishRequest) -> bool:
        if position > request.min_log_position:
            copy = pb.PublishRequest()
            copy.CopyFrom(request)
            copy.min_log_position = position
            request = copy
        await slots.acquire()
        try:
            await call.write(request)
        except (grpc.RpcError, asyncio.InvalidStateError):
            return False  # the stream ended; the reader reports why
        return True

    async def writer() -> None:
        try:
            async for item in _items(items):
                for request in batcher.push(item):
                    if not await send(request):
                        return
            for request in batcher.flush():
                if not await send(request):
                    return
            await call.done_writing()
        except (grpc.RpcError, asyncio.InvalidStateError):
            return
        except Exception as e:  # pylint: disable=broad-except
            item_error.append(e)  # a bad item: raised in the reader
            call.cancel()

    task = asyncio.ensure_future(writer())
    try:
        while True:
            try:
                response = await call.read()
            except asyncio.CancelledError:
                if item_error:
                    raise item_error[0] from None
                raise
            except grpc.RpcError as e:
                if item_error:
                    raise item_error[0] from None
                raise from_rpc_error(e) from None
            if response is _EOF:
                break
            slots.release()
            for result in response.results:
                yield result
        await task
        if item_error:
            raise item_error[0]
    finally:
        if not task.done():
            task.cancel()
        call.cancel()


class Listener(ListenerBase, AsyncIterator[Delivery]):
    """The deliveries of one Listen stream, as an async iterator.

    Attributes as cohort.Listener: received, missed, last_sequence.
    """

    def __aiter__(self) -> Listener:
        return self

    async def __anext__(self) -> Delivery:
        while True:
            if self._cancelled:
                raise StopAsyncIteration
            try:
                message = await self._call.read()
            except asyncio.CancelledError:
                if self._cancelled:  # our cancel(), not the task's
                    raise StopAsyncIteration from None
                raise
            except grpc.RpcError as e:
                if self._cancelled:
                    raise StopAsyncIteration from None
                if not await self._may_retry(e):
                    raise from_rpc_error(e) from None
                continue
            if message is _EOF:
                raise StopAsyncIteration
            return self._tracker.delivery(message)

    async def _may_retry(self, error: grpc.RpcError) -> bool:
        """After a connect failure: waits and restarts the call, or says no."""
        pause = self._reconnect_pause(error)
        if pause is None:
            return False
        await asyncio.sleep(pause)
        return not self._cancelled and self._restart()

    def cancel(self) -> None:
        """Ends the stream; iteration then stops."""
        self._cancelled = True
        self._call.cancel()

    async def __aenter__(self) -> Listener:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.cancel()
