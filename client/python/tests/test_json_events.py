"""JSON events (issue 44): nested mappings are sent as Event.json.

The server names the document's values by path ("detail.price"), and an
array gives its path several values, matched element by element: an array
of objects keeps each element's fields together, as Event Ruler does.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List

import pytest

import cohort
from cohort import F
from cohort.v1 import pubsub_pb2 as pb


def test_a_nested_mapping_becomes_a_json_event() -> None:
    request = cohort._convert.publish_request(
        [{"detail": {"price": 19.99, "tags": ["a", "b"]}}, {"x": 1}], None,
        False)
    assert request.events[0].json == (
        b'{"detail":{"price":19.99,"tags":["a","b"]}}')
    assert not request.events[0].attributes
    assert request.events[1].attributes[0].value == 1  # flat: attributes
    assert not request.events[1].json
    flagged = cohort._convert.to_event({"a": 1, "ok": True}, b"p")
    assert flagged.json == b'{"a":1,"ok":true}' and flagged.payload == b"p"
    with pytest.raises(ValueError, match="not a JSON document"):
        cohort._convert.to_event({"a": [math.nan]})
    with pytest.raises(ValueError, match="the server matches"):
        cohort.matches(F("a") == 1, {"a": [1]})


def test_the_server_matches_arrays_element_by_element(
        client: cohort.Client, subscriber: str) -> None:
    ids = client.subscribe(
        subscriber,
        {"detail": {"items": {"sku": ["x1"], "qty": [{"numeric": [">", 2]}]}}},
        {"detail": {"tags": [{"anything-but": "a"}]}},
        F("detail.price") <= 20,
        {"detail": {"coupon": [{"exists": False}]}})
    events: List[Dict[str, Any]] = [
        # x1 and qty > 2 only in different elements; tags holds "b".
        {"detail": {"items": [{"sku": "x1", "qty": 1}, {"sku": "y", "qty": 5}],
                    "tags": ["a", "b"], "price": 19.99, "coupon": None}},
        # One element has both; tags only "a"; no coupon anywhere.
        {"detail": {"items": [{"sku": "x1", "qty": 2.5}], "tags": ["a"],
                    "price": [25, 20]}},
        # An empty array is no value.
        {"detail": {"coupon": [], "tags": []}},
    ]
    results = client.publish(events, return_ids=True)
    got = [[i for i in r.subscription_ids if i in ids] for r in results]
    assert got == [[ids[1], ids[2]], [ids[0], ids[2], ids[3]], [ids[3]]]
    assert [r.match_count for r in client.publish(events)] == [2, 3, 1]
    client.unsubscribe(ids)


def test_the_server_refuses_a_bad_document_naming_the_place(
        client: cohort.Client) -> None:
    event = pb.Event(json=b'{"detail": {"price": 1e30}}')
    with pytest.raises(cohort.InvalidArgument) as e:
        client.publish(event)
    assert e.value.details.startswith(
        "events[0].json: at detail.price: 1e+30 is beyond the int64 range")
    with pytest.raises(cohort.InvalidArgument) as e:
        client.publish(pb.Event(json=b'{"a": 1, "a": 2}'))
    assert e.value.details == (
        "events[0].json: at a: the key is in its object twice")


def test_literals_are_values_of_their_own(client: cohort.Client,
                                          subscriber: str) -> None:
    filters = [F("ok") == True, F("ok") != True, F("ok") == None,  # noqa: E711,E712
               F("ok") == "true", F("ok").exists()]
    assert str(filters[0] & filters[2]) == "ok = true and ok = null"
    ids = client.subscribe(subscriber, *filters,
                           {"ok": [False]}, "ok != null")
    events: List[Dict[str, Any]] = [
        {"ok": True}, {"ok": False}, {"ok": None}, {"ok": "true"},
        {"ok": [True, None]}, {"other": 1, "x": [1]}]
    got = [[ids.index(i) for i in r.subscription_ids if i in ids]
           for r in client.publish(events, return_ids=True)]
    assert got == [[0, 4, 6], [1, 4, 5, 6], [1, 2, 4], [3, 4],
                   [0, 1, 2, 4, 6], []]
    # The reference matcher reads literals in messages the same way.
    event = pb.Event()
    event.attributes.add(name="ok", literal_value=pb.LITERAL_NULL)
    assert [cohort.matches(f, event) for f in filters] == [
        False, True, True, False, True]
    client.unsubscribe(ids)
