"""cohort.Client against a real cohortd: every call, errors, deadlines."""

from __future__ import annotations

import threading
import time
from typing import Iterator, List

import grpc
import pytest

import cohort
from cohort import F
from cohort.v1 import pubsub_pb2 as pb
from helpers import wait_for_listeners


def ids_matching(client: cohort.Client, event: cohort.EventLike) -> List[int]:
    [result] = client.publish([event], return_ids=True)
    assert result.match_count == len(result.subscription_ids)
    return list(result.subscription_ids)


def test_subscribe_builder_and_predicates_in_one_batch(client: cohort.Client,
                                                       subscriber: str) -> None:
    predicates = [
        pb.Predicate(attribute="py_price", op=pb.OP_LE, value=500),
        pb.Predicate(attribute="py_kind", op=pb.OP_EQ, value=7)
    ]
    ids = client.subscribe(subscriber,
                           (F("py_price") <= 500) & (F("py_kind") == 7),
                           predicates,
                           F("py_kind") == 8)
    assert len(ids) == 3 and ids == sorted(ids) and 0 not in ids
    assert set(ids_matching(client, {
        "py_price": 420,
        "py_kind": 7
    })) >= set(ids[:2])
    assert ids[2] not in ids_matching(client, {"py_price": 420, "py_kind": 7})
    assert not set(ids) & set(
        ids_matching(client, {
            "py_price": 501,
            "py_kind": 7
        }))
    assert ids[2] in ids_matching(client, {"py_price": 501, "py_kind": 8})


def test_subscribe_text_filter(client: cohort.Client, subscriber: str) -> None:
    [sid] = client.subscribe(subscriber,
                             'py_t_price <= 500 and py_t_type = "order"')
    assert sid in ids_matching(client, {"py_t_price": 5, "py_t_type": "order"})
    assert sid not in ids_matching(client, {
        "py_t_price": 5,
        "py_t_type": "quote"
    })


def test_subscribe_is_all_or_nothing(client: cohort.Client,
                                     subscriber: str) -> None:
    before = client.stats().subscriptions
    with pytest.raises(cohort.InvalidArgument) as e:
        client.subscribe(subscriber, F("py_ok") == 1, F("bad name") == 2)
    assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert e.value.details.startswith(
        "subscriptions[1].predicates[0].attribute:")
    assert isinstance(e.value, cohort.CohortError)
    assert client.stats().subscriptions == before


def test_unsubscribe_and_not_found(client: cohort.Client,
                                   subscriber: str) -> None:
    a, b = client.subscribe(subscriber, F("py_u") == 1, F("py_u") == 1)
    client.unsubscribe([a])
    matched = ids_matching(client, {"py_u": 1})
    assert a not in matched and b in matched
    with pytest.raises(cohort.NotFound) as e:
        client.unsubscribe([b, a])  # a is gone: nothing is removed
    assert e.value.code == grpc.StatusCode.NOT_FOUND
    assert e.value.details.startswith("subscription_ids[1]:") and str(
        a) in e.value.details
    assert b in ids_matching(client, {"py_u": 1})
    with pytest.raises(cohort.InvalidArgument, match="listed only once"):
        client.unsubscribe([b, b])
    client.unsubscribe([])  # empty: nothing happens


def test_publish_forms_and_results(client: cohort.Client,
                                   subscriber: str) -> None:
    [sid] = client.subscribe(subscriber, F("py_p").between("a", "m"))
    results = client.publish(
        [{
            "py_p": "b"
        }, {
            "py_p": "z"
        }, {
            "py_p": 3
        },
         pb.Event(attributes=[pb.Attribute(name="py_p", string_value=b"c")])],
        return_ids=True)
    assert [sid in r.subscription_ids for r in results
           ] == [True, False, False, True]
    counts = client.publish([{"py_p": "b"}, {"py_p": "z"}])
    assert counts[0].match_count >= 1 and list(counts[0].subscription_ids) == []
    assert client.publish([]) == []
    [one] = client.publish({"py_p": b"c"}, return_ids=True)
    assert sid in one.subscription_ids


def test_publish_invalid_argument_names_the_field(
        client: cohort.Client) -> None:
    before = client.stats().events_published
    with pytest.raises(cohort.InvalidArgument) as e:
        client.publish([{"a": 1}, {"s": "x" * 300}])
    assert e.value.details.startswith("events[1].attributes[0].string_value:")
    assert "--max_string_bytes" in e.value.details
    assert client.stats().events_published == before  # nothing published


