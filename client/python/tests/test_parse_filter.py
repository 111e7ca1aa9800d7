"""parse_filter (the ParseFilter RPC): round trips and its errors."""

from __future__ import annotations

import json
import random
from typing import Dict, List, Tuple

import pytest

import cohort
from cohort import F, Filter, format_predicates
from cohort.v1 import pubsub_pb2 as pb

TEXTS = [
    "price <= 500 and kind = 7",
    'type = "order" and region in ["eu-west", "eu-north"] and '
    'path prefix "/api/" and price between 10 and 20 and not exists coupon',
    "a == 1 && b <> 2, c lt 3 AND d ge -4",
    "x in 1 .. 5 and y not in [1, 2, 2] and exists z",
    'name != "caf\\xC3\\xA9" and q < "\\"\\\\\\n\\t\\r\\0\\xff"',
    "n between -9_223_372_036_854_775_808 and 9223372036854775807",
    "and = 1 and between = 2",
]


@pytest.mark.parametrize("text", TEXTS)
def test_text_round_trips_through_the_printed_form(client: cohort.Client,
                                                   text: str) -> None:
    f = client.parse_filter(text)
    assert len(f) > 0 and not f.any_of
    assert str(f) == format_predicates(f.predicates)
    again = client.parse_filter(str(f))
    assert again == f


def test_parse_gives_the_builders_predicates(client: cohort.Client) -> None:
    f = ((F("price") <= 500) & (F("type") == "order") &
         F("region").isin(["eu", "us"]) & F("p").prefix(b"/\xff") &
         F("f").suffix(".png") & F("u").equals_ignore_case("Bob") &
         F("f").not_prefix("tmp") & F("f").not_suffix("~") &
         F("ip").cidr("10.0.0.0/8") & F("f").wildcard("img-*.png") &
         F("f").wildcard("*a*b\\**") & F("f").not_wildcard("*.tmp") &
         F("c").equals_ignore_case(["a", "B"]) &
         F("c").not_equals_ignore_case("x") &
         F("p").prefix_ignore_case("Ab") & F("f").suffix_ignore_case(".PNG") &
         F("p").prefix_ignore_case(b"\xff") & F("f").suffix_ignore_case("") &
         F("n").between(-5, 5) & F("c").not_exists() & F("k").not_in([1, 2]) &
         F("e").exists() & (F("s") > "m") & (F("t") != -1))
    assert client.parse_filter(str(f)) == f
    assert client.parse_filter("price <= 500 and kind = 7") == (
        (F("price") <= 500) & (F("kind") == 7))


def random_value(rng: random.Random, strings: bool) -> cohort.Value:
    if strings:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(6)))
    return rng.choice([0, -1, 1, rng.randrange(-(1 << 63), 1 << 63)])


def random_filter(rng: random.Random) -> Filter:
    parts = []
    for _ in range(rng.randrange(1, 5)):
        a = F(rng.choice(["a", "b_1", "c.d", "E-f", "_"]))
        strings = rng.random() < 0.5
        v = random_value(rng, strings)
        kind = rng.randrange(16)
        if kind < 6:
            parts.append(
                [a.__eq__, a.__ne__, a.__lt__, a.__le__, a.__gt__,
                 a.__ge__][kind](v))
        elif kind == 6:
            lo, hi = sorted([v, random_value(rng, strings)])
            parts.append(a.between(lo, hi))
        elif kind == 7:
            values = [
                random_value(rng, strings) for _ in range(rng.randrange(1, 5))
            ]
            parts.append(
                a.isin(values) if rng.random() < 0.5 else a.not_in(values))
        elif kind in (8, 10, 11, 12, 13, 14, 15):
            affix = bytes(
                rng.randrange(256)
                for _ in range(rng.randrange(1 if kind in (12, 13) else 0, 4)))
            build = {
                8: a.prefix,
                10: a.suffix,
                11: a.equals_ignore_case,
                12: a.not_prefix,
                13: a.not_suffix,
                14: a.prefix_ignore_case,
                15: a.suffix_ignore_case
            }
            parts.append(build[kind](affix))
        else:
            parts.append(a.exists() if rng.random() < 0.5 else a.not_exists())
    result = parts[0]
    for p in parts[1:]:
        result = result & p
    return result


