"""Randomized differential check: cohortd's matches against cohort.matches.

Property: for random subscriptions (every operator, wildcards of up to 8
stars and not_wildcard among them, prefix and suffix ignoring case, int
and string operands, attributes sent with either type; one in three with "or"
groups) and random events, the ids Publish returns are exactly those of
the live subscriptions whose filters the brute-force reference matcher
says hold, each once, before and after unsubscribing a random part of
them.
"""

from __future__ import annotations

import random
from typing import Dict, Iterator, List

import pytest

import cohort
from cohort import F, Filter
from helpers import Server

INT_ATTRIBUTES = ["i0", "i1", "i2"]
STRING_ATTRIBUTES = ["s0", "s1"]
MIXED = "m"  # sent as an int64 by some events, as a string by others
STRINGS = [
    b"", b"a", b"ab", b"abc", b"b", b"ba", b"\xff", b"\x00", b"a\xff",
    "é".encode(), b"z", b"A", b"aB", "É".encode(), "\u212a".encode(),
    b"10.1.2.3", b"10.200.0.1", b"2001:db8::1", b"2001:db9::8000:0:0:1",
    b"::ffff:10.1.2.3", b"010.1.2.3", b"fe80::1%eth0", b"aab", b"abab",
    b"a*b", b"a\\b"
]
# Wildcard patterns (of wildcard and not_wildcard): one star, several
# (up to the 8 allowed), overlapping parts, escapes, none (an equality).
PATTERNS = [
    "*", "a*", "*b", "a*b", "a*a", "ab", "\\*", "*\xff", "b\\**", "*.1",
    "10.*", "a*ab", "*a*b*", "a*b*b", "*ab*ab*", "a*\\**", "*\\\\*",
    "1*.*.*", "*:*:*", "*a*a*a*a*a*a*a*", "", "*é*"
]
NETWORKS = [
    "10.0.0.0/8", "10.1.0.0/16", "0.0.0.0/0", "10.1.2.3", "::/0",
    "2001:db8::/32", "2001:db8::8000:0:0:0/65", "2001:db9::/64"
]


@pytest.fixture()
def fresh_server() -> Iterator[Server]:
    """A server of our own: every live subscription is one this test made."""
    s = Server("--partitions=2")
    yield s
    s.stop()


# Numbers with fractions between the integers, and integral floats.
FLOATS = [-2.5, -0.5, 0.25, 0.5, 1.5, 3.0, -0.0, 4.75]


def random_number(rng: random.Random, span: int) -> cohort.Value:
    return rng.choice(FLOATS) if rng.random() < 0.25 else rng.randint(
        -span, span)


def random_operand(rng: random.Random, strings: bool) -> cohort.Value:
    return rng.choice(STRINGS) if strings else random_number(rng, 6)


def random_predicate(rng: random.Random) -> Filter:
    name = rng.choice(INT_ATTRIBUTES + STRING_ATTRIBUTES + [MIXED])
    strings = (name in STRING_ATTRIBUTES or
               (name == MIXED and rng.random() < 0.5) or rng.random() < 0.1)
    a = F(name)
    kind = rng.randrange(23)
    v = random_operand(rng, strings)
    if kind < 6:
        return [a.__eq__, a.__ne__, a.__lt__, a.__le__, a.__gt__,
                a.__ge__][kind](v)
    if kind == 6:
        w = random_operand(rng, strings)
        lo, hi = (v, w) if v <= w else (w, v)  # type: ignore[operator]
        return a.between(lo, hi)
    if kind in (7, 8):
        values = [
            random_operand(rng, strings) for _ in range(rng.randint(1, 4))
        ]
        return a.isin(values) if kind == 7 else a.not_in(values)
    if kind == 9:
        return a.prefix(rng.choice(STRINGS[:6]))
    if kind == 12:
        return a.suffix(rng.choice(STRINGS))
    if kind == 13:
        return a.equals_ignore_case(rng.choice(STRINGS))
    if kind == 16:
        return a.cidr(rng.choice(NETWORKS))
    if kind == 17:
        return a.wildcard(rng.choice(PATTERNS))
    if kind == 20:
        return a.not_wildcard(rng.choice(PATTERNS))
    if kind == 21:
        return a.prefix_ignore_case(rng.choice(STRINGS))
    if kind == 22:
        return a.suffix_ignore_case(rng.choice(STRINGS))
    if kind in (18, 19):
        folded = [rng.choice(STRINGS) for _ in range(rng.randint(1, 3))]
        return (a.equals_ignore_case(folded)
                if kind == 18 else a.not_equals_ignore_case(folded))
    if kind in (14, 15):
        excluded = rng.choice(STRINGS[1:])  # not the empty string
        return a.not_prefix(excluded) if kind == 14 else a.not_suffix(excluded)
    return a.exists() if kind == 10 else a.not_exists()


