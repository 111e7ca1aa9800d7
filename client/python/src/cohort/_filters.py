"""Typed filter builders: F("price") <= 500, combined with & ("and") and
| ("or") into a Filter.

A Filter is what one SubscriptionSpec matches: a conjunction of predicates
(cohort.v1.Predicate), its `predicates`, and "or" groups, its `any_of`:

    from cohort import F
    f = (F("price") <= 500) & (F("kind") == "order") & F("coupon").not_exists()
    g = (F("kind") == "order") & ((F("price") <= 500) | F("vip").exists())

Python's & and | bind tighter than comparisons, so each comparison needs
its parentheses: `F("price") <= 500 & F("kind") == 7` would mean
`F("price") <= (500 & F("kind")) == 7`; F raises TypeError for that (and
for `and`/`or`, which would silently drop a side) instead of building a
wrong filter. & binds tighter than |, as "and" binds tighter than "or" in
the CLI grammar: `a & b | c` is `(a & b) | c`.

Values are int (an int64 operand; bool is refused with TypeError, an int
outside int64 with ValueError), float (a number that may have a fraction:
19.99; NaN, infinities and floats beyond the int64 range are ValueError, an
integral float is sent as the int), str (sent as its UTF-8 bytes) or bytes
(any bytes). Numbers compare as numbers, int and float alike; strings byte
by byte, unsigned, in ranges.
"""

from __future__ import annotations

import itertools
import math
from decimal import Decimal
from typing import Iterable, List, Optional, Sequence, Tuple, Union

from cohort.v1 import pubsub_pb2 as pb

# An operand or attribute value: an int64, a float (a number with a
# fraction), or a string (str as UTF-8, or bytes).
Value = Union[int, float, str, bytes]
# A checked operand: int, float (with a fraction) or bytes.
Checked = Union[int, float, bytes]

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
# Integers at or past this magnitude cannot share a list with a float with a
# fraction (pubsub.proto, DoubleList).
EXACT_DOUBLE_INTEGERS = 1 << 53

_PARENTHESES = ("combine comparisons with & (and) or | (or) and "
                "parenthesize each one: (F('price') <= 500) & (F('kind') == 7)")

# A conjunction: predicates that must all hold.
Conjunction = Tuple[pb.Predicate, ...]
# An "or" group: holds iff one of its alternatives (conjunctions) holds.
Group = Tuple[Conjunction, ...]
# A Filter's predicate or group, in the order written.
Item = Union[pb.Predicate, Group]
# What Filter(any_of=...) takes for a group and for one of its
# alternatives.
AlternativeLike = Union[pb.Conjunction, Iterable[pb.Predicate]]
GroupLike = Union[pb.AnyOf, Iterable[AlternativeLike]]

# The most alternatives | builds into one group, and the most conjunctions
# Filter.conjunctions() expands into: the largest --max_or_expansion a
# server takes (its default is 150).
MAX_ALTERNATIVES = 1024

# The most stars a wildcard pattern may have (pubsub.proto, OP_WILDCARD).
MAX_WILDCARD_STARS = 8


def wildcard_parts(pattern: bytes) -> List[bytes]:
    """The literal parts of a wildcard pattern (OP_WILDCARD,
    OP_NOT_WILDCARD) around its stars, its escapes read: one part more than
    it has stars (b"a\\*b*" gives [b"a*b", b""]; no star: [pattern], an
    equality). '*' stands for any run of bytes, backslash-star for a star,
    two backslashes for a backslash. ValueError, as the server refuses it,
    for any other backslash (one at the end too), two stars in a row
    (Event Ruler refuses "**" too) or more than MAX_WILDCARD_STARS stars;
    the message names the byte."""
    parts = [bytearray()]
    after_star = False
    i = 0
    while i < len(pattern):
        b = pattern[i]
        if b == 0x5C:  # a backslash
            if i + 1 == len(pattern) or pattern[i + 1] not in (0x2A, 0x5C):
                raise ValueError(
                    f"byte {i} of the pattern: '\\' must be followed by "
                    "'*' or '\\' (a literal star or backslash)")
            parts[-1].append(pattern[i + 1])
            after_star = False
            i += 2
            continue
        if b == 0x2A:  # a star
            if after_star:
                raise ValueError(
                    f"byte {i} of the pattern: two stars in a row ('**' "
                    "means no more than '*'; Event Ruler refuses it too)")
            if len(parts) > MAX_WILDCARD_STARS:
                raise ValueError(
                    f"byte {i} of the pattern: more than "
                    f"{MAX_WILDCARD_STARS} stars (write a literal star as "
                    "\\*)")
            parts.append(bytearray())
            after_star = True
        else:
            parts[-1].append(b)
            after_star = False
        i += 1
    return [bytes(part) for part in parts]


