""""or" subscriptions (SubscriptionSpec.any_of) against a real cohortd.

A subscription with "or" groups is one id: an event that matches several
of its alternatives counts it once in match_count, lists its id once and
is delivered once. The server's limits: at most --max_or_expansion
(default 150) conjunctions (RESOURCE_EXHAUSTED), each of at most
--max_predicates (32; INVALID_ARGUMENT); a group needs an alternative and
an alternative a predicate (INVALID_ARGUMENT).
"""

from __future__ import annotations

from typing import List

import pytest

import cohort
import cohort.aio
from cohort import F, Filter
from cohort.v1 import pubsub_pb2 as pb
from helpers import Server, wait_for_listeners


def result(client: cohort.Client, event: cohort.EventLike) -> pb.EventResult:
    [r] = client.publish([event], return_ids=True)
    assert r.match_count == len(r.subscription_ids)
    return r


def ids(client: cohort.Client, event: cohort.EventLike) -> List[int]:
    return list(result(client, event).subscription_ids)


def test_or_subscription_matches_each_alternative_once(
        oc: cohort.Client, subscriber: str) -> None:
    before = oc.stats().subscriptions
    f = (F("o1_a") == 1) | ((F("o1_b") == 2) & F("o1_c").exists())
    [sid] = oc.subscribe(subscriber, f)
    assert oc.stats().subscriptions == before + 1  # one subscription
    assert ids(oc, {"o1_a": 1}) == [sid]  # the first alternative
    assert ids(oc, {"o1_b": 2, "o1_c": "x"}) == [sid]  # the second
    # Both alternatives at once: counted and listed once.
    both = result(oc, {"o1_a": 1, "o1_b": 2, "o1_c": 0})
    assert both.match_count == 1 and list(both.subscription_ids) == [sid]
    # Without return_ids, the count alone.
    [count] = oc.publish({"o1_a": 1, "o1_b": 2, "o1_c": 0})
    assert count.match_count == 1
    # None of them.
    for miss in ({"o1_a": 2}, {"o1_b": 2}, {"o1_c": 1}, {"other": 1}):
        assert ids(oc, miss) == [], miss
    # Beside a plain subscription that matches too: two, each once.
    [plain] = oc.subscribe(subscriber, F("o1_a") == 1)
    both = result(oc, {"o1_a": 1, "o1_b": 2, "o1_c": 0})
    assert both.match_count == 2
    assert list(both.subscription_ids) == sorted([sid, plain])
    # Unsubscribing the id removes every alternative.
    oc.unsubscribe([sid])
    assert oc.stats().subscriptions == before + 1
    assert ids(oc, {"o1_a": 1, "o1_b": 2, "o1_c": 0}) == [plain]
    assert ids(oc, {"o1_b": 2, "o1_c": 0}) == []
    with pytest.raises(cohort.NotFound):
        oc.unsubscribe([sid])
    oc.unsubscribe([plain])
    assert oc.stats().subscriptions == before


def test_predicates_and_several_groups(oc: cohort.Client,
                                       subscriber: str) -> None:
    f = (F("o2_k") == 7) & ((F("o2_a") == 1) | (F("o2_b") == 2)) & (
        F("o2_c").prefix("x") | (F("o2_d") < 0))
    assert f.expansion == 4
    [sid] = oc.subscribe(subscriber, f)
    # Every one of the four conjunctions holds: still one match.
    every = {"o2_k": 7, "o2_a": 1, "o2_b": 2, "o2_c": "xy", "o2_d": -1}
    r = result(oc, every)
    assert (r.match_count, list(r.subscription_ids)) == (1, [sid])
    assert ids(oc, {"o2_k": 7, "o2_b": 2, "o2_d": -5}) == [sid]
    assert ids(oc, {"o2_k": 7, "o2_a": 1, "o2_c": "x"}) == [sid]
    assert ids(oc, {"o2_k": 8, "o2_a": 1, "o2_c": "x"}) == []  # predicate
    assert ids(oc, {"o2_k": 7, "o2_a": 1}) == []  # no alternative of one
    assert ids(oc, {"o2_k": 7, "o2_c": "x", "o2_d": -1}) == []
    # The reference matcher agrees.
    for event in ({"o2_k": 7, "o2_b": 2, "o2_d": -5}, {"o2_k": 7, "o2_a": 1}):
        assert cohort.matches(f, event) == (sid in ids(oc, event))
    oc.unsubscribe([sid])


