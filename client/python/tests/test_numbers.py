"""Numbers with fractions (issue 44): floats as values and operands.

int64 and double compare as numbers, exactly, in the server and in the
reference matcher (cohort.matches), through the builders, the grammar and
patterns alike.
"""

from __future__ import annotations

import math
from typing import Dict, List

import pytest

import cohort
from cohort import F, matches
from cohort.v1 import pubsub_pb2 as pb


def test_builders_send_doubles_and_integral_floats_as_ints() -> None:
    [p] = (F("price") <= 19.99).predicates
    assert p.WhichOneof("operand") == "double_value"
    assert p.double_value == 19.99
    [q] = (F("x") == 3.0).predicates
    assert q.WhichOneof("operand") == "value" and q.value == 3
    [b] = F("p").between(0.5, 20).predicates
    assert (b.double_value, b.WhichOneof("upper_operand"), b.upper) == (
        0.5, "upper", 20)
    [s] = F("p").isin([1, 2.5]).predicates
    assert list(s.double_values.values) == [1.0, 2.5]
    [t] = F("p").not_in([1, 2.0]).predicates
    assert list(t.int64_values.values) == [1, 2]
    assert str((F("p") < 0.0001) & (F("q") >= -1e-7) &
               F("r").between(2, 2.5)) == (
                   "p < 1e-04 and q >= -1e-07 and r between 2 and 2.5")


@pytest.mark.parametrize("bad, error", [
    (math.nan, "nan is not a number"),
    (math.inf, "beyond the int64 range"),
    (2.0**63, "beyond the int64 range"),
])
def test_builders_refuse_what_does_not_compare(bad: float, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        F("p") < bad
    with pytest.raises(ValueError, match=error):
        cohort.matches(F("p") == 1, {"p": bad})


def test_a_fraction_and_a_large_integer_do_not_share_a_list() -> None:
    with pytest.raises(ValueError, match="cannot share a list"):
        F("p").isin([0.5, 2**53])
    F("p").isin([0.5, 2**53 - 1])  # exact as a double
    with pytest.raises(TypeError, match="one type"):
        F("p").between(0.5, "a")


def test_the_reference_compares_exactly() -> None:
    assert matches(F("price") <= 20, {"price": 19.99})
    assert matches(F("price") <= 20, {"price": 20})
    assert not matches(F("price") < 20, {"price": 20.0})
    assert matches(F("x") == 3, {"x": 3.0})
    assert not matches(F("n") == 2**53, {"n": 2**53 + 1})
    assert matches(F("n") > 2**53, {"n": 2**53 + 1})
    assert not matches(F("p") == 19.99, {"p": "19.99"})  # a string


def test_the_server_compares_like_the_reference(client: cohort.Client,
                                                subscriber: str) -> None:
    filters = [
        F("price") <= 20, F("price") < 20, F("price") > 19, F("price") >= 19.99,
        F("price") == 19.99, F("price") != 19.99, F("price").isin([19.99, 7]),
        F("price").not_in([20, 0.5]), F("price").between(19.5, 19.995),
        F("price").between(19, 19.99),
        F("n") == 2**53, F("n") > 2**53, F("n") < -0.5, F("n") >= -2.0**63
    ]
    ids = client.subscribe(subscriber, *filters)
    events: List[Dict[str, cohort.Value]] = [
        {"price": 19.99}, {"price": 20}, {"price": 20.0}, {"price": 19.995},
        {"price": 19}, {"price": 7.0}, {"price": 0.5}, {"price": -0.0},
        {"price": "19.99"}, {"n": 2**53 + 1}, {"n": 2**53}, {"n": 9.5e15},
        {"n": -0.75}, {"n": -2**63}, {"n": -2.0**63}, {"n": 5e-324}
    ]
    results = client.publish(events, return_ids=True)
    for event, result in zip(events, results):
        want = [i for i, f in zip(ids, filters) if matches(f, event)]
        got = [i for i in result.subscription_ids if i in ids]
        assert got == want, event
    client.unsubscribe(ids)


def test_grammar_and_patterns_read_fractions(client: cohort.Client) -> None:
    assert client.parse_filter("price <= 19.99 and n in [1, 2.5]") == (
        (F("price") <= 19.99) & F("n").isin([1, 2.5]))
    assert client.parse_filter({"price": [{
        "numeric": [">", 0, "<=", 9.5]
    }]}) == ((F("price") > 0) & (F("price") <= 9.5))
    with pytest.raises(cohort.InvalidArgument) as e:
        client.parse_filter("n in [0.5, 9007199254740992]")
    assert "cannot share a list with a number with a fraction" in (
        e.value.details)


def test_the_server_refuses_doubles_it_cannot_compare(
        client: cohort.Client) -> None:
    event = pb.Event()
    event.attributes.add(name="p", double_value=math.inf)
    with pytest.raises(cohort.InvalidArgument) as e:
        client.publish(event)
    assert e.value.details == (
        "events[0].attributes[0].double_value: inf is beyond the int64 range "
        "numbers compare in (-2^63 to 2^63, 2^63 excluded)")
