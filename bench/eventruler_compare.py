#!/usr/bin/env python3
"""Cohort's side of bench/eventruler.sh: the same patterns and events.

    eventruler_compare.py --target=HOST:PORT --dir=DIR

Subscribes every pattern of DIR/rules.jsonl as it is written (ParseFilter
lowers it, Subscribe adds it), publishes every event of DIR/events.jsonl
flattened into attributes named by path (what JSON events will do in the
server), and compares each event's matches with Event Ruler's answers in
DIR/ruler.tsv ("EVENT\\tR1,R2,..."). Prints the pairs compared, the
matches, the disagreements by kind (the first few in full), and writes
them all to DIR/disagreements.tsv. Exits 1 if there is any that is not
documented.

Documented (README's table; docs/DESIGN.md section 1.6): Event Ruler's
anything-but holds for a value of the other type (anything-but 503 holds
for the string "301"), where Cohort's NE and NOT_IN hold only for values
of their operand's type. A disagreement counts as that one only if it is
exactly that: Event Ruler matched, and Cohort's reference matcher
(cohort.matches) matches once the NE and NOT_IN predicates whose operand
type differs from the event's value are left out.
"""

import argparse
import json
import os
import sys
from typing import Any, Dict, List, Set

import cohort
from cohort.v1 import pubsub_pb2 as pb
from eventruler_workload import flatten  # beside this script


def typed_anything_but(predicates: List[pb.Predicate],
                       flat: Dict[str, Any]) -> bool:
    """Whether Cohort misses this match only by the documented typing rule."""
    def other_type(p: pb.Predicate) -> bool:
        if p.op not in (pb.OP_NE, pb.OP_NOT_IN) or p.attribute not in flat:
            return False
        kind = p.WhichOneof("operand")
        string_operand = kind in ("string_value", "string_values")
        return isinstance(flat[p.attribute], str) != string_operand

    relaxed = [p for p in predicates if not other_type(p)]
    return len(relaxed) < len(predicates) and cohort.matches(relaxed, flat)


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
    lowered: Dict[int, List[pb.Predicate]] = {}
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
            predicates = client.parse_filter(rule)
        except cohort.InvalidArgument as error:
            refused.append(f"rule {i}: {error.details}")
            continue
        lowered[i] = predicates
        batch.append(predicates)
        indexes.append(i)
        if len(batch) == 500:
            flush()
    if batch:
        flush()

    live = set(rule_of.values())
    pairs = matches = documented = 0
    kinds = {"cohort only": 0, "ruler only": 0}
    lines: List[str] = []
    for start in range(0, len(events), 100):
        chunk = [flatten(e) for e in events[start:start + 100]]
        results = client.publish(chunk, return_ids=True)
        for k, result in enumerate(results):
            e = start + k
            ours = {rule_of[s] for s in result.subscription_ids if s in rule_of}
            theirs = ruler.get(e, set()) & live
            pairs += len(live)
            matches += len(theirs)
            for kind, diff in (("cohort only", ours - theirs),
                               ("ruler only", theirs - ours)):
                for r in sorted(diff):
                    if kind == "ruler only" and typed_anything_but(
                            lowered[r], chunk[k]):
                        documented += 1
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
          f"across types): {documented}; other disagreements: {len(lines)} ("
          + ", ".join(f"{k} {v}" for k, v in kinds.items()) + ")")
    for why in refused[:args.show]:
        print("refused:", why)
    for text in lines[:args.show]:
        print(text)
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
