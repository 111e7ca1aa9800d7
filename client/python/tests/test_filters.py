"""F/Filter builders, event conversion and the reference matcher (no server)."""

from __future__ import annotations

from typing import Dict, List, Union

import pytest

import cohort
from cohort import F, Filter, matches
from cohort._convert import batch_requests, publish_request
from cohort.v1 import pubsub_pb2 as pb


def only(f: Filter) -> pb.Predicate:
    assert len(f) == 1
    return f.predicates[0]


@pytest.mark.parametrize("built, op", [
    (F("x") == 5, pb.OP_EQ),
    (F("x") != 5, pb.OP_NE),
    (F("x") < 5, pb.OP_LT),
    (F("x") <= 5, pb.OP_LE),
    (F("x") > 5, pb.OP_GT),
    (F("x") >= 5, pb.OP_GE),
])
def test_comparisons_build_int_operands(built: Filter, op: int) -> None:
    p = only(built)
    assert (p.attribute, p.op, p.WhichOneof("operand"), p.value) == ("x", op,
                                                                     "value", 5)
    assert p.WhichOneof("upper_operand") is None


def test_reflected_comparison_keeps_the_meaning() -> None:
    assert only(500 >= F("price")) == only(F("price") <= 500)


def test_strings_are_utf8_bytes_and_bytes_pass_through() -> None:
    p = only(F("name") == "café")
    assert (p.WhichOneof("operand"), p.string_value) == ("string_value",
                                                         "café".encode())
    assert only(F("raw") == b"\xff\x00").string_value == b"\xff\x00"


def test_between_isin_not_in_prefix_exists() -> None:
    b = only(F("x").between(1, 9))
    assert (b.op, b.value, b.upper,
            b.WhichOneof("upper_operand")) == (pb.OP_BETWEEN, 1, 9, "upper")
    s = only(F("x").between("a", "m"))
    assert (s.string_value, s.string_upper) == (b"a", b"m")
    i = only(F("x").isin([3, 1, 3]))
    assert (i.op, list(i.int64_values.values)) == (pb.OP_IN, [3, 1, 3])
    n = only(F("x").not_in(["a", b"b"]))
    assert (n.op, list(n.string_values.values)) == (pb.OP_NOT_IN, [b"a", b"b"])
    assert only(F("p").prefix("/api/")).string_value == b"/api/"
    assert only(F("p").startswith(b"")).WhichOneof("operand") == "string_value"
    x = only(F("f").suffix(".png"))
    assert (x.op, x.string_value) == (pb.OP_SUFFIX, b".png")
    assert only(F("f").endswith(b"\xff")).string_value == b"\xff"
    np_, ns = only(F("p").not_prefix("/int/")), only(F("p").not_suffix("~"))
    assert (np_.op, np_.string_value, ns.op) == (pb.OP_NOT_PREFIX, b"/int/",
                                                  pb.OP_NOT_SUFFIX)
    with pytest.raises(ValueError, match="never hold"):
        F("p").not_prefix("")
    folds = only(F("c").not_equals_ignore_case(["Red", b"blue"]))
    assert (folds.op, list(folds.string_values.values)) == (
        pb.OP_NOT_EQUALS_IGNORE_CASE, [b"Red", b"blue"])
    with pytest.raises(TypeError, match="strings, not ints"):
        F("c").equals_ignore_case([1, 2])  # type: ignore[list-item]
    wild = only(F("f").wildcard("*.png"))
    assert (wild.op, wild.string_value) == (pb.OP_WILDCARD, b"*.png")
    cidr = only(F("ip").cidr("10.0.0.0/8"))
    assert (cidr.op, cidr.string_value) == (pb.OP_CIDR, b"10.0.0.0/8")
    c = only(F("n").equals_ignore_case("Alice"))
    assert (c.op, c.string_value) == (pb.OP_EQUALS_IGNORE_CASE, b"Alice")
    pic = only(F("n").prefix_ignore_case("Ab"))
    assert (pic.attribute, pic.op, pic.WhichOneof("operand"),
            pic.string_value) == ("n", pb.OP_PREFIX_IGNORE_CASE,
                                  "string_value", b"Ab")
    sic = only(F("n").suffix_ignore_case(b"\xff"))
    assert (sic.op, sic.string_value) == (pb.OP_SUFFIX_IGNORE_CASE, b"\xff")
    assert only(F("n").prefix_ignore_case("")).string_value == b""
    assert str(F("n").prefix_ignore_case("Ab")) == 'n prefix-ignore-case "Ab"'
    assert str(F("n").suffix_ignore_case(b"\xffX")) == (
        'n suffix-ignore-case "\\xFFX"')
    with pytest.raises(TypeError, match="a string, not a number"):
        F("n").prefix_ignore_case(5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"suffix_ignore_case"):
        F("n").suffix_ignore_case(["a"])  # type: ignore[arg-type]
    e, ne = only(F("c").exists()), only(F("c").not_exists())
    assert (e.op, e.WhichOneof("operand"), ne.op) == (pb.OP_EXISTS, None,
                                                      pb.OP_NOT_EXISTS)