def random_conjunction(rng: random.Random, most: int) -> Filter:
    """1 to `most` random predicates."""
    f = random_predicate(rng)
    for _ in range(rng.randrange(most)):
        f = f & random_predicate(rng)
    return f


def random_filter(rng: random.Random) -> Filter:
    """A conjunction of 1 to 3 predicates, or (one time in three) an "or":
    a group of 2 to 4 conjunctions, sometimes beside predicates, a group
    inside an alternative (distributed by |) or a second group."""
    if rng.random() < 2 / 3:
        return random_conjunction(rng, 3)
    f = random_conjunction(rng, 2)
    if rng.random() < 0.2:
        f = f & (random_predicate(rng) | random_predicate(rng))
    for _ in range(rng.randint(1, 3)):
        f = f | random_conjunction(rng, 2)
    if rng.random() < 0.5:
        f = random_conjunction(rng, 2) & f
    if rng.random() < 0.3:
        f = f & (random_predicate(rng) | random_conjunction(rng, 2))
    return f


def random_event(rng: random.Random) -> Dict[str, cohort.AttributeValue]:
    event: Dict[str, cohort.AttributeValue] = {}
    for name in INT_ATTRIBUTES:
        if rng.random() < 0.7:
            event[name] = random_number(rng, 7)
    for name in STRING_ATTRIBUTES:
        if rng.random() < 0.7:
            event[name] = rng.choice(STRINGS)
    if rng.random() < 0.7:
        event[MIXED] = rng.choice(
            STRINGS) if rng.random() < 0.5 else rng.randint(-7, 7)
    if rng.random() < 0.7:
        event["s1"] = rng.randint(-7, 7)  # a string attribute sent as an int64
    if not event:
        event["other"] = 1
    return event


def check_against_reference(
        client: cohort.Client, live: Dict[int, Filter],
        events: List[Dict[str, cohort.AttributeValue]]) -> int:
    """Publishes events; asserts the ids; returns the number of matches."""
    total = 0
    for start in range(0, len(events), 100):
        batch = events[start:start + 100]
        results = client.publish(batch, return_ids=True)
        assert len(results) == len(batch)
        for event, result in zip(batch, results):
            expected = sorted(
                sid for sid, f in live.items() if cohort.matches(f, event))
            got = list(result.subscription_ids)
            extra = [str(live[i]) for i in set(got) - set(expected)]
            missing = [str(live[i]) for i in set(expected) - set(got)]
            assert got == expected, (
                f"event {event}: extra {extra}, missing {missing}")
            assert result.match_count == len(expected)
            total += len(expected)
    return total


def run_differential(client: cohort.Client, seed: int, text: bool) -> None:
    rng = random.Random(seed)
    filters = [random_filter(rng) for _ in range(300)]
    live: Dict[int, Filter] = {}
    for start in range(0, len(filters), 50):
        chunk = filters[start:start + 50]
        if text:  # each filter's CLI text, parsed by the server
            ids = client.subscribe("diff", str(chunk[0]),
                                   *[str(f) for f in chunk[1:]])
        else:
            ids = client.subscribe("diff", chunk[0], *chunk[1:])
        live.update(zip(ids, chunk))
    assert len(live) == len(filters)
    events = [random_event(rng) for _ in range(500)]
    matched = check_against_reference(client, live, events)
    assert matched > 500  # the workload is not vacuous
    # Some events match or-subscriptions, some of them in several
    # alternatives at once (then counted once).
    ors = {sid: f for sid, f in live.items() if f.any_of}
    assert len(ors) > 50
    several = sum(1 for e in events for f in ors.values()
                  if sum(1 for c in f.conjunctions()
                         if cohort.matches(list(c), e)) > 1)
    assert several > 20, several
    gone = rng.sample(sorted(live), len(live) // 3)
    client.unsubscribe(gone)
    for sid in gone:
        del live[sid]
    check_against_reference(client, live, events)


def test_random_subscriptions_match_like_the_reference(
        fresh_server: Server) -> None:
    with cohort.Client(fresh_server.target) as client:
        run_differential(client, seed=1, text=False)


def test_text_subscriptions_match_like_the_reference(
        fresh_server: Server) -> None:
    with cohort.Client(fresh_server.target) as client:
        run_differential(client, seed=2, text=True)
