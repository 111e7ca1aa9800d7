#!/usr/bin/env python3
"""Cohort's side of bench/eventruler.sh: the same patterns and events.

    eventruler_compare.py --target=HOST:PORT --dir=DIR

Subscribes every pattern of DIR/rules.jsonl as it is written (ParseFilter
lowers it, Subscribe adds it), publishes every event of DIR/events.jsonl
as it is written (a JSON event, Event.json), and compares each event's matches with Event Ruler's answers in
DIR/ruler.tsv ("EVENT\\tR1,R2,..."). Prints the pairs compared, the
matches, the disagreements by kind (the first few in full), and writes
them all to DIR/disagreements.tsv. Exits 1 if there is any that is not
documented.

Documented (README's table; docs/DESIGN.md section 1.6): Event Ruler's
anything-but holds for a value of the other type (anything-but 503 holds
for the string "301"), where Cohort's NE and NOT_IN hold only for values
of their operand's type. A disagreement counts as that one only if it is
exactly that: Event Ruler matched, and for some reading of the event
(one element of each array at a time) Cohort's reference matcher
(cohort.matches) matches once the NE and NOT_IN predicates whose operand
type differs from the reading's value (true, false and null are of
neither type) are left out.

Not Cohort's: Event Ruler 1.8.1 errs once some pattern gives a field a
wildcard starting with '*': an equals-ignore-case condition on that field
reads its first character as the star (with {"wildcard": "*prod"}
loaded, {"equals-ignore-case": "Db"} matches "web"; alone, it does not),
and so excludes too much in anything-but equals-ignore-case; and a suffix
ending in a character of several UTF-8 bytes matches any character with
the same first byte (with {"wildcard": "*"} loaded, {"suffix": "oë"}
matches "zoË"). Such a disagreement is counted apart as Event Ruler's
error (ruler_star_defect, ruler_star_exclusion) when a loaded pattern
gives that field a '*...' wildcard and the pattern's answer in the
reference, with those conditions read Event Ruler's way, is Event
Ruler's.

"Or" (a "$or", a field's list of several kinds of entry): ParseFilter
gives a cohort.Filter, whose expansion (Filter.conjunctions()) holds iff
one of its conjunctions does, for Cohort as for Event Ruler (which
expands "$or" the same way). The classifiers above reason about one
conjunction; classify() applies them so:

- Every disagreement first needs Cohort's answer to be its reference's
  (cohort.matches on the whole Filter, some reading of the event): a
  server that disagrees with its own reference is never explained.
- Event Ruler matched, Cohort did not: explained iff some conjunction is
  (typed_anything_but, else ruler_star_defect, on that conjunction):
  Event Ruler matches as soon as one does.
- Cohort matched, Event Ruler did not: Event Ruler must have failed
  every conjunction, so ruler_star_exclusion takes them all: some
  conjunction has an anything-but equals-ignore-case on a '*...' field,
  and no conjunction matches any reading as Event Ruler reads it
  (ruler_holds: that exclusion, and every leniency above, its
  anything-but across types and its erring equals-ignore-case and
  suffix, so that the explanation never covers a conjunction Event
  Ruler would match). One conjunction explained is not enough.

  Or Event Ruler's "$or" error (ruler_or_overlap, found by this driver):
  an entry whose list for a field shares a value with an earlier entry's
  list for that field loses its other values ({"$or": [{"q": [5, 4]},
  {"q": [9, 4]}]} misses q = 9); explained iff no conjunction matches
  once every such later alternative is left out.

A disagreement that needs two of these at once in one conjunction is not
explained.
"""

import argparse
import json
import os
import sys
from typing import Any, Dict, List, Sequence, Set

import cohort
from cohort.v1 import pubsub_pb2 as pb
from eventruler_workload import readings  # beside this script


def reading_event(flat: Dict[str, Any]) -> pb.Event:
    """One reading of a JSON event as an Event of attributes (literals as
    literal values), for the reference matcher (cohort.matches)."""
    event = pb.Event()
    literals = {True: pb.LITERAL_TRUE, False: pb.LITERAL_FALSE,
                None: pb.LITERAL_NULL}
    for name, value in flat.items():
        if value is None or isinstance(value, bool):
            event.attributes.add(name=name, literal_value=literals[value])
        else:
            cohort._convert.fill_event(event, {name: value})
    return event