def test_listen_delivers_payload_ids_and_sequence(client: cohort.Client,
                                                  subscriber: str) -> None:
    [sid] = client.subscribe(subscriber, F("py_l").exists())
    # Streams other tests closed may still be going away: start from none.
    wait_for_listeners(client, 0)
    with client.listen(subscriber) as first, client.listen(
            subscriber) as second:
        wait_for_listeners(client, 2)
        client.publish([{"py_l": 1}, {"py_l": "two"}], payload=[b"p1", b"p2"])
        client.publish({"py_l": 3, "other": 4}, payload=b"p3")
        for stream in (first, second):
            got = [next(stream) for _ in range(3)]
            assert [d.sequence for d in got] == [1, 2, 3]
            assert [d.gap for d in got] == [0, 0, 0]
            assert all(d.subscription_ids == [sid] for d in got)
            assert sorted((d.payload, d.attributes["py_l"]) for d in got) == [
                (b"p1", 1), (b"p2", b"two"), (b"p3", 3)
            ]
            assert (stream.received, stream.missed,
                    stream.last_sequence) == (3, 0, 3)
        first.cancel()
        assert list(first) == []  # cancelled: iteration stops
    wait_for_listeners(client, 0)


def test_listen_ends_with_a_mapped_error(client: cohort.Client) -> None:
    with pytest.raises(cohort.InvalidArgument,
                       match="^INVALID_ARGUMENT: subscriber: empty"):
        next(client.listen(""))


def test_stats(client: cohort.Client, subscriber: str) -> None:
    before = client.stats()
    assert before.mode == "staged" and before.partitions == 2
    client.subscribe(subscriber, F("py_s") == 1)
    client.publish([{"py_s": 1}] * 3)
    after = client.stats()
    assert after.subscriptions == before.subscriptions + 1
    assert after.events_published == before.events_published + 3
    assert after.uptime_us > before.uptime_us
    assert {s.stage for s in after.stages} >= {"partition"}


def test_listen_deadline(client: cohort.Client) -> None:
    started = time.monotonic()
    with pytest.raises(cohort.DeadlineExceeded) as e:
        next(client.listen("py-nobody", timeout=0.3))
    assert e.value.code == grpc.StatusCode.DEADLINE_EXCEEDED
    assert 0.25 < time.monotonic() - started < 5
    with pytest.raises(ValueError):
        client.stats(timeout=0)


# publish_stream


def test_publish_stream_results_in_order(client: cohort.Client,
                                         subscriber: str) -> None:
    [sid] = client.subscribe(subscriber, F("py_ps") < 100)
    events: Iterator[cohort.StreamItem] = ({
        "py_ps": i,
        "py_tag": "stream"
    } for i in range(1000))
    results = list(
        client.publish_stream(events, batch=64, window=4, return_ids=True))
    assert len(results) == 1000
    assert [sid in r.subscription_ids for r in results
           ] == [i < 100 for i in range(1000)]


def test_publish_stream_prebuilt_requests_and_events(client: cohort.Client,
                                                     subscriber: str) -> None:
    [sid] = client.subscribe(subscriber, F("py_pre") == 1)
    request = pb.PublishRequest(events=[
        pb.Event(attributes=[pb.Attribute(name="py_pre", value=v)])
        for v in (1, 2, 1)
    ],
                                return_ids=True)
    items: List[cohort.StreamItem] = [
        request, {
            "py_pre": 1
        },
        pb.Event(attributes=[pb.Attribute(name="py_pre", value=1)]), request
    ]
    results = list(client.publish_stream(items, batch=2, return_ids=True))
    assert [sid in r.subscription_ids for r in results
           ] == [True, False, True, True, True, True, False, True]


def test_publish_stream_keeps_a_bounded_window(client: cohort.Client) -> None:
    consumed = [0]
    lock = threading.Lock()

    def items() -> Iterator[cohort.StreamItem]:
        for i in range(400):
            with lock:
                consumed[0] += 1
            yield {"py_w": i}

    window = 3
    for answered, _ in enumerate(client.publish_stream(items(),
                                                       batch=1,
                                                       window=window),
                                 start=1):
        with lock:
            # One request per item, and at most `window` of them unanswered.
            assert consumed[0] <= answered + window
        if answered < 50:
            time.sleep(0.001)  # a slow reader: the sender must wait for it
    assert consumed[0] == 400


def test_publish_stream_invalid_request_ends_the_stream(
        client: cohort.Client) -> None:
    good = [{"py_bad": i} for i in range(10)]
    results: List[pb.EventResult] = []
    with pytest.raises(cohort.InvalidArgument) as e:
        for r in client.publish_stream(good + [{
                "bad name": 1
        }] + good,
                                       batch=5,
                                       window=1):
            results.append(r)
    assert len(
        results) == 10  # the two requests before the bad one were answered
    assert "attributes[0].name" in e.value.details


def test_publish_stream_bad_item_raises_in_the_caller(
        client: cohort.Client) -> None:
    with pytest.raises(TypeError, match="complex"):
        list(client.publish_stream([{"py_x": 1}, {"py_x": 1j}], batch=1))
    with pytest.raises(TypeError, match="PublishRequests"):
        list(client.publish_stream([42], batch=1))  # type: ignore[list-item]
    with pytest.raises(ValueError):
        client.publish_stream([], window=0)
