""""or" in the builders (no server): | and &, the disjunctive normal form,
its cap, the text form, the messages, and the reference matcher."""

from __future__ import annotations

import random
from typing import Dict, List, Union

import pytest

import cohort
import cohort.aio
from cohort import F, Filter, format_filter, matches
from cohort._convert import to_filter
from cohort.v1 import pubsub_pb2 as pb
from helpers import FakeServer
from test_differential import random_event, random_predicate

A = F("a") == 1
B = F("b") == 2
C = F("c").exists()
D = F("d") < 3
X = F("x") == 0
Y = F("y").prefix("p")


def pred(f: Filter) -> pb.Predicate:
    [p] = f.predicates
    assert not f.any_of
    return p


a, b, c, d, x, y = (pred(f) for f in (A, B, C, D, X, Y))


def test_or_builds_one_group_of_both_sides() -> None:
    f = A | B
    assert f.predicates == ()
    assert f.any_of == (((a,), (b,)),)
    # | is associative here: a | b | c is one group of three.
    assert (A | B | C).any_of == (((a,), (b,), (c,)),)
    assert (A | (B | C)).any_of == (((a,), (b,), (c,)),)
    # A conjunction is one alternative.
    assert ((A & B) | C).any_of == (((a, b), (c,)),)
    # Predicates and sequences of them, on either side.
    assert (A | b).any_of == (a | B).any_of == (((a,), (b,)),)
    assert ([a, b] | C).any_of == (((a, b), (c,)),)
    assert (C | [a, b]).any_of == (((c,), (a, b)),)


def test_and_concatenates_predicates_and_groups() -> None:
    f = X & (A | B) & Y & (C | D)
    assert f.predicates == (x, y)
    assert f.any_of == (((a,), (b,)), ((c,), (d,)))
    assert ([x] & (A | B)).predicates == (x,)
    assert ((A | B) & x).any_of == (((a,), (b,)),)
    assert ((A | B) & x).predicates == (x,)
    # Plain conjunctions as before.
    assert (X & Y).predicates == (x, y) and (X & Y).any_of == ()


def test_or_distributes_groups_into_conjunctions() -> None:
    assert ((X & (A | B)) | C).any_of == (((x, a), (x, b), (c,)),)
    f = ((A | B) & (C | D)) | Y
    assert f.any_of == (((a, c), (a, d), (b, c), (b, d), (y,)),)
    assert (Y | ((A | B) & (C | D))).any_of == (
        ((y,), (a, c), (a, d), (b, c), (b, d)),)
    # Each conjunction in the order written, as the grammar's parser
    # distributes `(a or b) and x or y`; the spec has the predicates first.
    g = (A | B) & X
    assert g.conjunctions() == ((a, x), (b, x))
    assert (g | Y).any_of == (((a, x), (b, x), (y,)),)
    assert g.predicates == (x,) and g == X & (A | B)
    assert (X & (A | B) & Y).conjunctions() == ((x, a, y), (x, b, y))
    # A group of one alternative is spliced in where it stood.
    h = Filter([x], any_of=[[[a], [b]], [[c, d]]])
    assert h.predicates == (x, c, d)
    assert h.conjunctions() == ((x, a, c, d), (x, b, c, d))


def test_conjunctions_and_expansion() -> None:
    assert (X & Y).conjunctions() == ((x, y),)
    assert (X & Y).expansion == 1
    f = X & (A | B | C) & (D | Y)
    assert f.expansion == 6
    assert f.conjunctions() == ((x, a, d), (x, a, y), (x, b, d), (x, b, y),
                                (x, c, d), (x, c, y))


def test_one_alternative_stays_plain_predicates() -> None:
    assert Filter([], any_of=[[[a]]]) == A
    assert Filter([x], any_of=[[[a, b]]]) == X & A & B
    assert not Filter([x], any_of=[[[a, b]]]).any_of
    assert str(Filter([x], any_of=[[[a, b]]])) == "x = 0 and a = 1 and b = 2"
    # Groups of one among others: joined to the predicates, in order.
    f = Filter([x], any_of=[[[a], [b]], [[c]], [[d], [y]]])
    assert f.predicates == (x, c)
    assert f.any_of == (((a,), (b,)), ((d,), (y,)))
    # Messages too.
    group = pb.AnyOf(alternatives=[pb.Conjunction(predicates=[a, b])])
    assert Filter([], any_of=[group]) == A & B


