"""Wildcards (OP_WILDCARD with several stars, OP_NOT_WILDCARD): the pattern
rules, the builders, the reference matcher, and a real cohortd against it.

A pattern: '*' any run of bytes (the empty one too), backslash-star a star,
two backslashes a backslash, every other byte itself; at most 8 stars, no
two in a row (Event Ruler refuses "**"), no other backslash. NOT_WILDCARD
holds for a string the pattern does not match, never for an event lacking
the attribute or carrying another type.
"""

from __future__ import annotations

import itertools
import random
import re
from typing import Dict, List

import pytest

import cohort
from cohort import F, Filter, matches
from cohort._filters import MAX_WILDCARD_STARS, wildcard_parts
from cohort.matching import glob
from cohort.v1 import pubsub_pb2 as pb

# Patterns the server takes, and the byte strings they are tried on.
PATTERNS = [
    "", "*", "a", "a*", "*a", "a*a", "a*ab", "*ab*", "ab*ab", "*a*b*",
    "a*b*c", "*a*b*c*", "a*b*a*b", "*ab*ab*", "\\*", "a\\*b", "\\**",
    "*\\*", "a\\\\b", "a\\\\*", "\\\\\\*", "*é*", "caf*", "*.png",
    "*a*a*a*a*a*a*a*", "a*a*a*a*a*a*a*a*a",
]
VALUES = [
    b"", b"a", b"b", b"aa", b"ab", b"ba", b"aab", b"abab", b"aba", b"abc",
    b"axbyc", b"cba", b"a*b", b"axb", b"*", b"**", b"*x", b"x*", b"a\\b",
    b"a\\xyz", b"\\*", "café".encode(), "été".encode(), b"caf\xff",
    b"img.png", b"aaaaaaa", b"aaaaaaaa", b"aaaaaaaaa", b"abababab",
]
# Refused by the builder (ValueError) and by the server (InvalidArgument),
# with a word of the message.
INVALID = [
    ("a**b", "two stars in a row"),
    ("**", "two stars in a row"),
    ("*a*b**", "two stars in a row"),
    ("*1*2*3*4*5*6*7*8*", "more than 8 stars"),
    ("a\\b", "must be followed by"),
    ("a\\", "must be followed by"),
    ("\\", "must be followed by"),
    ("\\\\\\", "must be followed by"),
    ("a\\n", "must be followed by"),
]


def as_regex(pattern: bytes) -> "re.Pattern[bytes]":
    """The pattern as a regular expression over bytes, a second reference:
    its parts escaped, '.*' for each star."""
    return re.compile(b".*".join(re.escape(p) for p in wildcard_parts(pattern)),
                      re.DOTALL)


# -- the pattern rules -------------------------------------------------------


@pytest.mark.parametrize("pattern, parts", [
    (b"", [b""]),
    (b"ab", [b"ab"]),
    (b"*", [b"", b""]),
    (b"a*b*c", [b"a", b"b", b"c"]),
    (b"*a*", [b"", b"a", b""]),
    (b"a\\*b", [b"a*b"]),
    (b"\\**", [b"*", b""]),
    (b"*\\*", [b"", b"*"]),
    (b"a\\\\*", [b"a\\", b""]),
    (b"\\\\\\*", [b"\\*"]),
    (b"*a*a*a*a*a*a*a*", [b""] + [b"a"] * 7 + [b""]),
])
def test_wildcard_parts(pattern: bytes, parts: List[bytes]) -> None:
    assert wildcard_parts(pattern) == parts


@pytest.mark.parametrize("pattern, why", INVALID)
def test_invalid_patterns_are_value_errors(pattern: str, why: str) -> None:
    with pytest.raises(ValueError, match=re.escape(why)):
        wildcard_parts(pattern.encode())
    with pytest.raises(ValueError, match=r"^F\('x'\)\.wildcard: byte \d+ "):
        F("x").wildcard(pattern)
    with pytest.raises(ValueError, match=r"^F\('x'\)\.not_wildcard: "):
        F("x").not_wildcard(pattern.encode())