def other_type(p: pb.Predicate, flat: Dict[str, Any]) -> bool:
    """Whether `p` is an NE, NOT_IN or NOT_WILDCARD whose operand's type
    is not that of the reading's value (true, false and null are of
    neither type): one that Event Ruler's anything-but holds for and
    Cohort's does not (anything-but wildcard holds for 5 in Event Ruler
    1.8.1, measured)."""
    if (p.op not in (pb.OP_NE, pb.OP_NOT_IN, pb.OP_NOT_WILDCARD) or
            p.attribute not in flat):
        return False
    value = flat[p.attribute]
    if value is None or isinstance(value, bool):
        return True
    kind = p.WhichOneof("operand")
    string_operand = kind in ("string_value", "string_values")
    return isinstance(value, str) != string_operand


def typed_anything_but(predicates: Sequence[pb.Predicate],
                       doc: Dict[str, Any]) -> bool:
    """Whether Cohort misses this match of a conjunction only by the
    documented typing rule."""
    for flat in readings(doc):
        relaxed = [p for p in predicates if not other_type(p, flat)]
        if len(relaxed) < len(predicates) and cohort.matches(
                relaxed, reading_event(flat)):
            return True
    return False


# The conditions Event Ruler 1.8.1 reads wrongly beside a '*...' wildcard
# on their field (ruler_star_defect, star_read).
STAR_ERRS = (pb.OP_EQUALS_IGNORE_CASE, pb.OP_SUFFIX, pb.OP_PREFIX_IGNORE_CASE,
             pb.OP_SUFFIX_IGNORE_CASE)


def ruler_star_defect(predicates: Sequence[pb.Predicate], doc: Dict[str, Any],
                      star_paths: Set[str]) -> bool:
    """Whether Event Ruler matched only through one of its 1.8.1 errors
    beside a wildcard starting with '*' on the same field (its automaton
    shares the star's state): an equals-ignore-case condition reads its
    first character as that star (with {"wildcard": "*prod"} loaded,
    {"equals-ignore-case": "Db"} matches "web" and "xb", not "b"), and a
    suffix whose last character takes several UTF-8 bytes matches any
    character with the same first byte there (with {"wildcard": "*"}
    loaded, {"suffix": "oë"} matches "zoË" and "zoé"). For one
    conjunction."""
    affected = [p for p in predicates if p.attribute in star_paths and
                p.op in STAR_ERRS]
    if not affected:
        return False
    rest = [p for p in predicates if p not in affected]
    for flat in readings(doc):
        event = reading_event(flat)
        if (all(star_read(p, flat.get(p.attribute)) or
                cohort.matches([p], event) for p in affected) and
                cohort.matches(rest, event)):
            return True
    return False


def equal_values(p: pb.Predicate) -> Set[Any]:
    """The values an EQ or IN predicate holds for, typed; empty for the
    other ops."""
    if p.op == pb.OP_EQ:
        kind = p.WhichOneof("operand")
        return {(kind, getattr(p, kind))} if kind else set()
    if p.op == pb.OP_IN:
        kind = p.WhichOneof("operand")
        if kind == "string_values":
            return {("string_value", v) for v in p.string_values.values}
        if kind == "int64_values":
            return {("value", v) for v in p.int64_values.values}
        if kind == "double_values":
            return {("double_value", v) for v in p.double_values.values}
    return set()


def ruler_or_overlap(f: cohort.Filter, doc: Dict[str, Any]) -> bool:
    """Event Ruler 1.8.1's "$or" error, found by this driver: an entry
    whose list for a field shares a value with an earlier entry's list
    for that field loses its other values ({"$or": [{"q": [5, 4]},
    {"q": [9, 4]}]} does not match q = 9; with [5, 3] first it does). True
    iff f matches doc (Cohort's reference), but not once every such later
    alternative of a group is left out: then only those alternatives
    match, and Event Ruler reads them so."""
    groups = []
    for group in f.any_of:
        kept = []
        for k, alternative in enumerate(group):
            broken = False
            for p in alternative:
                values = equal_values(p)
                for earlier in group[:k]:
                    for q in earlier:
                        if (q.attribute == p.attribute and values and
                                values & equal_values(q)):
                            broken = True
            if not broken:
                kept.append(alternative)
        if not kept:
            return True
        groups.append(kept)
    reduced = cohort.Filter(f.predicates,
                            any_of=[[list(a) for a in g] for g in groups])
    return not any(cohort.matches(reduced, reading_event(flat))
                   for flat in readings(doc))


