"""cohort.aio.Client: the asyncio twin, call by call."""

from __future__ import annotations

import asyncio
import time
from typing import AsyncIterator, Iterator, List

import grpc
import pytest

import cohort
import cohort.aio
from cohort import F
from cohort.v1 import pubsub_pb2 as pb
from helpers import FakeServer, Server


async def wait_for_listeners(client: cohort.aio.Client, count: int) -> None:
    deadline = time.monotonic() + 10
    while (await client.stats()).listeners != count:
        assert time.monotonic() < deadline, f"never {count} listeners"
        await asyncio.sleep(0.01)


@pytest.mark.asyncio
async def test_subscribe_publish_unsubscribe(server: Server,
                                             subscriber: str) -> None:
    async with cohort.aio.Client(server.target) as c:
        a, b = await c.subscribe(
            subscriber, (F("aio_x") >= 1) & (F("aio_x") <= 3),
            [pb.Predicate(attribute="aio_x", op=pb.OP_EQ, value=9)])
        results = await c.publish([{
            "aio_x": 2
        }, {
            "aio_x": 9
        }, {
            "aio_x": 5
        }],
                                  return_ids=True)
        assert [
            (a in r.subscription_ids, b in r.subscription_ids) for r in results
        ] == [(True, False), (False, True), (False, False)]
        await c.unsubscribe([a])
        [r] = await c.publish({"aio_x": 2}, return_ids=True)
        assert a not in r.subscription_ids
        with pytest.raises(cohort.NotFound) as e:
            await c.unsubscribe([a])
        assert e.value.code == grpc.StatusCode.NOT_FOUND and str(
            a) in e.value.details


@pytest.mark.asyncio
async def test_text_filters_and_parse_filter(server: Server,
                                             subscriber: str) -> None:
    async with cohort.aio.Client(server.target) as c:
        [sid] = await c.subscribe(subscriber,
                                  'aio_t prefix "ab" and aio_n != 0')
        [hit, miss] = await c.publish([{
            "aio_t": "abc",
            "aio_n": 1
        }, {
            "aio_t": "abc"
        }],
                                      return_ids=True)
        assert sid in hit.subscription_ids and sid not in miss.subscription_ids
        assert await c.parse_filter("a = 1 and exists b") == (
            (F("a") == 1) & F("b").exists())
        with pytest.raises(cohort.InvalidArgument, match="column 3"):
            await c.parse_filter("a ~ 1")
        # Event Ruler patterns, as a dict or JSON text.
        assert await c.parse_filter({"a": {"b": [{"prefix": "x"}]}}) == (
            F("a.b").prefix("x"))
        [pid] = await c.subscribe(subscriber, '{"aio_p": [1, 2]}')
        [hit] = await c.publish({"aio_p": 2}, return_ids=True)
        assert pid in hit.subscription_ids


@pytest.mark.asyncio
async def test_invalid_argument_and_stats(server: Server) -> None:
    async with cohort.aio.Client(server.target) as c:
        before = await c.stats()
        with pytest.raises(cohort.InvalidArgument) as e:
            await c.publish([{"ok": 1}, {"bad name": 1}])
        assert e.value.details.startswith("events[1].attributes[0].name:")
        await c.publish({"ok": 1})
        assert (await c.stats()).events_published == before.events_published + 1


@pytest.mark.asyncio
async def test_listen_as_async_iterator(server: Server,
                                        subscriber: str) -> None:
    async with cohort.aio.Client(server.target) as c:
        [sid] = await c.subscribe(subscriber, F("aio_l").exists())
        await wait_for_listeners(c, 0)  # others' streams may be going away
        async with c.listen(subscriber) as deliveries:
            await wait_for_listeners(c, 1)
            await c.publish([{"aio_l": i} for i in range(3)], payload=b"pl")
            got: List[cohort.Delivery] = []
            async for d in deliveries:
                got.append(d)
                if len(got) == 3:
                    break
        assert [d.sequence for d in got] == [1, 2, 3] and [d.gap for d in got
                                                          ] == [0, 0, 0]
        values = [d.attributes["aio_l"] for d in got]
        assert sorted(v for v in values if isinstance(v, int)) == [0, 1, 2]
        assert all(
            d.subscription_ids == [sid] and d.payload == b"pl" for d in got)
        listener = c.listen(subscriber)
        listener.cancel()
        assert [d async for d in listener] == []
        with pytest.raises(cohort.DeadlineExceeded):
            await c.listen("aio-nobody", timeout=0.2).__anext__()