def test_a_listener_gets_one_delivery(oc: cohort.Client,
                                      subscriber: str) -> None:
    [sid] = oc.subscribe(subscriber,
                         (F("o3_a") == 1) | (F("o3_b") == 2) | F("o3_c").exists())
    wait_for_listeners(oc, 0)
    with oc.listen(subscriber) as stream:
        wait_for_listeners(oc, 1)
        # Matches all three alternatives, then one, then none.
        oc.publish({"o3_a": 1, "o3_b": 2, "o3_c": 3}, payload=b"all")
        oc.publish({"o3_b": 2}, payload=b"one")
        oc.publish({"o3_b": 3}, payload=b"none")
        oc.publish({"o3_a": 1}, payload=b"last")
        got = [next(stream) for _ in range(3)]
        assert [(d.payload, d.subscription_ids, d.sequence, d.gap)
                for d in got] == [(b"all", [sid], 1, 0), (b"one", [sid], 2, 0),
                                  (b"last", [sid], 3, 0)]
    wait_for_listeners(oc, 0)
    oc.unsubscribe([sid])


def test_text_or_filters(oc: cohort.Client, subscriber: str) -> None:
    f = oc.parse_filter("o4_a = 1 or o4_b = 2 and o4_c = 3")
    assert f == (F("o4_a") == 1) | ((F("o4_b") == 2) & (F("o4_c") == 3))
    g = oc.parse_filter("o4_k = 1 and (o4_a = 1 or o4_b = 2)")
    assert g == (F("o4_k") == 1) & ((F("o4_a") == 1) | (F("o4_b") == 2))
    # Groups inside a group are distributed in the order written.
    assert oc.parse_filter("(o4_a = 1 or o4_b = 2) and o4_c = 3 or o4_d = 4") == (
        ((F("o4_a") == 1) | (F("o4_b") == 2)) & (F("o4_c") == 3) |
        (F("o4_d") == 4))
    # The printed form reads back.
    h = ((F("o4_a") == 1) | (F("o4_b") == 2)) & (F("o4_c").exists() |
                                                 (F("o4_d") != "x")) & (
                                                     F("o4_k") == 1)
    assert oc.parse_filter(str(h)) == h
    # Text with "or" subscribes as one subscription.
    [sid] = oc.subscribe(subscriber, "o4_a = 1 or o4_b = 2")
    r = result(oc, {"o4_a": 1, "o4_b": 2})
    assert (r.match_count, list(r.subscription_ids)) == (1, [sid])
    assert ids(oc, {"o4_b": 2}) == [sid]
    assert ids(oc, {"o4_b": 3}) == []
    # So does a parsed Filter.
    [pid] = oc.subscribe(subscriber, g)
    assert ids(oc, {"o4_k": 1, "o4_b": 2}) == [sid, pid]
    assert ids(oc, {"o4_k": 2, "o4_b": 2}) == [sid]
    oc.unsubscribe([sid, pid])


def test_pattern_or_gives_a_group(oc: cohort.Client, subscriber: str) -> None:
    rule = {"$or": [{"o5_a": [1]}, {"o5_b": [2]}]}
    assert oc.parse_filter(rule) == (F("o5_a") == 1) | (F("o5_b") == 2)
    [sid] = oc.subscribe(subscriber, rule)
    assert ids(oc, {"o5_b": 2}) == [sid]
    r = result(oc, {"o5_a": 1, "o5_b": 2})
    assert (r.match_count, list(r.subscription_ids)) == (1, [sid])
    oc.unsubscribe([sid])


def numbered(name: str, count: int) -> Filter:
    """name = 0 | name = 1 | ... (count alternatives)."""
    f = F(name) == 0
    for i in range(1, count):
        f = f | (F(name) == i)
    return f