def test_and_builds_a_conjunction_in_order() -> None:
    f = (F("a") == 1) & (F("b") <= 2) & F("c").exists()
    assert [p.attribute for p in f.predicates] == ["a", "b", "c"]
    extra = pb.Predicate(attribute="d", op=pb.OP_EQ, value=4)
    assert [p.attribute for p in (f & extra).predicates] == ["a", "b", "c", "d"]
    assert [p.attribute for p in ([extra] & f).predicates
           ] == ["d", "a", "b", "c"]


def test_unparenthesized_or_boolean_combination_is_refused() -> None:
    with pytest.raises(TypeError, match="parenthesize"):
        F("price"
         ) <= 500 & F("kind") == 7  # type: ignore[operator]  # noqa: B015
    with pytest.raises(TypeError, match="truth value"):
        (F("a") == 1) and (F("b") == 2)  # noqa: B015
    with pytest.raises(TypeError):
        bool(F("a"))


@pytest.mark.parametrize("bad", [True, False])
def test_bool_values_are_type_errors(bad: bool) -> None:
    with pytest.raises(TypeError, match="bool"):
        F("x") < bad  # noqa: B015
    with pytest.raises(TypeError, match="bool"):
        F("x").isin([1, bad])
    # (In an event, a bool makes a JSON event, which only the server
    # matches.)
    with pytest.raises(ValueError, match="JSON event"):
        cohort.matches(F("x").exists(), {"x": bad})


@pytest.mark.parametrize("bad", [1 << 63, -(1 << 63) - 1, 10**30])
def test_int64_overflow_is_a_value_error(bad: int) -> None:
    with pytest.raises(ValueError, match="int64"):
        F("x") < bad  # noqa: B015
    with pytest.raises(ValueError, match="'x'"):
        cohort.Client("127.0.0.1:1").publish({"x": bad})


def test_int64_extremes_are_accepted() -> None:
    assert only(F("x") >= -(1 << 63)).value == -(1 << 63)
    assert only(F("x").between(0, (1 << 63) - 1)).upper == (1 << 63) - 1


def test_builder_mistakes() -> None:
    with pytest.raises(TypeError, match="one type"):
        F("x").between(1, "z")
    with pytest.raises(ValueError, match="above"):
        F("x").between(b"\xff", b"\x01")  # unsigned: 0xff sorts after 0x01
    with pytest.raises(ValueError, match="at least one"):
        F("x").isin([])
    with pytest.raises(TypeError, match="one type"):
        F("x").not_in([1, "a"])
    with pytest.raises(TypeError, match="not one string"):
        F("x").isin("abc")
    with pytest.raises(TypeError, match="not a number"):
        F("x").prefix(5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"F\('x'\).suffix: a string"):
        F("x").suffix(5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="expected int, float, str or bytes"):
        F("x") == [1]  # noqa: B015


def test_text_form_is_the_cli_grammar() -> None:
    f = ((F("type") == "order") & F("region").isin(["eu-west", "eu-north"]) &
         F("path").prefix("/api/") & F("price").between(10, 20) &
         F("coupon").not_exists() & (F("name") != b'q"\\\xc3\xa9\n') &
         F("kind").not_in([1, 2]) & F("x").exists())
    assert str(f) == (
        'type = "order" and region in ["eu-west", "eu-north"] and '
        'path prefix "/api/" and price between 10 and 20 and '
        'not exists coupon and name != "q\\"\\\\\\xC3\\xA9\\x0A" and '
        'kind not in [1, 2] and exists x')


def test_filter_equality_and_copies() -> None:
    p = pb.Predicate(attribute="a", op=pb.OP_EQ, value=1)
    f = Filter([p])
    p.value = 2  # the Filter holds its own copy
    assert f == (F("a") == 1)
    assert f != (F("a") == 2)


# The reference matcher, rule by rule (pubsub.proto, Op).

Event = Dict[str, Union[int, str, bytes]]