def test_refusals_name_the_byte() -> None:
    with pytest.raises(ValueError, match="^byte 2 of the pattern: two stars"):
        wildcard_parts(b"a**")
    with pytest.raises(ValueError, match="^byte 16 of the pattern: more than"):
        wildcard_parts(b"*1*2*3*4*5*6*7*8*")
    with pytest.raises(ValueError, match="^byte 1 of the pattern: '\\\\'"):
        wildcard_parts(b"a\\")


def test_eight_stars_at_most() -> None:
    assert MAX_WILDCARD_STARS == 8
    eight = "*" + "a*" * 7
    assert eight.count("*") == 8
    F("x").wildcard(eight)
    F("x").not_wildcard(eight)
    with pytest.raises(ValueError, match="more than 8 stars"):
        F("x").wildcard(eight + "a*")
    # Escaped stars are not stars.
    F("x").wildcard(eight + "\\*\\*")


# -- the builders and the text form -----------------------------------------


def test_not_wildcard_builds_and_prints() -> None:
    [p] = F("f").not_wildcard("*/bin/*.jar").predicates
    assert (p.attribute, p.op, p.string_value) == ("f", pb.OP_NOT_WILDCARD,
                                                   b"*/bin/*.jar")
    assert str(F("f").not_wildcard("*.tmp")) == 'f not wildcard "*.tmp"'
    assert str(F("f").wildcard("a*b*c")) == 'f wildcard "a*b*c"'
    # The grammar's own escapes: a backslash is written \\ in its quotes.
    assert str(F("f").wildcard("a\\*")) == 'f wildcard "a\\\\*"'
    assert str(F("f").not_wildcard(b"\xff*")) == 'f not wildcard "\\xFF*"'
    with pytest.raises(TypeError, match="a string, not a number"):
        F("f").not_wildcard(5)  # type: ignore[arg-type]
    # An empty pattern is an equality with the empty string.
    assert F("f").not_wildcard("").predicates[0].string_value == b""


# -- the reference matcher ---------------------------------------------------


@pytest.mark.parametrize("pattern, value, expected", [
    (b"", b"", True),
    (b"", b"a", False),
    (b"*", b"", True),
    (b"*", b"anything", True),
    (b"a*", b"a", True),  # a star matches the empty run
    (b"*a", b"a", True),
    (b"*a*", b"a", True),
    (b"a*a", b"a", False),  # both sides need their own bytes
    (b"a*a", b"aa", True),
    (b"a*ab", b"aab", True),  # the star's run is empty
    (b"a*ab", b"ab", False),  # "a" and "ab" would overlap
    (b"a*ab", b"abab", True),
    (b"ab*ab", b"abab", True),
    (b"ab*ab", b"aba", False),
    (b"*ab*ab*", b"abab", True),
    (b"*ab*ab*", b"aabb", False),
    (b"*aa*aa*", b"aaa", False),  # middles do not share bytes
    (b"*aa*aa*", b"aaaa", True),
    (b"a*b*c", b"abc", True),
    (b"a*b*c", b"axbyc", True),
    (b"a*b*c", b"acb", False),  # in order
    (b"a*b*c", b"abcb", False),  # the end is "c"
    (b"*a*b*c*", b"cba", False),
    (b"a*b*a*b", b"abab", True),
    (b"a*b*a*b", b"abb", False),
    (b"a\\*b", b"a*b", True),  # an escaped star is a star
    (b"a\\*b", b"axb", False),
    (b"\\**", b"*x", True),
    (b"\\**", b"x*", False),
    (b"*\\*", b"x*", True),
    (b"a\\\\b", b"a\\b", True),  # an escaped backslash
    (b"a\\\\*", b"a\\xyz", True),
    (b"a\\\\*", b"axyz", False),
    (b"ab", b"ab", True),  # no star: an equality
    (b"ab", b"abc", False),
    (b"ab", b"xab", False),
    ("*é".encode(), "café".encode(), True),  # UTF-8 bytes
    (b"caf*", b"caf\xff", True),  # any bytes
    (b"caf\xc3*", "café".encode(), True),  # byte by byte, not by character
    (b"*" + b"a*" * 7, b"a" * 7, True),  # 8 stars
    (b"*" + b"a*" * 7, b"a" * 6, False),
])
def test_glob(pattern: bytes, value: bytes, expected: bool) -> None:
    assert glob(pattern, value) is expected
    assert bool(as_regex(pattern).fullmatch(value)) is expected
    assert matches(F("x").wildcard(pattern), {"x": value}) is expected
    assert matches(F("x").not_wildcard(pattern), {"x": value}) is not expected


