"""A brute-force reference matcher with the semantics of pubsub.proto.

matches(filter, event) says whether a subscription with that filter (its
predicates and its "or" groups) matches the event, evaluated predicate by
predicate in plain Python. It is slow and meant for tests and for checking
what a filter means:

    >>> from cohort import F, matches
    >>> f = (F("price") <= 500) & (F("kind") == "order")
    >>> matches(f, {"price": 420, "kind": "order"})
    True
    >>> matches((F("a") == 1) | (F("b") == 2), {"b": 2})
    True

The rules (pubsub.proto, Op): every operator but NOT_EXISTS needs the
attribute (so NE and NOT_IN do not match an event lacking it); numbers
(int64 and double) compare as numbers, exactly (Python's int and float
comparisons are exact); a number operand never matches a string value or
the reverse; strings compare byte
by byte, unsigned (Python's bytes order); EXISTS holds for a value of either
type; a comparison without an operand compares with the int64 0, and an
attribute without a value is the int64 0. EQUALS_IGNORE_CASE compares the
simple case folds of both strings (fold_case), and PREFIX_IGNORE_CASE and
SUFFIX_IGNORE_CASE ask whether the value's fold (its UTF-8 bytes) starts
or ends with the operand's; CIDR holds for a string that
is an IP address of the network's family inside it (ip_address); WILDCARD
for a string the pattern matches (glob: '*' any run of bytes, a str value
compared as its UTF-8 bytes), NOT_WILDCARD for a string it does not match
(not for a number, like NOT_PREFIX); a pattern the server refuses is
ValueError.
"""

from __future__ import annotations

import ipaddress
import re
from typing import (Callable, Dict, Iterable, List, Mapping, Optional,
                    Union)

from cohort._casefold import FOLD
from cohort._convert import LITERALS, EventLike, attributes_of, fill_event
from cohort._filters import SpecLike, spec_parts, wildcard_parts
from cohort.v1 import pubsub_pb2 as pb

Scalar = Union[int, float, bytes]
# What an event holds for a name: a Scalar, a literal (True, False, None),
# or _ABSENT.
_ABSENT = object()


def _event_values(event: EventLike) -> Mapping[str, object]:
    if isinstance(event, pb.Event):
        return attributes_of(event)
    message = pb.Event()
    fill_event(message, event)
    if message.json:
        raise ValueError("matches: a nested event is a JSON event, which "
                         "the server matches (arrays element by element); "
                         "give a flat mapping")
    return attributes_of(message)


def _operand(p: pb.Predicate) -> Scalar:
    kind = p.WhichOneof("operand")
    return (p.string_value if kind == "string_value" else
            p.double_value if kind == "double_value" else p.value)


def _is_number(x: Scalar) -> bool:
    return isinstance(x, (int, float))


def fold_case(value: bytes) -> bytes:
    """value with Unicode's simple case folding applied to its UTF-8 code
    points, as the server folds for OP_EQUALS_IGNORE_CASE (and
    OP_PREFIX_IGNORE_CASE, OP_SUFFIX_IGNORE_CASE); bytes that are
    not well-formed UTF-8 stay as they are."""
    text = value.decode("utf-8", "surrogateescape")
    folded = "".join(chr(FOLD.get(ord(c), ord(c))) for c in text)
    return folded.encode("utf-8", "surrogateescape")


# inet_pton's forms: IPv4 dotted decimal with no leading zeros (Python's
# ipaddress agrees), IPv6 without a zone (Python takes "%zone"; the server
# does not).
_IPV4 = re.compile(r"(0|[1-9][0-9]{0,2})(\.(0|[1-9][0-9]{0,2})){3}")


def ip_address(
        value: bytes
) -> Optional[Union[ipaddress.IPv4Address, ipaddress.IPv6Address]]:
    """The IP address value holds, as the server reads it, or None."""
    try:
        text = value.decode("ascii")
    except UnicodeDecodeError:
        return None
    if "%" in text or text != text.strip():
        return None
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if address.version == 4 and not _IPV4.fullmatch(text):
        return None
    return address


def _in_network(x: bytes, network: bytes) -> bool:
    address = ip_address(x)
    text = network.decode("ascii", "replace")
    host, slash, length = text.partition("/")
    base = ip_address(host.encode())
    if address is None or base is None or address.version != base.version:
        return False
    bits = 32 if base.version == 4 else 128
    if slash and not (length.isdigit() and len(length) <= 3 and
                      int(length) <= bits):
        return False
    n = int(length) if slash else bits
    shift = bits - n
    return int(address) >> shift == int(base) >> shift


def glob(pattern: bytes, value: bytes) -> bool:
    """Whether the wildcard pattern matches value, byte by byte: '*' any
    run of bytes (the empty one too), backslash-star a star, two
    backslashes a backslash (OP_WILDCARD). A pattern the server refuses
    (wildcard_parts: another backslash, "**", more than 8 stars) is
    ValueError."""
    parts = wildcard_parts(pattern)
    # The pattern as tokens: a byte, or None for a star.
    tokens: List[Optional[int]] = list(parts[0])
    for part in parts[1:]:
        tokens.append(None)
        tokens.extend(part)
    # can[j]: tokens[j:] match the rest of value, filled from the end.
    can = [False] * (len(tokens) + 1)
    can[len(tokens)] = True
    for j in range(len(tokens) - 1, -1, -1):
        can[j] = can[j + 1] and tokens[j] is None
    for k in range(len(value) - 1, -1, -1):
        nxt = can
        can = [False] * (len(tokens) + 1)
        for j in range(len(tokens) - 1, -1, -1):
            t = tokens[j]
            can[j] = (can[j + 1] or nxt[j]) if t is None else (
                t == value[k] and nxt[j + 1])
    return can[0]