@pytest.mark.parametrize(
    "f, event, expected",
    [
        (F("x") == 1, {
            "x": 1
        }, True),
        (F("x") == 1, {
            "y": 1
        }, False),
        (F("x") != 1, {
            "x": 2
        }, True),
        (F("x") != 1, {}, False),  # NE needs the attribute
        (F("x") != 1, {
            "x": "1"
        }, False),  # and its type
        (F("x").not_in([1, 2]), {
            "x": 3
        }, True),
        (F("x").not_in([1, 2]), {
            "y": 3
        }, False),  # NOT_IN needs it too
        (F("x").not_in([1, 2]), {
            "x": "a"
        }, False),
        (F("x").isin(["a", "b"]), {
            "x": "b"
        }, True),
        (F("x").isin(["a", "b"]), {
            "x": 1
        }, False),
        (F("x") < 5, {
            "x": -3
        }, True),
        (F("x") < 5, {
            "x": "a"
        }, False),  # int operand, string value
        (F("s") < "b", {
            "s": "a"
        }, True),
        (F("s") < "b", {
            "s": 1
        }, False),
        (F("s") > "a", {
            "s": b"\xff"
        }, True),  # unsigned bytes
        (F("s") < "ab", {
            "s": "a"
        }, True),  # prefix sorts first
        (F("s").between("a", "b"), {
            "s": "azzz"
        }, True),
        (F("s").between("a", "b"), {
            "s": "b\x00"
        }, False),
        (F("x").between(1, 3), {
            "x": 3
        }, True),
        (F("x").between(1, 3), {
            "x": 4
        }, False),
        (F("p").prefix("/a"), {
            "p": "/a/b"
        }, True),
        (F("p").prefix(""), {
            "p": ""
        }, True),
        (F("p").prefix(""), {
            "p": 5
        }, False),  # no prefix of an int
        (F("f").suffix(".png"), {
            "f": "a.png"
        }, True),
        (F("f").suffix(".png"), {
            "f": "png"
        }, False),
        (F("f").suffix(""), {
            "f": 5
        }, False),  # no suffix of an int
        (F("n").equals_ignore_case("CAFÉ"), {
            "n": "café"
        }, True),
        (F("n").equals_ignore_case("k"), {
            "n": "\u212a"
        }, True),  # the Kelvin sign folds to k
        (F("n").equals_ignore_case("straße"), {
            "n": "STRASSE"
        }, False),  # simple folding: one code point to one
        (F("n").equals_ignore_case(b"\xffA"), {
            "n": b"\xffa"
        }, True),  # not UTF-8: the byte as it is, the letter folded
        (F("n").equals_ignore_case("1"), {
            "n": 1
        }, False),
        (F("n").prefix_ignore_case("AB"), {
            "n": "abc"
        }, True),
        (F("n").prefix_ignore_case("ab"), {
            "n": "ABC"
        }, True),
        (F("n").prefix_ignore_case("abcd"), {
            "n": "ABC"
        }, False),  # longer than the value
        (F("n").prefix_ignore_case("CAF"), {
            "n": "cafÉ"
        }, True),
        (F("n").prefix_ignore_case("k"), {
            "n": "\u212ay"
        }, True),  # the Kelvin sign folds to k
        (F("n").prefix_ignore_case("é"), {
            "n": "Éa"
        }, True),
        (F("n").prefix_ignore_case(b"\xc3"), {
            "n": "Éa"
        }, True),  # the fold's UTF-8 bytes: é starts with 0xC3
        (F("n").prefix_ignore_case("b"), {
            "n": "ab"
        }, False),
        (F("n").prefix_ignore_case(""), {
            "n": ""
        }, True),  # the empty operand matches every string
        (F("n").prefix_ignore_case(""), {
            "n": 5
        }, False),  # but no int
        (F("n").prefix_ignore_case(""), {}, False),  # nor an absent one
        (F("n").prefix_ignore_case(b"\xffA"), {
            "n": b"\xffab"
        }, True),  # not UTF-8: the byte as it is, the letter folded
        (F("n").suffix_ignore_case(".PNG"), {
            "n": "a.png"
        }, True),
        (F("n").suffix_ignore_case(".png"), {
            "n": "A.PNG"
        }, True),
        (F("n").suffix_ignore_case(".png"), {
            "n": "png"
        }, False),
        (F("n").suffix_ignore_case("SS"), {
            "n": "straße"
        }, False),  # simple folding: ß stays one code point
        (F("n").suffix_ignore_case("É"), {
            "n": "café"
        }, True),
        (F("n").suffix_ignore_case(b"\xa9"), {
            "n": "CAFÉ"
        }, True),  # the last byte of é, the fold of É
        (F("n").suffix_ignore_case(b"\x89"), {
            "n": "CAFÉ"
        }, False),  # the last byte of É itself, not of its fold
        (F("n").suffix_ignore_case(""), {
            "n": "x"
        }, True),
        (F("n").suffix_ignore_case("1"), {
            "n": 1
        }, False),
        (F("p").not_prefix("/int/"), {
            "p": "/api"
        }, True),
        (F("p").not_prefix("/int/"), {
            "p": "/int/x"
        }, False),
        (F("p").not_suffix(".tmp"), {
            "p": "tmp"
        }, True),  # shorter than the suffix
        (F("p").not_suffix(".tmp"), {}, False),  # like NE: needs p
        (F("p").not_suffix(".tmp"), {
            "p": 5
        }, False),
        (F("ip").cidr("10.0.0.0/8"), {
            "ip": "10.255.0.1"
        }, True),
        (F("f").wildcard("a*a"), {
            "f": "a"
        }, False),  # both sides need their bytes
        (F("c").equals_ignore_case(["Red", "GREEN"]), {
            "c": "green"
        }, True),
        (F("c").not_equals_ignore_case(["Red", "GREEN"]), {
            "c": "rED"
        }, False),
        (F("c").not_equals_ignore_case("red"), {
            "c": "blue"
        }, True),
        (F("c").not_equals_ignore_case("red"), {}, False),  # like NE
        (F("f").wildcard("a*a"), {
            "f": "aba"
        }, True),
        (F("f").wildcard("x\\*"), {
            "f": "x*"
        }, True),  # an escaped star
        (F("f").wildcard("x\\*"), {
            "f": "xy"
        }, False),
        (F("ip").cidr("10.0.0.0/8"), {
            "ip": "::ffff:10.0.0.1"
        }, False),  # IPv6, though it holds IPv4
        (F("ip").cidr("2001:db8::/32"), {
            "ip": "2001:DB8::1"
        }, True),
        (F("ip").cidr("10.0.0.0/8"), {
            "ip": "010.0.0.1"
        }, False),  # no leading zeros (inet_pton)
        (F("c").exists(), {
            "c": 0
        }, True),
        (F("c").exists(), {
            "c": ""
        }, True),
        (F("c").exists(), {}, False),
        (F("c").not_exists(), {}, True),
        (F("c").not_exists(), {
            "c": 1
        }, False),
        ((F("a") == 1) & (F("b") == "x"), {
            "a": 1,
            "b": "x"
        }, True),
        ((F("a") == 1) & (F("b") == "x"), {
            "a": 1,
            "b": "y"
        }, False),
    ])