def operand(value: object, what: str) -> Checked:
    """value as an int64 (int), a number with a fraction (float) or a
    string (bytes); else TypeError/ValueError. An integral float is its int."""
    if isinstance(value, bool):
        raise TypeError(f"{what}: bool is not a Cohort value here (use 0 or "
                        "1; == and != take True, False and None as JSON "
                        "literals)")
    if isinstance(value, int):
        if not INT64_MIN <= value <= INT64_MAX:
            raise ValueError(f"{what}: {value} is outside int64")
        return int(value)
    if isinstance(value, float):
        if math.isnan(value):
            raise ValueError(f"{what}: nan is not a number")
        if not -2.0**63 <= value < 2.0**63:
            raise ValueError(f"{what}: {value!r} is beyond the int64 range "
                             "numbers compare in")
        return int(value) if value.is_integer() else float(value)
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"{what}: expected int, float, str or bytes, got "
                    f"{type(value).__name__}")


def _set_operand(p: pb.Predicate, value: Checked) -> None:
    if isinstance(value, int):
        p.value = value
    elif isinstance(value, float):
        p.double_value = value
    else:
        p.string_value = value


def format_double(value: float) -> str:
    """A number with a fraction as the CLI prints it (C++'s shortest
    std::to_chars: the shortest digits that read back, in fixed or
    scientific notation, whichever is shorter, fixed on a tie)."""
    if value.is_integer() and -2.0**63 <= value < 2.0**63:
        return str(int(value))
    sign, digits, exponent = Decimal(repr(value)).as_tuple()
    assert isinstance(exponent, int)
    text = "".join(str(d) for d in digits)
    while len(text) > 1 and text.endswith("0"):
        text = text[:-1]
        exponent += 1
    # |value| = text * 10^exponent: the decimal point after `point` digits.
    point = len(text) + exponent
    if point <= 0:
        fixed = "0." + "0" * -point + text
    elif point >= len(text):
        fixed = text + "0" * (point - len(text))
    else:
        fixed = text[:point] + "." + text[point:]
    power = point - 1
    scientific = (text[0] + ("." + text[1:] if len(text) > 1 else "") + "e" +
                  ("-" if power < 0 else "+") + f"{abs(power):02d}")
    best = fixed if len(fixed) <= len(scientific) else scientific
    return ("-" if sign else "") + best