def test_the_cap_on_alternatives() -> None:
    assert cohort.MAX_ALTERNATIVES == 1024
    many = [[pb.Predicate(attribute="n", op=pb.OP_EQ, value=i)]
            for i in range(1024)]
    full = Filter(any_of=[many])
    assert full.expansion == 1024 and len(full.conjunctions()) == 1024
    with pytest.raises(ValueError, match="1025 alternatives.*more than 1024"):
        full | A
    with pytest.raises(ValueError, match="1025 alternatives"):
        A | full
    # Distribution counts: 32 x 32 = 1024 conjunctions; one more side is
    # over.
    g32 = Filter(any_of=[many[:32]])
    h32 = Filter(any_of=[[[pb.Predicate(attribute="m", op=pb.OP_EQ,
                                        value=i)] for i in range(32)]])
    product = g32 & h32
    assert product.expansion == 1024
    assert len(product.conjunctions()) == 1024
    with pytest.raises(ValueError, match="1025 alternatives"):
        product | A
    too_many = product & (A | B)
    assert too_many.expansion == 2048  # & does not expand...
    with pytest.raises(ValueError, match="2048 conjunctions.*1024"):
        too_many.conjunctions()  # ...the normal form is capped
    with pytest.raises(ValueError, match="2049 alternatives"):
        too_many | C


def test_precedence_is_pythons() -> None:
    # & binds tighter than |, as "and" binds tighter than "or".
    assert (A & B | C) == ((A & B) | C)
    assert (A | B & C) == (A | (B & C))
    assert (A & (B | C)) != (A & B | C)
    # Comparisons bind looser than both: each needs its parentheses.
    with pytest.raises(TypeError, match="parenthesize"):
        F("a") == 1 | F("b") == 2  # noqa: B015
    with pytest.raises(TypeError, match="parenthesize"):
        F("a") | A  # noqa: B015
    with pytest.raises(TypeError, match="bare F"):
        A | F("b")  # noqa: B015
    with pytest.raises(TypeError, match="truth value"):
        A or B  # noqa: B015
    with pytest.raises(TypeError, match="truth value"):
        not (A | B)  # noqa: B015


def test_bad_operands_and_shapes() -> None:
    with pytest.raises(ValueError, match="no predicates"):
        Filter() | A
    with pytest.raises(ValueError, match="no predicates"):
        A | []
    with pytest.raises(TypeError, match="with str"):
        A | "b = 2"  # type: ignore[operator]  # noqa: B015
    with pytest.raises(TypeError, match="with int"):
        A | 5  # type: ignore[operator]  # noqa: B015
    with pytest.raises(ValueError, match=r"any_of\[0\]: a group needs"):
        Filter([a], any_of=[[]])
    with pytest.raises(ValueError,
                       match=r"any_of\[1\]\.alternatives\[1\]: an alternative"):
        Filter([a], any_of=[[[b], [c]], [[b], []]])
    with pytest.raises(ValueError, match="alternative needs"):
        Filter([a], any_of=[pb.AnyOf(alternatives=[pb.Conjunction()])])
    with pytest.raises(TypeError, match="a group is"):
        Filter([a], any_of=[a])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="an alternative is"):
        Filter([a], any_of=[[a]])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="expected cohort.v1 Predicate"):
        Filter([a], any_of=[[[a], [1]]])  # type: ignore[list-item]