def test_str_values_compare_as_utf8() -> None:
    assert matches(F("x").wildcard("*é"), {"x": "café"})
    # é is C3 A9: a pattern may end inside a character.
    assert matches(F("x").wildcard(b"*\xa9"), {"x": "café"})
    assert not matches(F("x").not_wildcard(b"*\xa9"), {"x": "café"})
    assert matches(F("x").not_wildcard(b"*\xc3"), {"x": "café"})


def test_neither_holds_for_absent_numbers_or_literals() -> None:
    for f in (F("x").wildcard("*"), F("x").not_wildcard("a*"),
              F("x").not_wildcard("")):
        assert not matches(f, {})
        assert not matches(f, {"y": "a"})
        assert not matches(f, {"x": 5})
        assert not matches(f, {"x": 2.5})
        literal = pb.Event(attributes=[
            pb.Attribute(name="x", literal_value=pb.LITERAL_TRUE)
        ])
        assert not matches(f, literal)
    assert matches(F("x").not_wildcard(""), {"x": "a"})
    assert not matches(F("x").not_wildcard(""), {"x": ""})
    assert matches(F("x").wildcard("*"), {"x": ""})


def test_matches_refuses_a_pattern_the_server_refuses() -> None:
    p = pb.Predicate(attribute="x", op=pb.OP_NOT_WILDCARD, string_value=b"a**")
    with pytest.raises(ValueError, match="two stars in a row"):
        matches([p], {"x": "a"})


def test_glob_agrees_with_a_regex_on_random_patterns() -> None:
    rng = random.Random(20261129)
    tokens = [b"a", b"b", b"*", b"\\*", b"\\\\"]
    checked = 0
    for _ in range(3000):
        pattern = b"".join(
            rng.choice(tokens) for _ in range(rng.randrange(0, 9)))
        try:
            regex = as_regex(pattern)
        except ValueError:
            continue  # "**" or a ninth star
        value = b"".join(
            rng.choice([b"a", b"b", b"*", b"\\"])
            for _ in range(rng.randrange(0, 9)))
        assert glob(pattern, value) == bool(regex.fullmatch(value)), (pattern,
                                                                      value)
        checked += 1
    assert checked > 1500


# -- a real cohortd -----------------------------------------------------------


def check_publish(client: cohort.Client, live: Dict[int, Filter],
                  events: List[Dict[str, cohort.AttributeValue]]) -> int:
    """Publishes events; asserts that the ids are those cohort.matches
    says; returns the number of matches."""
    total = 0
    results = client.publish(events, return_ids=True)
    for event, result in zip(events, results):
        expected = sorted(
            sid for sid, f in live.items() if matches(f, event))
        got = sorted(result.subscription_ids)
        extra = [str(live[i]) for i in set(got) - set(expected)]
        missing = [str(live[i]) for i in set(expected) - set(got)]
        assert got == expected, (
            f"event {event}: extra {extra}, missing {missing}")
        total += len(expected)
    return total


def test_server_matches_like_the_reference(oc: cohort.Client,
                                           subscriber: str) -> None:
    filters: List[Filter] = []
    for pattern in PATTERNS:
        filters.append(F("w1").wildcard(pattern))
        filters.append(F("w1").not_wildcard(pattern))
    # Several on one attribute, beside other predicates, and in "or".
    filters += [
        F("w1").wildcard("a*") & F("w1").not_wildcard("*b"),
        F("w1").not_wildcard("a*") & F("w1").not_wildcard("*a"),
        F("w1").wildcard("*a*b*") | F("w2").not_wildcard("*.png"),
        (F("w2") == "img.png") & F("w1").not_wildcard("*a*a*a*a*a*a*a*"),
    ]
    ids = oc.subscribe(subscriber, *filters)
    live = dict(zip(ids, filters))
    events: List[Dict[str, cohort.AttributeValue]] = [{"w1": v} for v in VALUES]
    events += [{"w1": v, "w2": b"img.png"} for v in VALUES[::3]]
    events += [{"w1": 5}, {"w1": -1.5}, {"w2": "x"}, {"w2": 7, "w1": "ab"}]
    matched = check_publish(oc, live, events)
    assert matched > 300  # not vacuous
    # The same filters again as CLI text, parsed by the server: every
    # match twice.
    texts = oc.subscribe(subscriber, *[str(f) for f in filters])
    live.update(zip(texts, filters))
    assert check_publish(oc, live, events) == 2 * matched
    oc.unsubscribe(ids + texts)