def test_random_builder_filters_round_trip(client: cohort.Client) -> None:
    rng = random.Random(20261127)
    for _ in range(200):
        f = random_filter(rng)
        assert client.parse_filter(str(f)) == f, str(f)


def random_or_filter(rng: random.Random) -> Filter:
    """An "or" of 2 to 3 random filters, sometimes beside predicates or
    another group."""
    f = random_filter(rng)
    for _ in range(rng.randint(1, 2)):
        f = f | random_filter(rng)
    if rng.random() < 0.5:
        f = random_filter(rng) & f
    if rng.random() < 0.3:
        f = f & (random_filter(rng) | random_filter(rng))
    return f


def test_or_filters_round_trip(client: cohort.Client) -> None:
    a, b, c, d = (F("a") == 1), (F("b") == 2), F("c").exists(), (F("d") < 3)
    for f in (a | b, a & b | c, a | b & c, a & (b | c),
              (a | b) & (c | d), (a | b) & c | d, (F("or") == 1) |
              (F("and") == 2), F("exists").exists() | F("or").not_exists()):
        assert client.parse_filter(str(f)) == f, str(f)
    rng = random.Random(20261129)
    for _ in range(100):
        f = random_or_filter(rng)
        if f.expansion <= 150 and max(len(c) for c in f.conjunctions()) <= 32:
            assert client.parse_filter(str(f)) == f, str(f)


def test_syntax_error_is_invalid_argument_with_carets(
        client: cohort.Client) -> None:
    with pytest.raises(cohort.InvalidArgument) as e:
        client.parse_filter("price is 5")
    assert e.value.details == (
        'filter: column 7: expected an operator (=, !=, <, <=, >, >=, '
        'between, in, not in, prefix, suffix, equals-ignore-case, '
        'prefix-ignore-case, suffix-ignore-case, cidr, wildcard), got "is"\n'
        '  price is 5\n        ^^')
    with pytest.raises(cohort.InvalidArgument, match="column 9"):
        client.parse_filter("price <=")


def test_limits_are_checked_like_subscribe(client: cohort.Client) -> None:
    with pytest.raises(cohort.InvalidArgument) as e:
        client.parse_filter("x in [" + ", ".join(str(i) for i in range(65)) +
                            "]")
    assert e.value.details.startswith("predicates[0].int64_values")
    assert "--max_set_size" in e.value.details
    with pytest.raises(cohort.InvalidArgument, match="65536"):
        client.parse_filter("x = 1 and " * 6554)


def test_bad_text_in_subscribe_subscribes_nothing(client: cohort.Client,
                                                  subscriber: str) -> None:
    before = client.stats().subscriptions
    with pytest.raises(cohort.InvalidArgument,
                       match="^INVALID_ARGUMENT: filter: column"):
        client.subscribe(subscriber, "py_ok = 1", "py_bad is 2")
    assert client.stats().subscriptions == before


def test_parse_filter_needs_no_subscription(client: cohort.Client) -> None:
    before = client.stats().subscriptions
    [p] = client.parse_filter("py_nothing = 1").predicates
    assert p == pb.Predicate(attribute="py_nothing", op=pb.OP_EQ, value=1)
    assert client.stats().subscriptions == before


RULE = {
    "source": ["aws.ec2"],
    "detail": {
        "state": [{"anything-but": "initializing"}],
        "c-count": [{"numeric": [">", 0, "<=", 5]}],
        "x-limit": [{"anything-but": [100, 200]}],
        "source-ip": [{"cidr": "10.0.0.0/8"}],
        "f": [{"wildcard": "img-*.png"}],
        "u": [{"equals-ignore-case": "Bob"}],
        "gone": [{"exists": False}],
    },
}


def test_pattern_gives_the_builders_predicates(client: cohort.Client) -> None:
    expected = ((F("source") == "aws.ec2") &
                (F("detail.state") != "initializing") &
                (F("detail.c-count") > 0) & (F("detail.c-count") <= 5) &
                F("detail.x-limit").not_in([100, 200]) &
                F("detail.source-ip").cidr("10.0.0.0/8") &
                F("detail.f").wildcard("img-*.png") &
                F("detail.u").equals_ignore_case("Bob") &
                F("detail.gone").not_exists())
    assert client.parse_filter(RULE) == expected
    # The same pattern as JSON text, as pasted from an EventBridge rule.
    assert client.parse_filter(json.dumps(RULE, indent=2)) == expected