@pytest.mark.asyncio
async def test_publish_stream_sync_and_async_items(server: Server,
                                                   subscriber: str) -> None:
    async with cohort.aio.Client(server.target) as c:
        [sid] = await c.subscribe(subscriber, F("aio_s") < 10)

        async def events() -> AsyncIterator[cohort.StreamItem]:
            for i in range(300):
                yield {"aio_s": i}

        results = [
            r async for r in c.publish_stream(
                events(), batch=16, window=2, return_ids=True)
        ]
        assert [sid in r.subscription_ids for r in results
               ] == [i < 10 for i in range(300)]
        request = pb.PublishRequest(
            events=[pb.Event(attributes=[pb.Attribute(name="aio_s", value=1)])],
            return_ids=True)
        results = [
            r async for r in c.publish_stream([request, {
                "aio_s": 50
            }],
                                              return_ids=True)
        ]
        assert [sid in r.subscription_ids for r in results] == [True, False]


@pytest.mark.asyncio
async def test_publish_stream_errors(server: Server) -> None:
    async with cohort.aio.Client(server.target) as c:
        got: List[pb.EventResult] = []
        with pytest.raises(cohort.InvalidArgument, match="attributes"):
            async for r in c.publish_stream([{
                    "a": 1
            }] * 4 + [{
                    "bad name": 1
            }],
                                            batch=2,
                                            window=1):
                got.append(r)
        assert len(got) == 4
        with pytest.raises(TypeError, match="complex"):
            async for r in c.publish_stream([{"a": 1j}]):
                pass


@pytest.fixture()
def flaky() -> Iterator[FakeServer]:
    fake = FakeServer(fail=2)
    yield fake
    fake.stop()


@pytest.mark.asyncio
async def test_retries_only_idempotent_calls(flaky: FakeServer) -> None:
    fast = cohort.Retry(max_attempts=3, initial_backoff=0.01)
    async with cohort.aio.Client(flaky.target, retry=fast) as c:
        assert (await c.stats()).mode == "fake"
        assert len(await c.parse_filter("x = 1")) == 1
        deliveries = [(d.sequence, d.gap) async for d in c.listen("s")]
        assert deliveries == [(1, 0), (2, 0), (5, 2), (6, 0)]
        with pytest.raises(cohort.Unavailable):
            await c.publish({"x": 1})
        with pytest.raises(cohort.Unavailable):
            await c.subscribe("s", F("x") == 1)
    assert flaky.calls == {
        "GetStats": 3,
        "ParseFilter": 3,
        "Listen": 3,
        "Publish": 1,
        "Subscribe": 1
    }


@pytest.mark.asyncio
async def test_deadlines() -> None:
    fake = FakeServer(delay=0.3)
    try:
        async with cohort.aio.Client(fake.target, timeout=0.1) as c:
            with pytest.raises(cohort.DeadlineExceeded):
                await c.stats()
            assert (await c.stats(timeout=5)).mode == "fake"
    finally:
        fake.stop()


@pytest.mark.asyncio
async def test_publish_stream_keeps_a_bounded_window(server: Server) -> None:
    consumed = 0

    async def items() -> AsyncIterator[cohort.StreamItem]:
        nonlocal consumed
        for i in range(300):
            consumed += 1
            yield {"aio_w": i}

    window = 3
    answered = 0
    async with cohort.aio.Client(server.target) as c:
        async for _ in c.publish_stream(items(), batch=1, window=window):
            answered += 1
            # At most `window` requests unanswered, plus one waiting for a slot.
            assert consumed <= answered + window + 1
            await asyncio.sleep(0.001 if answered < 50 else 0)
    assert consumed == 300