def ruler_star_exclusion(conjunctions: Sequence[Sequence[pb.Predicate]],
                         doc: Dict[str, Any], star_paths: Set[str]) -> bool:
    """Whether Event Ruler missed a match only through the same error in
    anything-but equals-ignore-case: beside a '*...' wildcard on the field,
    it excludes what the operand read with a star for its first character
    matches ({"anything-but": {"equals-ignore-case": "db"}} excludes
    "web"). Takes the whole expansion (every conjunction of the filter):
    some conjunction has such a predicate, and no conjunction matches any
    reading of the event the way Event Ruler reads it (ruler_holds)."""
    if not any(p.attribute in star_paths and
               p.op == pb.OP_NOT_EQUALS_IGNORE_CASE
               for conjunction in conjunctions for p in conjunction):
        return False
    for flat in readings(doc):
        event = reading_event(flat)
        for conjunction in conjunctions:
            if all(ruler_holds(p, flat, event, star_paths)
                   for p in conjunction):
                return False  # Event Ruler's reading matches too
    return True


def ruler_holds(p: pb.Predicate, flat: Dict[str, Any], event: pb.Event,
                star_paths: Set[str]) -> bool:
    """Whether `p` holds for a reading as Event Ruler 1.8.1 reads it, with
    every difference above that makes it hold where Cohort's does not (so
    that ruler_star_exclusion explains no more than these): an NE or
    NOT_IN of the other type holds; beside a '*...' wildcard an
    equals-ignore-case or suffix also holds for its erring reading, and an
    anything-but equals-ignore-case fails for it."""
    if p.attribute in star_paths:
        if p.op == pb.OP_NOT_EQUALS_IGNORE_CASE:
            return (cohort.matches([p], event) and
                    not star_read(p, flat.get(p.attribute)))
        if p.op in STAR_ERRS and star_read(
                p, flat.get(p.attribute)):
            return True
    return other_type(p, flat) or cohort.matches([p], event)


def star_read(p: pb.Predicate, value: Any) -> bool:
    """Whether Event Ruler's erring reading of `p` (ruler_star_defect)
    takes `value`."""
    if not isinstance(value, str):
        return False
    operands = ([p.string_value] if p.WhichOneof("operand") ==
                "string_value" else list(p.string_values.values))
    v = value.encode()
    for o in operands:
        if p.op in (pb.OP_PREFIX_IGNORE_CASE, pb.OP_SUFFIX_IGNORE_CASE):
            # The same error from the end it reads first: prefix
            # equals-ignore-case "ab" reads as "*b...", suffix " E" as
            # "... *" (measured: with '*...' wildcards loaded, suffix
            # equals-ignore-case " E" matches "Type F"; alone, it does not).
            text = o.decode().lower()
            low = value.lower()
            if len(low) >= len(text) and (
                    low[1:].startswith(text[1:])
                    if p.op == pb.OP_PREFIX_IGNORE_CASE
                    else low[:-1].endswith(text[:-1])):
                return True
        elif p.op in (pb.OP_EQUALS_IGNORE_CASE,
                      pb.OP_NOT_EQUALS_IGNORE_CASE):
            text = o.decode()
            if len(value) >= len(text) and value.lower().endswith(
                    text[1:].lower()):
                return True
        elif o:
            last = len(o.decode()[-1].encode())
            keep = len(o) - last + 1  # through the last one's first byte
            if last > 1 and len(v) >= len(o) and v[len(v) - len(o):][
                    :keep] == o[:keep]:
                return True
    return False


def star_wildcard_paths(rules: List[str]) -> Set[str]:
    """The fields some pattern gives a wildcard starting with '*'."""
    paths: Set[str] = set()

    def walk(node: Any, path: str) -> None:
        if isinstance(node, list):  # a field's conditions
            for item in node:
                if isinstance(item, dict) and str(
                        item.get("wildcard", "")).startswith("*"):
                    paths.add(path)
        elif isinstance(node, dict):  # fields
            for key, value in node.items():
                if key == "$or":  # entries at this level, "$or" no step
                    for entry in value:
                        walk(entry, path)
                else:
                    walk(value, f"{path}.{key}" if path else key)

    for rule in rules:
        walk(json.loads(rule), "")
    return paths