def test_text_form_of_or() -> None:
    assert str(A | B) == "a = 1 or b = 2"
    assert str((A & B) | C) == "a = 1 and b = 2 or exists c"
    assert str(A | (B & C) | D) == "a = 1 or b = 2 and exists c or d < 3"
    assert str(X & (A | B)) == "x = 0 and (a = 1 or b = 2)"
    # Predicates first, then the groups in order.
    assert str((A | B) & X & (C | D) & Y) == (
        'x = 0 and y prefix "p" and (a = 1 or b = 2) and (exists c or d < 3)')
    # Without predicates, several groups are each parenthesized.
    assert str((A | B) & (C | D)) == "(a = 1 or b = 2) and (exists c or d < 3)"
    assert str((A & X | B) & Y) == ('y prefix "p" and (a = 1 and x = 0 or '
                                    'b = 2)')
    # A plain conjunction prints as before.
    assert str(X & A) == "x = 0 and a = 1" == cohort.format_predicates([x, a])
    assert repr(A | B) == "Filter('a = 1 or b = 2')"


def test_format_filter_takes_messages_as_they_are() -> None:
    f = X & (A | B)
    assert format_filter(f) == str(f) == format_filter(f.to_spec("s"))
    assert format_filter([x, a]) == "x = 0 and a = 1"
    response = pb.ParseFilterResponse(any_of=[
        pb.AnyOf(alternatives=[
            pb.Conjunction(predicates=[a]),
            pb.Conjunction(predicates=[b, c])
        ])
    ])
    assert format_filter(response) == "a = 1 or b = 2 and exists c"
    # A group of one alternative, printed as the message has it.
    one = pb.SubscriptionSpec(
        predicates=[x],
        any_of=[pb.AnyOf(alternatives=[pb.Conjunction(predicates=[a])])])
    assert format_filter(one) == "x = 0 and (a = 1)"
    assert str(Filter.from_spec(one)) == "x = 0 and a = 1"
    with pytest.raises(TypeError):
        format_filter("a = 1")  # type: ignore[arg-type]


def test_messages_both_ways() -> None:
    f = X & (A | (B & C)) & (D | Y)
    spec = f.to_spec("alice")
    assert spec.subscriber == "alice"
    assert list(spec.predicates) == [x]
    assert [[list(alt.predicates) for alt in g.alternatives]
            for g in spec.any_of] == [[[a], [b, c]], [[d], [y]]]
    assert Filter.from_spec(spec) == f
    response = pb.ParseFilterResponse(predicates=spec.predicates,
                                      any_of=spec.any_of)
    assert Filter.from_spec(response) == f
    assert Filter(spec.predicates, spec.any_of) == f
    with pytest.raises(TypeError, match="from_spec"):
        Filter.from_spec(pb.Event())  # type: ignore[arg-type]
    # The Filter keeps copies.
    conjunction = pb.Conjunction(predicates=[a])
    g = Filter([x], any_of=[[conjunction, [b]]])
    conjunction.predicates[0].value = 9
    assert g == X & (A | B)
    # The subscribe path's conversion keeps a Filter as it is.
    assert to_filter(f) is f
    assert to_filter([x, a]) == X & A
    assert to_filter(x) == X


def test_equality_len_and_hash() -> None:
    assert (A | B) == (A | B)
    assert (A | B) != (B | A)  # structural: the order counts
    assert (A | B) != (A & B)
    assert (A | B) != [a, b]
    assert len(A | B) == 2
    assert len(X & (A | (B & C))) == 4
    assert len(X & Y) == 2
    with pytest.raises(TypeError):
        hash(A | B)


Event = Dict[str, Union[int, str, bytes]]