def test_matches_follows_the_proto(f: Filter, event: Event,
                                   expected: bool) -> None:
    assert matches(f, event) is expected


def test_matches_defaults_of_unset_oneofs() -> None:
    # No operand is the int64 0; an attribute without a value is the int64 0.
    no_operand = [pb.Predicate(attribute="x", op=pb.OP_EQ)]
    assert matches(no_operand, {"x": 0})
    assert not matches(no_operand, {"x": ""})
    assert matches(F("x") == 0, pb.Event(attributes=[pb.Attribute(name="x")]))
    spec = pb.SubscriptionSpec(subscriber="s",
                               predicates=(F("x") >= 0).predicates)
    assert matches(spec, {"x": 3})


def test_publish_request_forms() -> None:
    event: cohort.EventLike = {"a": 1, "s": "é", "b": b"\x00"}
    one = publish_request(event, b"p", True)
    assert one.return_ids and len(one.events) == 1
    attrs = {
        a.name: (a.WhichOneof("kind"), a.value, a.string_value)
        for a in one.events[0].attributes
    }
    assert attrs == {
        "a": ("value", 1, b""),
        "s": ("string_value", 0, "é".encode()),
        "b": ("string_value", 0, b"\x00")
    }
    assert one.events[0].payload == b"p"
    prebuilt = pb.Event(payload=b"own")
    many = publish_request([{
        "a": 1
    }, prebuilt, {
        "a": 2
    }], [b"x", b"y", b"z"], False)
    assert [e.payload for e in many.events] == [b"x", b"own", b"z"]
    with pytest.raises(ValueError, match="2 payloads for 3 events"):
        publish_request([{"a": 1}, {"a": 2}, {"a": 3}], [b"x", b"y"], False)
    with pytest.raises(TypeError, match="payload"):
        publish_request([{"a": 1}], "text", False)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="'f'"):
        publish_request({"f": 1j}, None, False)
    # A list value makes the mapping a JSON event.
    assert publish_request({"f": [1.5]}, None, False).events[0].json == (
        b'{"f":[1.5]}')


def test_batcher_groups_and_passes_requests_through() -> None:
    pre = pb.PublishRequest(events=[pb.Event(), pb.Event()], return_ids=True)
    items: List[cohort.StreamItem] = [{"n": i} for i in range(5)]
    items.insert(3, pre)
    requests = list(batch_requests(items, 2, False, b"pl"))
    assert [len(r.events) for r in requests] == [2, 1, 2, 2]
    assert requests[2] is pre
    assert [
        a.value for r in requests
        if r is not pre for e in r.events for a in e.attributes
    ] == [0, 1, 2, 3, 4]
    assert all(e.payload == b"pl" for r in requests if r is not pre
               for e in r.events)
    with pytest.raises(ValueError):
        batch_requests([], 0, False, None)