def test_text_form_round_trips(client: cohort.Client) -> None:
    f = (F("f").wildcard("*a*b\\*c*") & F("f").not_wildcard("*/bin/*.jar") &
         F("g").not_wildcard(b"\xff\\\\*") & F("h").not_wildcard(""))
    assert client.parse_filter(str(f)) == f
    assert client.parse_filter('f not wildcard "a*b*c"') == F(
        "f").not_wildcard("a*b*c")


def test_patterns_lower_to_not_wildcard(client: cohort.Client) -> None:
    assert client.parse_filter(
        {"f": [{"anything-but": {"wildcard": "*/bin/*.jar"}}]}) == F(
            "f").not_wildcard("*/bin/*.jar")
    # A list: none of the patterns matches, a predicate each.
    assert client.parse_filter(
        {"d": {"f": [{"anything-but": {"wildcard": ["a*", "*b"]}}]}}) == (
            F("d.f").not_wildcard("a*") & F("d.f").not_wildcard("*b"))
    # Several stars pass through as written.
    assert client.parse_filter({"f": [{"wildcard": "a*b*c"}]}) == F(
        "f").wildcard("a*b*c")


def test_pattern_list_subscribes_and_matches(oc: cohort.Client,
                                             subscriber: str) -> None:
    [sid] = oc.subscribe(subscriber,
                         {"w3": [{"anything-but": {"wildcard": ["a*", "*b"]}}]})
    [r1, r2, r3, r4] = oc.publish(
        [{"w3": "xay"}, {"w3": "ax"}, {"w3": "xb"}, {"w3": 1}], return_ids=True)
    assert list(r1.subscription_ids) == [sid]
    assert [list(r.subscription_ids) for r in (r2, r3, r4)] == [[], [], []]
    oc.unsubscribe([sid])


@pytest.mark.parametrize("op", [pb.OP_WILDCARD, pb.OP_NOT_WILDCARD])
@pytest.mark.parametrize("pattern, why", INVALID)
def test_server_refuses_what_the_builder_refuses(oc: cohort.Client,
                                                 subscriber: str,
                                                 op: pb.Op.ValueType,
                                                 pattern: str,
                                                 why: str) -> None:
    p = pb.Predicate(attribute="w4", op=op, string_value=pattern.encode())
    with pytest.raises(cohort.InvalidArgument) as e:
        oc.subscribe(subscriber, [p])
    assert why in str(e.value)


def test_server_takes_the_edge_patterns(oc: cohort.Client,
                                        subscriber: str) -> None:
    edges = ["*" + "a*" * 7, "\\**", "*\\*", "\\\\\\*", "", "*"]
    filters: List[Filter] = []
    for pattern in edges:
        filters += [F("w5").wildcard(pattern), F("w5").not_wildcard(pattern)]
    ids = oc.subscribe(subscriber, *filters)
    assert len(ids) == 2 * len(edges)
    oc.unsubscribe(ids)


def test_every_pattern_pair_agrees(oc: cohort.Client, subscriber: str) -> None:
    """Two wildcards on one attribute, every pair of a few patterns."""
    few = ["a*", "*b", "a*b", "*ab*", "b*a*b"]
    filters = [
        F("w6").wildcard(x) & F("w6").not_wildcard(y)
        for x, y in itertools.product(few, few)
    ]
    ids = oc.subscribe(subscriber, *filters)
    events: List[Dict[str, cohort.AttributeValue]] = [{"w6": v}
                                                      for v in VALUES]
    assert check_publish(oc, dict(zip(ids, filters)), events) > 20
    oc.unsubscribe(ids)