@pytest.mark.parametrize("f, event, expected", [
    (A | B, {"a": 1}, True),
    (A | B, {"b": 2}, True),
    (A | B, {"a": 1, "b": 2}, True),
    (A | B, {"a": 2, "b": 1}, False),
    (A | B, {}, False),
    ((A & B) | C, {"a": 1}, False),
    ((A & B) | C, {"a": 1, "b": 2}, True),
    ((A & B) | C, {"c": "anything"}, True),
    (X & (A | B), {"a": 1}, False),  # the predicates must hold too
    (X & (A | B), {"x": 0, "b": 2}, True),
    ((A | B) & (C | D), {"a": 1, "d": 2}, True),
    ((A | B) & (C | D), {"a": 1, "d": 3}, False),  # no alternative of one
    ((F("a") != 1) | F("b").not_exists(), {}, True),
    ((F("a") != 1) | (F("b") != 2), {}, False),  # NE needs the attribute
    ((F("a") != 1) | (F("b") != 2), {"a": "1"}, False),  # and its type
])
def test_matches_evaluates_groups(f: Filter, event: Event,
                                  expected: bool) -> None:
    assert matches(f, event) is expected
    assert matches(f.to_spec("s"), event) is expected
    assert any(matches(list(conj), event)
               for conj in f.conjunctions()) is expected


def test_matches_takes_raw_specs_as_they_are() -> None:
    no_alternative = pb.SubscriptionSpec(predicates=[a], any_of=[pb.AnyOf()])
    assert not matches(no_alternative, {"a": 1})  # an empty "or" is false
    response = pb.ParseFilterResponse(any_of=[
        pb.AnyOf(alternatives=[
            pb.Conjunction(predicates=[a]),
            pb.Conjunction(predicates=[b])
        ])
    ])
    assert matches(response, {"b": 2})
    assert not matches(response, {"b": 3})
    with pytest.raises(ValueError, match="JSON event"):
        matches(A | B, {"a": [1]})


def test_matches_is_the_or_of_the_conjunctions() -> None:
    """On random filters with groups: matches(f) is true iff one of the
    conjunctions of f's normal form matches."""
    rng = random.Random(20261129)
    for _ in range(300):
        parts: List[Filter] = []
        for _ in range(rng.randint(1, 3)):
            side = random_predicate(rng)
            for _ in range(rng.randrange(2)):
                side = side & random_predicate(rng)
            parts.append(side)
        f = parts[0]
        for p in parts[1:]:
            f = f | p
        if rng.random() < 0.5:
            f = random_predicate(rng) & f
        if rng.random() < 0.5:
            f = f & (random_predicate(rng) | random_predicate(rng))
        for _ in range(10):
            event = random_event(rng)
            assert matches(f, event) == any(
                matches(list(conj), event) for conj in f.conjunctions()), (
                    str(f), event)


# The subscribe and parse paths of both clients, against a fake server
# that keeps what it was sent.

PARSED = pb.ParseFilterResponse(
    predicates=[x],
    any_of=[
        pb.AnyOf(alternatives=[
            pb.Conjunction(predicates=[a]),
            pb.Conjunction(predicates=[b, c])
        ])
    ])
SENT = [A | B, X & (A | (B & C)), A, X & A, (A | B) & (C | D)]


def sent(fake: FakeServer) -> List[Filter]:
    [request] = fake.subscribed
    assert {s.subscriber for s in request.subscriptions} == {"s"}
    return [Filter.from_spec(s) for s in request.subscriptions]


def test_client_sends_and_reads_any_of() -> None:
    fake = FakeServer(parsed=PARSED)
    try:
        with cohort.Client(fake.target) as client:
            f = client.parse_filter("x = 0 and (a = 1 or b = 2 and exists c)")
            assert f == X & (A | (B & C))
            assert f.to_spec() == PARSED_SPEC
            client.subscribe("s", A | B, "parsed by the server", a, [x, a],
                             (A | B) & (C | D))
        assert sent(fake) == SENT
    finally:
        fake.stop()


PARSED_SPEC = pb.SubscriptionSpec(predicates=PARSED.predicates,
                                  any_of=PARSED.any_of)


@pytest.mark.asyncio
async def test_aio_client_sends_and_reads_any_of() -> None:
    fake = FakeServer(parsed=PARSED)
    try:
        async with cohort.aio.Client(fake.target) as client:
            f = await client.parse_filter({"$or": [{"a": [1]}]})
            assert f == X & (A | (B & C))
            await client.subscribe("s", A | B, "parsed by the server", a,
                                   [x, a], (A | B) & (C | D))
        assert sent(fake) == SENT
    finally:
        fake.stop()