def test_expansion_limit(oc: cohort.Client, subscriber: str) -> None:
    before = oc.stats().subscriptions
    # 150 conjunctions (10 x 15): the default --max_or_expansion, accepted.
    [sid] = oc.subscribe(subscriber, numbered("o6_a", 10) & numbered("o6_b", 15))
    assert ids(oc, {"o6_a": 9, "o6_b": 14}) == [sid]
    oc.unsubscribe([sid])
    # 151 alternatives in one group; 2**8 = 256 from eight groups.
    eight = numbered("o6_0", 2)
    for i in range(1, 8):
        eight = eight & numbered(f"o6_{i}", 2)
    assert eight.expansion == 256
    for f in (numbered("o6_a", 151), eight):
        with pytest.raises(cohort.ResourceExhausted) as e:
            oc.subscribe(subscriber, F("o6_ok") == 1, f)
        assert e.value.details.startswith("subscriptions[1].any_of"), (
            e.value.details)
        assert str(f.expansion) in e.value.details
        assert "--max_or_expansion" in e.value.details
    assert oc.stats().subscriptions == before  # all or nothing


def conjunction(prefix: str, count: int) -> Filter:
    """prefix0 = 0 & prefix1 = 1 & ... (count predicates)."""
    f = F(f"{prefix}0") == 0
    for i in range(1, count):
        f = f & (F(f"{prefix}{i}") == i)
    return f


def test_predicates_limit_counts_each_conjunction(oc: cohort.Client,
                                                  subscriber: str) -> None:
    common = conjunction("o7_p", 20)
    # 20 + 12 = 32 predicates in the largest conjunction: accepted.
    fits = common & (conjunction("o7_q", 12) | (F("o7_r") == 1))
    assert max(len(c) for c in fits.conjunctions()) == 32
    [sid] = oc.subscribe(subscriber, fits)
    event = {f"o7_p{i}": i for i in range(20)}
    assert ids(oc, {**event, "o7_r": 1}) == [sid]
    oc.unsubscribe([sid])
    # 20 + 13 = 33: refused.
    over = common & (conjunction("o7_q", 13) | (F("o7_r") == 1))
    with pytest.raises(cohort.InvalidArgument) as e:
        oc.subscribe(subscriber, over)
    assert e.value.details.startswith("subscriptions[0].any_of"), (
        e.value.details)
    assert "--max_predicates" in e.value.details, e.value.details


def test_empty_alternative_and_group_are_invalid(oc: cohort.Client,
                                                 subscriber: str) -> None:
    a = pb.Predicate(attribute="o8_a", op=pb.OP_EQ, value=1)
    b = pb.Predicate(attribute="o8_b", op=pb.OP_EQ, value=2)
    before = oc.stats().subscriptions
    empty_alternative = pb.SubscriptionSpec(
        subscriber=subscriber,
        predicates=[a],
        any_of=[
            pb.AnyOf(alternatives=[
                pb.Conjunction(predicates=[b]),
                pb.Conjunction()
            ])
        ])
    with pytest.raises(cohort.InvalidArgument) as e:
        oc.subscribe_specs([empty_alternative])
    assert "subscriptions[0].any_of[0]" in e.value.details, e.value.details
    empty_group = pb.SubscriptionSpec(subscriber=subscriber,
                                      predicates=[a],
                                      any_of=[pb.AnyOf()])
    with pytest.raises(cohort.InvalidArgument) as e:
        oc.subscribe_specs([empty_group])
    assert "subscriptions[0].any_of[0]" in e.value.details, e.value.details
    # No predicates and no groups: still refused.
    with pytest.raises(cohort.InvalidArgument):
        oc.subscribe_specs([pb.SubscriptionSpec(subscriber=subscriber)])
    assert oc.stats().subscriptions == before
    # A spec of groups alone is fine, as a prebuilt spec too.
    spec = ((F("o8_a") == 1) | (F("o8_b") == 2)).to_spec(subscriber)
    assert not spec.predicates
    [sid] = oc.subscribe_specs([spec])
    assert ids(oc, {"o8_b": 2}) == [sid]
    oc.unsubscribe([sid])


@pytest.mark.asyncio
async def test_aio_or_subscription(own: Server, subscriber: str) -> None:
    async with cohort.aio.Client(own.target) as c:
        f = await c.parse_filter("o9_a = 1 or o9_b = 2")
        assert f == (F("o9_a") == 1) | (F("o9_b") == 2)
        [sid, tid] = await c.subscribe(subscriber, f,
                                       (F("o9_c") == 3) | (F("o9_a") == 1))
        [r] = await c.publish({"o9_a": 1, "o9_b": 2, "o9_c": 3},
                              return_ids=True)
        assert (r.match_count, list(r.subscription_ids)) == (2, [sid, tid])
        await c.unsubscribe([sid, tid])