def test_pattern_prefix_and_suffix_ignore_case(client: cohort.Client,
                                               subscriber: str) -> None:
    pattern = {
        "detail": {
            "p": [{"prefix": {"equals-ignore-case": "Ab"}}],
            "s": [{"suffix": {"equals-ignore-case": ".PNG"}}],
        }
    }
    f = client.parse_filter(pattern)
    assert f == (F("detail.p").prefix_ignore_case("Ab") &
                 F("detail.s").suffix_ignore_case(".PNG"))
    assert str(f) == ('detail.p prefix-ignore-case "Ab" and '
                      'detail.s suffix-ignore-case ".PNG"')
    assert client.parse_filter(str(f)) == f
    [sid] = client.subscribe(subscriber, pattern)
    events: List[Dict[str, cohort.Value]] = [
        {"detail.p": "aBc", "detail.s": "x.png"},
        {"detail.p": "ab", "detail.s": ".Png"},
        {"detail.p": "xab", "detail.s": "x.png"},
        {"detail.p": "aBc", "detail.s": "png"},
        {"detail.p": 1, "detail.s": "x.png"},
    ]
    results = client.publish(events, return_ids=True)
    assert [sid in r.subscription_ids for r in results] == [
        True, True, False, False, False]
    for event, result in zip(events, results):
        assert cohort.matches(f, event) == (sid in result.subscription_ids)
    client.unsubscribe([sid])
    # Event Ruler takes equals-ignore-case alone inside prefix and suffix.
    with pytest.raises(cohort.InvalidArgument) as e:
        client.parse_filter({"a": [{"prefix": {"wildcard": "x*"}}]})
    assert e.value.details == (
        'filter: pattern: at a[0].prefix.wildcard: operator "wildcard" '
        'inside "prefix" is not supported (only equals-ignore-case is; '
        'Event Ruler refuses it too)')


def test_pattern_subscribes_and_matches(client: cohort.Client,
                                        subscriber: str) -> None:
    [sid] = client.subscribe(subscriber, RULE)
    event: Dict[str, cohort.Value] = {
        "source": "aws.ec2",
        "detail.state": "running",
        "detail.c-count": 5,
        "detail.x-limit": 300,
        "detail.source-ip": "10.1.2.3",
        "detail.f": "img-1.png",
        "detail.u": "BOB",
    }
    [hit] = client.publish(event, return_ids=True)
    assert sid in hit.subscription_ids
    changes: List[Tuple[str, cohort.Value]] = [
        ("detail.c-count", 6), ("detail.x-limit", 100),
        ("detail.state", "initializing"), ("detail.source-ip", "11.0.0.1"),
        ("detail.gone", 1)
    ]
    for name, value in changes:
        changed = dict(event)
        changed[name] = value
        [miss] = client.publish(changed, return_ids=True)
        assert sid not in miss.subscription_ids, name
    client.unsubscribe([sid])


def test_pattern_errors_name_the_place(client: cohort.Client,
                                       subscriber: str) -> None:
    with pytest.raises(cohort.InvalidArgument) as e:
        client.parse_filter({"detail": {"price": [1e300]}})
    assert e.value.details.startswith(
        "filter: pattern: at detail.price[0]: 1e+300 is beyond the int64 "
        "range")
    with pytest.raises(cohort.InvalidArgument, match="not valid JSON"):
        client.parse_filter('{"a": [1]')
    # A pattern within the grammar's limits still meets the server's.
    with pytest.raises(cohort.InvalidArgument) as e:
        client.parse_filter({"x": list(range(65))})
    assert e.value.details.startswith("predicates[0].int64_values")
    with pytest.raises(TypeError, match="^pattern: "):
        client.parse_filter({"x": [b"bytes"]})
    before = client.stats().subscriptions
    with pytest.raises(cohort.InvalidArgument, match="pattern: at b"):
        client.subscribe(subscriber, {"a": [1]}, {"b": []})
    assert client.stats().subscriptions == before