def classify(kind: str, f: cohort.Filter, doc: Dict[str, Any],
             star_paths: Set[str]) -> str:
    """Why Cohort's answer for (f, doc) differs from Event Ruler's:
    "typed" (the documented difference), "ruler" (Event Ruler's own
    error) or "" (not documented). `kind` is "ruler only" (Event Ruler
    matched, Cohort did not) or "cohort only". The module's docstring
    gives the rule."""
    conjunctions = f.conjunctions()
    reference = any(cohort.matches(f, reading_event(flat))
                    for flat in readings(doc))
    if kind == "ruler only" and not reference:
        if any(typed_anything_but(c, doc) for c in conjunctions):
            return "typed"
        if any(ruler_star_defect(c, doc, star_paths) for c in conjunctions):
            return "ruler"
    if kind == "cohort only" and reference and (
            ruler_star_exclusion(conjunctions, doc, star_paths) or
            ruler_or_overlap(f, doc)):
        return "ruler"
    return ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--target", required=True)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--show", type=int, default=10)
    args = parser.parse_args()
    with open(os.path.join(args.dir, "rules.jsonl"), encoding="utf-8") as f:
        rules = [line for line in f if line.strip()]
    with open(os.path.join(args.dir, "events.jsonl"), encoding="utf-8") as f:
        events = [json.loads(line) for line in f if line.strip()]
    ruler: Dict[int, Set[int]] = {}
    with open(os.path.join(args.dir, "ruler.tsv"), encoding="utf-8") as f:
        for line in f:
            number, _, ids = line.rstrip("\n").partition("\t")
            ruler[int(number)] = {int(i) for i in ids.split(",") if i}
    with open(os.path.join(args.dir, "ruler.tsv.refused"),
              encoding="utf-8") as f:
        ruler_refused = {int(line.split("\t")[0]) for line in f if line.strip()}

    client = cohort.Client(args.target)
    rule_of: Dict[int, int] = {}
    lowered: Dict[int, cohort.Filter] = {}
    refused: List[str] = []
    batch: List[Any] = []
    indexes: List[int] = []

    def flush() -> None:
        ids = client.subscribe("ruler", *batch)
        for sid, i in zip(ids, indexes):
            rule_of[sid] = i
        batch.clear()
        indexes.clear()

    for i, rule in enumerate(rules):
        if i in ruler_refused:
            continue
        try:
            lowered[i] = client.parse_filter(rule)
        except cohort.InvalidArgument as error:
            refused.append(f"rule {i}: {error.details}")
            continue
        batch.append(lowered[i])
        indexes.append(i)
        if len(batch) == 500:
            flush()
    if batch:
        flush()

    live = set(rule_of.values())
    star_paths = star_wildcard_paths([rules[i] for i in live])
    pairs = matches = documented = ruler_defect = 0
    kinds = {"cohort only": 0, "ruler only": 0}
    lines: List[str] = []
    for start in range(0, len(events), 100):
        chunk = events[start:start + 100]
        results = client.publish(
            [pb.Event(json=json.dumps(e).encode()) for e in chunk],
            return_ids=True)
        for k, result in enumerate(results):
            e = start + k
            ours = {rule_of[s] for s in result.subscription_ids if s in rule_of}
            theirs = ruler.get(e, set()) & live
            pairs += len(live)
            matches += len(theirs)
            for kind, diff in (("cohort only", ours - theirs),
                               ("ruler only", theirs - ours)):
                for r in sorted(diff):
                    why = classify(kind, lowered[r], chunk[k], star_paths)
                    if why == "typed":
                        documented += 1
                        continue
                    if why == "ruler":
                        ruler_defect += 1
                        continue
                    kinds[kind] += 1
                    lines.append(f"{kind}\tevent {e}\trule {r}\t"
                                 f"{json.dumps(events[e], ensure_ascii=False)}"
                                 f"\t{rules[r].strip()}")
    with open(os.path.join(args.dir, "disagreements.tsv"), "w",
              encoding="utf-8") as f:
        f.writelines(text + "\n" for text in lines)
    print(f"rules {len(rules)} (refused: by Event Ruler "
          f"{len(ruler_refused)}, then by Cohort {len(refused)}), events "
          f"{len(events)}: {pairs} (pattern, event) pairs, {matches} "
          f"matches by Event Ruler; documented disagreements (anything-but "
          f"across types): {documented}; Event Ruler's own errors "
          f"(a \"$or\" entry sharing a value with an earlier one; "
          f"equals-ignore-case, its anything-but, or suffix beside a "
          f"'*...' wildcard): "
          f"{ruler_defect}; "
          f"other disagreements: {len(lines)} ("
          + ", ".join(f"{k} {v}" for k, v in kinds.items()) + ")")
    for why in refused[:args.show]:
        print("refused:", why)
    for text in lines[:args.show]:
        print(text)
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