def _compare(x: Scalar, y: Scalar) -> Optional[int]:
    """-1, 0 or 1 as x is below, equal to or above y; None across types."""
    if _is_number(x) and _is_number(y):
        return (x > y) - (x < y)  # type: ignore[operator]
    if isinstance(x, bytes) and isinstance(y, bytes):
        return (x > y) - (x < y)  # unsigned byte order, shorter first
    return None


_HOLDS: Dict[int, Callable[[int], bool]] = {
    pb.OP_EQ: lambda c: c == 0,
    pb.OP_NE: lambda c: c != 0,
    pb.OP_LT: lambda c: c < 0,
    pb.OP_LE: lambda c: c <= 0,
    pb.OP_GT: lambda c: c > 0,
    pb.OP_GE: lambda c: c >= 0,
}


def _holds(p: pb.Predicate, value: object) -> bool:
    op = p.op
    if op == pb.OP_NOT_EXISTS:
        return value is _ABSENT
    if value is _ABSENT:
        return False
    if op == pb.OP_EXISTS:
        return True
    # A literal is a type of its own: EQ and NE on a literal operand
    # compare literals, and nothing else holds for one.
    literal_operand = p.WhichOneof("operand") == "literal_value"
    if value is None or isinstance(value, bool) or literal_operand:
        if not literal_operand or not (value is None or
                                       isinstance(value, bool)):
            return False
        same = LITERALS.get(p.literal_value, _ABSENT) is value
        return same if op == pb.OP_EQ else op == pb.OP_NE and not same
    assert isinstance(value, (int, float, bytes))
    x: Scalar = value
    if op in (pb.OP_IN, pb.OP_NOT_IN):
        values: Iterable[Scalar]
        kind = p.WhichOneof("operand")
        if kind == "string_values":
            values = list(p.string_values.values)
        elif kind == "double_values":
            values = list(p.double_values.values)
        else:
            values = list(p.int64_values.values)
        same_type = [v for v in values if _is_number(v) == _is_number(x)]
        if not same_type:
            return False  # a list of the other type never holds
        return (x in same_type) == (op == pb.OP_IN)
    if op == pb.OP_PREFIX:
        return isinstance(x, bytes) and x.startswith(p.string_value)
    if op == pb.OP_SUFFIX:
        return isinstance(x, bytes) and x.endswith(p.string_value)
    if op in (pb.OP_WILDCARD, pb.OP_NOT_WILDCARD):
        if not isinstance(x, bytes):
            return False  # neither holds for a number
        return glob(p.string_value, x) == (op == pb.OP_WILDCARD)
    if op == pb.OP_CIDR:
        return isinstance(x, bytes) and _in_network(x, p.string_value)
    if op == pb.OP_NOT_PREFIX:
        return isinstance(x, bytes) and not x.startswith(p.string_value)
    if op == pb.OP_NOT_SUFFIX:
        return isinstance(x, bytes) and not x.endswith(p.string_value)
    if op == pb.OP_PREFIX_IGNORE_CASE:
        return isinstance(x, bytes) and fold_case(x).startswith(
            fold_case(p.string_value))
    if op == pb.OP_SUFFIX_IGNORE_CASE:
        return isinstance(x, bytes) and fold_case(x).endswith(
            fold_case(p.string_value))
    if op in (pb.OP_EQUALS_IGNORE_CASE, pb.OP_NOT_EQUALS_IGNORE_CASE):
        if not isinstance(x, bytes):
            return False
        operands = (list(p.string_values.values) if p.WhichOneof("operand")
                    == "string_values" else [p.string_value])
        equal = fold_case(x) in [fold_case(v) for v in operands]
        return equal == (op == pb.OP_EQUALS_IGNORE_CASE)
    c = _compare(x, _operand(p))
    if c is None:
        return False  # an operand of the other type never holds
    if op == pb.OP_BETWEEN:
        upper_kind = p.WhichOneof("upper_operand")
        upper: Scalar = (p.string_upper if upper_kind == "string_upper" else
                         p.double_upper if upper_kind == "double_upper" else
                         p.upper)
        c_upper = _compare(x, upper)
        return c >= 0 and c_upper is not None and c_upper <= 0
    if op in _HOLDS:
        return _HOLDS[op](c)
    raise ValueError(f"predicate on {p.attribute!r}: invalid op {p.op}")


def matches(filter: SpecLike, event: EventLike) -> bool:
    """Whether filter holds for event (the proto's rules): every predicate
    holds and, for every "or" group (any_of), every predicate of one of its
    alternatives. filter is a Filter, a SubscriptionSpec, a
    ParseFilterResponse or predicates (a conjunction); a group without
    alternatives never holds."""
    predicates, any_of = spec_parts(filter)
    values = _event_values(event)

    def holds(conjunction: Iterable[pb.Predicate]) -> bool:
        return all(
            _holds(p, values.get(p.attribute, _ABSENT)) for p in conjunction)

    return holds(predicates) and all(
        any(holds(alternative) for alternative in group) for group in any_of)