class Filter:
    """What one subscription matches: predicates that must all hold, and
    "or" groups of which each must have an alternative that holds.

    Built with F, & ("and") and | ("or"); also from pb messages:
    Filter(predicates), Filter(predicates, any_of=groups) or
    Filter.from_spec(spec_or_parse_filter_response). Immutable: & and |
    return new Filters.

    - `a & b` concatenates the predicates and the groups of both sides
      (a's first).
    - `a | b` is one group whose alternatives are the conjunctions of a
      (its disjunctive normal form: a Filter with groups is distributed
      into one conjunction per way of taking one alternative from every
      group, in the order written; conjunctions() gives them) followed by
      those of b; more than MAX_ALTERNATIVES (1024) of them is a
      ValueError. So `a | b | c` is one group of three alternatives, and
      `(a | b) & c | d` one of [a, c], [b, c], [d], as the CLI grammar
      reads `(a or b) and c or d`.
    - A group of one alternative is no "or": its predicates join the
      Filter's predicates where it stood, so a Filter made of one
      alternative is plain predicates (any_of empty) and prints as before.

    Python's & binds tighter than |, as "and" binds tighter than "or" in
    the CLI grammar: `a & b | c` is `(a & b) | c`; write `a & (b | c)`
    for the other. Comparisons bind looser than both, so each comparison
    needs its own parentheses: `(F("a") == 1) | (F("b") == 2)`.

    str(f) is the filter in the CLI's grammar (filter/README.md), which
    parse_filter() reads back (format_filter says how it is written);
    repr(f) is Filter('<that text>'). Two Filters are equal (==) when they
    make the same SubscriptionSpec: their predicates and their groups are
    equal, in order. It is a comparison of structure, so filters that
    mean the same but are written differently (a | b and b | a) are not
    equal. len(f) is the number of predicates written: f.predicates and
    those of every alternative. A Filter has no truth value (TypeError),
    so `and`, `or` and `not` on filters fail instead of silently dropping
    a side; it is unhashable.
    """

    # _items: the predicates and groups in the order written (a & b is a's
    # then b's), which orders each conjunction of the normal form as the
    # CLI grammar's parser does; _predicates and _any_of: the predicates
    # and the groups apart, as a SubscriptionSpec has them.
    __slots__ = ("_items", "_predicates", "_any_of")

    def __init__(self,
                 predicates: Iterable[pb.Predicate] = (),
                 any_of: Iterable[GroupLike] = ()) -> None:
        """predicates: pb Predicates; any_of: groups, each a pb.AnyOf or a
        sequence of alternatives, each a pb.Conjunction or a sequence of pb
        Predicates. The messages are copied. A group needs at least one
        alternative, an alternative at least one predicate (ValueError)."""
        own = _copies(predicates, "Filter")
        if isinstance(any_of, (str, bytes, pb.Predicate, pb.AnyOf)):
            raise TypeError("Filter: any_of is a sequence of groups, got "
                            f"{type(any_of).__name__}")
        groups: List[Group] = []
        for i, group in enumerate(any_of):
            alternatives = (group.alternatives
                            if isinstance(group, pb.AnyOf) else group)
            if isinstance(alternatives,
                          (str, bytes, pb.Predicate, pb.Conjunction)):
                raise TypeError(
                    f"Filter: any_of[{i}]: a group is a pb.AnyOf or a "
                    "sequence of alternatives (each a sequence of "
                    f"Predicates), got {type(alternatives).__name__}")
            alts: List[Conjunction] = []
            for j, alternative in enumerate(alternatives):
                items = (alternative.predicates if isinstance(
                    alternative, pb.Conjunction) else alternative)
                if isinstance(items, (str, bytes, pb.Predicate)):
                    raise TypeError(
                        f"Filter: any_of[{i}].alternatives[{j}]: an "
                        "alternative is a pb.Conjunction or a sequence of "
                        f"Predicates, got {type(items).__name__}")
                alts.append(
                    _copies(items, f"Filter: any_of[{i}].alternatives[{j}]"))
            groups.append(tuple(alts))
        _check_groups(groups)
        self._set([*own, *groups])

    def _set(self, items: Iterable[Item]) -> None:
        """Sets the items, a group of one alternative spliced in as its
        predicates (it is no "or")."""
        flat: List[Item] = []
        for item in items:
            if isinstance(item, tuple) and len(item) == 1:
                flat.extend(item[0])
            else:
                flat.append(item)
        self._items: Tuple[Item, ...] = tuple(flat)
        self._predicates: Conjunction = tuple(
            i for i in flat if isinstance(i, pb.Predicate))
        self._any_of: Tuple[Group, ...] = tuple(
            i for i in flat if isinstance(i, tuple))

    @classmethod
    def _of(cls, items: Iterable[Item]) -> Filter:
        """A Filter of items that are already Filters' own (not copied)."""
        f = cls.__new__(cls)
        f._set(items)
        return f

    @classmethod
    def from_spec(
            cls, message: Union[pb.SubscriptionSpec,
                                pb.ParseFilterResponse]) -> Filter:
        """The Filter of a SubscriptionSpec or a ParseFilterResponse: its
        predicates and any_of (a spec's subscriber is not part of it)."""
        if not isinstance(message,
                          (pb.SubscriptionSpec, pb.ParseFilterResponse)):
            raise TypeError("Filter.from_spec: expected cohort.v1 "
                            "SubscriptionSpec or ParseFilterResponse, got "
                            f"{type(message).__name__}")
        return cls(message.predicates, message.any_of)

    def to_spec(self, subscriber: str = "") -> pb.SubscriptionSpec:
        """A SubscriptionSpec with these predicates and any_of (for
        Client.subscribe_specs)."""
        spec = pb.SubscriptionSpec(subscriber=subscriber)
        fill_spec(spec, self)
        return spec

    @property
    def predicates(self) -> Conjunction:
        """The predicates that must all hold, in order (do not modify
        them)."""
        return self._predicates

    @property
    def any_of(self) -> Tuple[Group, ...]:
        """The "or" groups, in order: each a tuple of alternatives (at least
        two), each a tuple of predicates (at least one); empty for a plain
        conjunction. SubscriptionSpec.any_of, as tuples."""
        return self._any_of

    @property
    def expansion(self) -> int:
        """How many conjunctions the Filter expands into: the product of
        its groups' sizes (1 without groups). The server refuses a
        subscription above --max_or_expansion (default 150)."""
        return math.prod(len(g) for g in self._any_of)

    def conjunctions(self) -> Tuple[Conjunction, ...]:
        """The disjunctive normal form: one conjunction per way of taking
        one alternative from every group (the first group's choice varying
        slowest), each the predicates and the alternatives taken in the
        order written (`(a | b) & c` gives [a, c], [b, c]), as the CLI
        grammar's parser distributes. The Filter holds iff one of them
        does. ValueError if there would be more than MAX_ALTERNATIVES
        (1024)."""
        count = self.expansion
        if count > MAX_ALTERNATIVES:
            raise ValueError(
                f"Filter: {count} conjunctions in its disjunctive normal "
                f"form, more than {MAX_ALTERNATIVES}")
        out: List[Conjunction] = []
        for choice in itertools.product(*self._any_of):
            taken = iter(choice)
            conjunction: List[pb.Predicate] = []
            for item in self._items:
                if isinstance(item, pb.Predicate):
                    conjunction.append(item)
                else:
                    conjunction.extend(next(taken))
            out.append(tuple(conjunction))
        return tuple(out)

    def __and__(
            self, other: Union[Filter, pb.Predicate,
                               Iterable[pb.Predicate]]) -> Filter:
        return Filter._of(self._items + _side(other, "&")._items)

    def __rand__(self, other: Union[pb.Predicate,
                                    Iterable[pb.Predicate]]) -> Filter:
        return Filter._of(_side(other, "&")._items + self._items)

    def __or__(
            self, other: Union[Filter, pb.Predicate,
                               Iterable[pb.Predicate]]) -> Filter:
        return _either(self, _side(other, "|"))

    def __ror__(self, other: Union[pb.Predicate,
                                   Iterable[pb.Predicate]]) -> Filter:
        return _either(_side(other, "|"), self)

    def __bool__(self) -> bool:
        raise TypeError(f"a Filter has no truth value ('and', 'or' and chained "
                        f"comparisons would drop a side): {_PARENTHESES}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Filter):
            return NotImplemented
        return (self._predicates == other._predicates and
                self._any_of == other._any_of)

    __hash__ = None  # type: ignore[assignment]

    def __len__(self) -> int:
        return len(self._predicates) + sum(
            len(alt) for group in self._any_of for alt in group)

    def __str__(self) -> str:
        return _format(self._predicates, self._any_of)

    def __repr__(self) -> str:
        return f"Filter({str(self)!r})"


def _copies(predicates: Iterable[pb.Predicate], what: str) -> Conjunction:
    """Copies of pb Predicates; TypeError for anything else."""
    copies: List[pb.Predicate] = []
    for p in predicates:
        if not isinstance(p, pb.Predicate):
            raise TypeError(f"{what}: expected cohort.v1 Predicate, got "
                            f"{type(p).__name__}")
        copy = pb.Predicate()
        copy.CopyFrom(p)
        copies.append(copy)
    return tuple(copies)


def _check_groups(any_of: Sequence[Group]) -> None:
    """The server's rules for any_of: no group without alternatives, no
    alternative without predicates."""
    for i, group in enumerate(any_of):
        if not group:
            raise ValueError(f"Filter: any_of[{i}]: a group needs at least "
                             "one alternative")
        for j, alternative in enumerate(group):
            if not alternative:
                raise ValueError(
                    f"Filter: any_of[{i}].alternatives[{j}]: an alternative "
                    "needs at least one predicate")


def _side(other: object, operator: str) -> Filter:
    """The other operand of & or |: a Filter, one pb.Predicate or pb
    Predicates (a conjunction)."""
    if isinstance(other, F):
        raise TypeError(f"{operator} with a bare F: {_PARENTHESES}")
    if isinstance(other, Filter):
        return other
    if isinstance(other, pb.Predicate):
        return Filter((other,))
    if isinstance(other, (str, bytes, int, float)) or not isinstance(
            other, Iterable):
        raise TypeError(
            f"{operator} with {type(other).__name__}: {_PARENTHESES}")
    return Filter(other)


def _either(a: Filter, b: Filter) -> Filter:
    """a | b: one group, a's conjunctions then b's."""
    for side in (a, b):
        if not side.predicates and not side.any_of:
            raise ValueError("|: a Filter of no predicates has no "
                             "alternative to offer (an empty conjunction "
                             "holds for every event, and the server refuses "
                             "it)")
    count = a.expansion + b.expansion
    if count > MAX_ALTERNATIVES:
        raise ValueError(
            f"|: {count} alternatives ({a.expansion} on the left, "
            f"{b.expansion} on the right, each side's disjunctive normal "
            f"form), more than {MAX_ALTERNATIVES}; the server takes at most "
            "--max_or_expansion of them (default 150): split the filter "
            "into several subscriptions")
    return Filter._of((a.conjunctions() + b.conjunctions(),))


def fill_spec(spec: pb.SubscriptionSpec, f: Filter) -> None:
    """Appends f's predicates and any_of to spec."""
    spec.predicates.extend(f.predicates)
    for group in f.any_of:
        message = spec.any_of.add()
        for alternative in group:
            message.alternatives.add().predicates.extend(alternative)


class F:
    """An attribute, to compare: F("price") <= 500 is a one-predicate Filter.

    Operators: == != < <= > >=, and the methods between, isin, not_in,
    prefix (also startswith), suffix (also endswith), not_prefix,
    not_suffix, equals_ignore_case, not_equals_ignore_case,
    prefix_ignore_case, suffix_ignore_case, cidr, wildcard, not_wildcard,
    exists and not_exists.
    Values: int, float, str or bytes.
    """

    __slots__ = ("attribute",)

    def __init__(self, attribute: str) -> None:
        if not isinstance(attribute, str):
            raise TypeError(
                f"F: attribute name must be str, got {type(attribute).__name__}"
            )
        self.attribute = attribute

    def _compare(self, op: pb.Op.ValueType, value: object) -> Filter:
        p = pb.Predicate(attribute=self.attribute, op=op)
        _set_operand(p, operand(value, f"F({self.attribute!r})"))
        return Filter((p,))

    def _literal(self, op: pb.Op.ValueType, value: Optional[bool]) -> Filter:
        """EQ or NE on a JSON literal: True, False or None (null)."""
        literal = (pb.LITERAL_NULL if value is None else
                   pb.LITERAL_TRUE if value else pb.LITERAL_FALSE)
        return Filter((pb.Predicate(attribute=self.attribute, op=op,
                                    literal_value=literal),))

    def __eq__(  # type: ignore[override]
            self, value: Optional[Value]) -> Filter:
        if value is None or isinstance(value, bool):
            return self._literal(pb.OP_EQ, value)
        return self._compare(pb.OP_EQ, value)

    def __ne__(  # type: ignore[override]
            self, value: Optional[Value]) -> Filter:
        if value is None or isinstance(value, bool):
            return self._literal(pb.OP_NE, value)
        return self._compare(pb.OP_NE, value)

    def __lt__(self, value: Value) -> Filter:
        return self._compare(pb.OP_LT, value)

    def __le__(self, value: Value) -> Filter:
        return self._compare(pb.OP_LE, value)

    def __gt__(self, value: Value) -> Filter:
        return self._compare(pb.OP_GT, value)

    def __ge__(self, value: Value) -> Filter:
        return self._compare(pb.OP_GE, value)

    __hash__ = None  # type: ignore[assignment]

    def between(self, low: Value, high: Value) -> Filter:
        """low <= x <= high (both inclusive; both numbers or both
        strings)."""
        what = f"F({self.attribute!r}).between"
        lo, hi = operand(low, what), operand(high, what)
        p = pb.Predicate(attribute=self.attribute, op=pb.OP_BETWEEN)
        if not isinstance(lo, bytes) and not isinstance(hi, bytes):
            ordered = lo <= hi  # exact across int and float in Python
            _set_operand(p, lo)
            if isinstance(hi, float):
                p.double_upper = hi
            else:
                p.upper = hi
        elif isinstance(lo, bytes) and isinstance(hi, bytes):
            ordered = lo <= hi  # bytes compare unsigned, as the server does
            p.string_value, p.string_upper = lo, hi
        else:
            raise TypeError(
                f"{what}: bounds of one type (numbers, or str/bytes)")
        if not ordered:
            raise ValueError(f"{what}: low {low!r} is above high {high!r}")
        return Filter((p,))

    def _list(self, op: pb.Op.ValueType, name: str,
              values: Iterable[Value]) -> Filter:
        what = f"F({self.attribute!r}).{name}"
        if isinstance(values, (str, bytes)):
            raise TypeError(f"{what}: takes a list of values, not one string")
        items = [operand(v, what) for v in values]
        if not items:
            raise ValueError(f"{what}: needs at least one value")
        p = pb.Predicate(attribute=self.attribute, op=op)
        numbers = [v for v in items if not isinstance(v, bytes)]
        strings = [v for v in items if isinstance(v, bytes)]
        if numbers and strings:
            raise TypeError(
                f"{what}: values of one type (numbers, or str/bytes)")
        if any(isinstance(v, float) for v in numbers):
            # double_values, where an integer must be exact as a double.
            for v in numbers:
                if isinstance(v, int) and abs(v) >= EXACT_DOUBLE_INTEGERS:
                    raise ValueError(
                        f"{what}: the integer {v} cannot share a list with a "
                        "float with a fraction (integers there must be below "
                        "2**53 in magnitude); give it a predicate of its own")
            p.double_values.values.extend(float(v) for v in numbers)
        elif numbers:
            p.int64_values.values.extend(int(v) for v in numbers)
        else:
            p.string_values.values.extend(strings)
        return Filter((p,))

    def isin(self, values: Iterable[Value]) -> Filter:
        """x is one of values (OP_IN)."""
        return self._list(pb.OP_IN, "isin", values)

    def not_in(self, values: Iterable[Value]) -> Filter:
        """x is none of values (OP_NOT_IN); false if the event lacks x."""
        return self._list(pb.OP_NOT_IN, "not_in", values)

    def _affix(self, op: pb.Op.ValueType, name: str,
               value: Union[str, bytes]) -> Filter:
        what = f"F({self.attribute!r}).{name}"
        checked = operand(value, what)
        if not isinstance(checked, bytes):
            raise TypeError(f"{what}: a string, not a number")
        return Filter((pb.Predicate(attribute=self.attribute,
                                    op=op,
                                    string_value=checked),))

    def prefix(self, prefix: Union[str, bytes]) -> Filter:
        """x is a string starting with prefix (OP_PREFIX)."""
        return self._affix(pb.OP_PREFIX, "prefix", prefix)

    startswith = prefix

    def suffix(self, suffix: Union[str, bytes]) -> Filter:
        """x is a string ending with suffix (OP_SUFFIX)."""
        return self._affix(pb.OP_SUFFIX, "suffix", suffix)

    endswith = suffix

    def not_prefix(self, prefix: Union[str, bytes]) -> Filter:
        """x is a string not starting with prefix, which is not empty
        (OP_NOT_PREFIX); false if the event lacks x or carries an int."""
        return self._excluded(pb.OP_NOT_PREFIX, "not_prefix", prefix)

    def not_suffix(self, suffix: Union[str, bytes]) -> Filter:
        """x is a string not ending with suffix, which is not empty
        (OP_NOT_SUFFIX); false if the event lacks x or carries an int."""
        return self._excluded(pb.OP_NOT_SUFFIX, "not_suffix", suffix)

    def _excluded(self, op: pb.Op.ValueType, name: str,
                  value: Union[str, bytes]) -> Filter:
        f = self._affix(op, name, value)
        if not f.predicates[0].string_value:
            raise ValueError(f"F({self.attribute!r}).{name}: an empty "
                             "string would never hold; give 1 byte or more")
        return f

    def cidr(self, network: Union[str, bytes]) -> Filter:
        """x is a string holding an IP address in network ("10.0.0.0/8",
        "2001:db8::/32"; OP_CIDR). The server checks the network."""
        return self._affix(pb.OP_CIDR, "cidr", network)

    def wildcard(self, pattern: Union[str, bytes]) -> Filter:
        """x is a string the pattern matches (OP_WILDCARD): '*' any run of
        bytes (the empty one too), \\* a star, \\\\ a backslash, every
        other byte itself; at most 8 stars, no two in a row, no other
        backslash (else ValueError). Without a star, an equality."""
        return self._pattern(pb.OP_WILDCARD, "wildcard", pattern)

    def not_wildcard(self, pattern: Union[str, bytes]) -> Filter:
        """x is a string the pattern, as for wildcard(), does not match
        (OP_NOT_WILDCARD, Event Ruler's anything-but wildcard); false if
        the event lacks x or carries another type."""
        return self._pattern(pb.OP_NOT_WILDCARD, "not_wildcard", pattern)

    def _pattern(self, op: pb.Op.ValueType, name: str,
                 pattern: Union[str, bytes]) -> Filter:
        f = self._affix(op, name, pattern)
        try:
            wildcard_parts(f.predicates[0].string_value)
        except ValueError as e:
            raise ValueError(f"F({self.attribute!r}).{name}: {e}") from None
        return f

    def equals_ignore_case(
            self, value: Union[str, bytes,
                               Iterable[Union[str, bytes]]]) -> Filter:
        """x is a string equal to value (or to one of a list of strings)
        but for case: Unicode simple case folding of both
        (OP_EQUALS_IGNORE_CASE; pubsub.proto says more)."""
        return self._folds(pb.OP_EQUALS_IGNORE_CASE, "equals_ignore_case",
                           value)

    def not_equals_ignore_case(
            self, value: Union[str, bytes,
                               Iterable[Union[str, bytes]]]) -> Filter:
        """x is a string equal, ignoring case, to none of value (a string
        or a list); false if the event lacks x or carries an int
        (OP_NOT_EQUALS_IGNORE_CASE)."""
        return self._folds(pb.OP_NOT_EQUALS_IGNORE_CASE,
                           "not_equals_ignore_case", value)

    def prefix_ignore_case(self, prefix: Union[str, bytes]) -> Filter:
        """x is a string whose simple case fold (as for equals_ignore_case)
        starts with prefix's (OP_PREFIX_IGNORE_CASE, Event Ruler's
        {"prefix": {"equals-ignore-case": ...}}); the empty prefix matches
        every string."""
        return self._affix(pb.OP_PREFIX_IGNORE_CASE, "prefix_ignore_case",
                           prefix)

    def suffix_ignore_case(self, suffix: Union[str, bytes]) -> Filter:
        """x is a string whose simple case fold ends with suffix's
        (OP_SUFFIX_IGNORE_CASE, Event Ruler's {"suffix":
        {"equals-ignore-case": ...}}); the empty suffix matches every
        string."""
        return self._affix(pb.OP_SUFFIX_IGNORE_CASE, "suffix_ignore_case",
                           suffix)

    def _folds(self, op: pb.Op.ValueType, name: str,
               value: Union[str, bytes, Iterable[Union[str, bytes]]]) -> Filter:
        if isinstance(value, (str, bytes)):
            return self._affix(op, name, value)
        f = self._list(op, name, value)
        if f.predicates[0].WhichOneof("operand") != "string_values":
            raise TypeError(f"F({self.attribute!r}).{name}: strings, not ints")
        return f

    def exists(self) -> Filter:
        """The event carries the attribute, of either type (OP_EXISTS)."""
        return Filter((pb.Predicate(attribute=self.attribute,
                                    op=pb.OP_EXISTS),))

    def not_exists(self) -> Filter:
        """The event does not carry the attribute (OP_NOT_EXISTS)."""
        return Filter((pb.Predicate(attribute=self.attribute,
                                    op=pb.OP_NOT_EXISTS),))

    def __and__(self, other: object) -> Filter:
        raise TypeError(f"F({self.attribute!r}) & ...: {_PARENTHESES}")

    __rand__ = __and__

    def __or__(self, other: object) -> Filter:
        raise TypeError(f"F({self.attribute!r}) | ...: {_PARENTHESES}")

    __ror__ = __or__

    def __bool__(self) -> bool:
        raise TypeError(
            f"F({self.attribute!r}) has no truth value: {_PARENTHESES}")

    def __repr__(self) -> str:
        return f"F({self.attribute!r})"


# Text form, in the CLI's grammar (filter/parse.h, FormatPredicate).

_OP_TEXT = {
    pb.OP_EQ: "=",
    pb.OP_NE: "!=",
    pb.OP_LT: "<",
    pb.OP_LE: "<=",
    pb.OP_GT: ">",
    pb.OP_GE: ">="
}

# The operators written as words before one string (or a list of strings).
_STRING_OP_TEXT = {
    pb.OP_PREFIX: "prefix",
    pb.OP_SUFFIX: "suffix",
    pb.OP_EQUALS_IGNORE_CASE: "equals-ignore-case",
    pb.OP_NOT_PREFIX: "not prefix",
    pb.OP_NOT_SUFFIX: "not suffix",
    pb.OP_NOT_EQUALS_IGNORE_CASE: "not equals-ignore-case",
    pb.OP_PREFIX_IGNORE_CASE: "prefix-ignore-case",
    pb.OP_SUFFIX_IGNORE_CASE: "suffix-ignore-case",
    pb.OP_CIDR: "cidr",
    pb.OP_WILDCARD: "wildcard",
    pb.OP_NOT_WILDCARD: "not wildcard",
}


def format_string(value: bytes) -> str:
    """A string literal as the CLI prints it: printable ASCII as is, '"' and
    '\\' escaped, every other byte as \\xHH."""
    out = ['"']
    for b in value:
        if b in (0x22, 0x5C):
            out.append("\\" + chr(b))
        elif 0x20 <= b < 0x7F:
            out.append(chr(b))
        else:
            out.append(f"\\x{b:02X}")
    out.append('"')
    return "".join(out)


_LITERAL_TEXT = {pb.LITERAL_TRUE: "true", pb.LITERAL_FALSE: "false",
                 pb.LITERAL_NULL: "null"}


def _format_value(p: pb.Predicate) -> str:
    kind = p.WhichOneof("operand")
    if kind == "literal_value":
        return _LITERAL_TEXT.get(p.literal_value, f"literal{p.literal_value}")
    if kind == "string_value":
        return format_string(p.string_value)
    if kind == "double_value":
        return format_double(p.double_value)
    return str(p.value)


def format_predicate(p: pb.Predicate) -> str:
    """One predicate in the CLI's grammar, e.g. 'price <= 500'."""
    name = p.attribute
    if p.op in _OP_TEXT:
        return f"{name} {_OP_TEXT[p.op]} {_format_value(p)}"
    if p.op == pb.OP_BETWEEN:
        if p.WhichOneof("operand") == "string_value":
            return (f"{name} between {format_string(p.string_value)} and "
                    f"{format_string(p.string_upper)}")
        upper = (format_double(p.double_upper) if p.WhichOneof(
            "upper_operand") == "double_upper" else str(p.upper))
        return f"{name} between {_format_value(p)} and {upper}"
    if p.op in (pb.OP_IN, pb.OP_NOT_IN):
        kind = p.WhichOneof("operand")
        values: Sequence[str] = (
            [format_string(v) for v in p.string_values.values] if kind
            == "string_values" else
            [format_double(v) for v in p.double_values.values] if kind
            == "double_values" else [str(v) for v in p.int64_values.values])
        word = "in" if p.op == pb.OP_IN else "not in"
        return f"{name} {word} [{', '.join(values)}]"
    if p.op in _STRING_OP_TEXT:
        word = _STRING_OP_TEXT[p.op]
        if p.WhichOneof("operand") == "string_values":  # equals-ignore-case
            listed = ", ".join(format_string(v) for v in p.string_values.values)
            return f"{name} {word} [{listed}]"
        return f"{name} {word} {format_string(p.string_value)}"
    if p.op == pb.OP_EXISTS:
        return f"exists {name}"
    if p.op == pb.OP_NOT_EXISTS:
        return f"not exists {name}"
    raise ValueError(f"predicate on {name!r}: op {p.op} has no text form")


def format_predicates(predicates: Iterable[pb.Predicate]) -> str:
    """A conjunction in the CLI's grammar: 'a = 1 and b prefix "x"'."""
    return " and ".join(format_predicate(p) for p in predicates)


# What format_filter and cohort.matches take: a Filter, a SubscriptionSpec,
# a ParseFilterResponse, or pb Predicates (a conjunction).
SpecLike = Union[Filter, pb.SubscriptionSpec, pb.ParseFilterResponse,
                 Iterable[pb.Predicate]]


def spec_parts(
    filter: SpecLike
) -> Tuple[Sequence[pb.Predicate], Sequence[Sequence[Sequence[pb.Predicate]]]]:
    """The predicates and the groups (of alternatives, of predicates) of
    filter, as they are: a message's any_of is not checked or changed."""
    if isinstance(filter, Filter):
        return filter.predicates, filter.any_of
    if isinstance(filter, (pb.SubscriptionSpec, pb.ParseFilterResponse)):
        return filter.predicates, [[alt.predicates for alt in group.alternatives]
                                   for group in filter.any_of]
    if isinstance(filter, (str, bytes, pb.Predicate)):
        raise TypeError("expected a Filter, a cohort.v1 SubscriptionSpec or "
                        "ParseFilterResponse, or a sequence of Predicates; got "
                        f"{type(filter).__name__}")
    return list(filter), []


def _format(predicates: Sequence[pb.Predicate],
            any_of: Sequence[Sequence[Sequence[pb.Predicate]]]) -> str:

    def group(alternatives: Sequence[Sequence[pb.Predicate]]) -> str:
        return " or ".join(format_predicates(a) for a in alternatives)

    if not predicates and len(any_of) == 1:
        return group(any_of[0])
    return " and ".join([format_predicate(p) for p in predicates] +
                        [f"({group(g)})" for g in any_of])


def format_filter(filter: SpecLike) -> str:
    """A filter with "or" in the CLI's grammar, as its printer writes it:
    the predicates joined by " and ", then each group appended as
    " and (alt or alt ...)", an alternative its predicates joined by
    " and "; with no predicates and one group, the group without
    parentheses: 'a = 1 or b = 2 and c = 3'. Without groups, exactly
    format_predicates. Takes a Filter, a SubscriptionSpec, a
    ParseFilterResponse or predicates; str(Filter) is this."""
    return _format(*spec_parts(filter))
