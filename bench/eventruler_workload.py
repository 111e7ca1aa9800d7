#!/usr/bin/env python3
"""Event Ruler patterns and JSON events for bench/eventruler.sh.

    bench/eventruler_workload.py --rules=N --events=M --seed=S --out=DIR

writes DIR/rules.jsonl (one pattern per line), DIR/events.jsonl (one
JSON event per line) and DIR/events.txt (the same events flattened into
attributes named by path, in the CLI's grammar: what Cohort is sent until
it takes JSON events), deterministic for a seed. Events look like
EventBridge's: a few top-level strings and a nested "detail" object of
strings and numbers, each field missing now and then; one field ("code")
is a number in some events and a string in others, and one ("amount") a
price in cents with a fraction (whole now and then). Patterns (pattern()
below) name 1 to 4 of those fields, most of them the event's source, and
use every operator Cohort lowers today (filter/pattern.h), in the mix of
OPERATORS; values are drawn from the events' own domains so that
patterns match. With --arrays=1 (the default) events also carry arrays
(ARRAY_FIELDS: a list of resource names, a list of tags that may nest
one, a list of item objects whose fields patterns name together, and
now and then detail.count as a list) and a true/false/null (detail.flag,
which patterns match as [true], [false], [null] or with exists); patterns
name those fields too (exists and its negation only on fields outside
arrays of objects: docs/DESIGN.md 1.7 says why). "Or" (issue 44;
filter/pattern.h): some patterns (OR_SHARE, 12%) add a "$or" of 2 or 3
entries, each naming 1 or 2 fields the pattern does not name beside it,
at the top level or under "detail"; some fields (MIXED_SHARE, 10%, inside
"$or" entries too) list several kinds of entry (mixed_list: values with a
condition, strings with numbers, a literal among values, two literals).
Wildcards: half of them have 2 or 3 stars (stars(): runs of a value
replaced, never "**"), and "anything-but-wildcard" excludes one or two
such patterns; prefix and suffix with equals-ignore-case inside too.
events.txt (the flattened events, for the timing path) is written only
without arrays.
"""

import argparse
import json
import os
import random

SOURCES = [f"app.svc{i:03d}" for i in range(100)]
TYPES = [f"Type {c}" for c in "ABCDEFGHIJ"]
REGIONS = ["us-east-1", "us-west-2", "eu-west-1", "eu-north-1", "ap-south-1",
           "ap-northeast-1", "sa-east-1", "ca-central-1"]
ACCOUNTS = [f"{100000000000 + 7919 * i:012d}" for i in range(50)]
STATES = ["running", "stopped", "pending", "initializing", "terminated",
          "rebooting"]
# Names whose letters have one lower and one upper form, so that Cohort's
# simple case folding and Event Ruler's case rules agree (docs/DESIGN.md
# section 1.6 names the letters where they differ).
NAMES = ["alice", "bob", "carol", "dave", "élodie", "zoë", "ñandú", "örjan",
         "eve", "mallory"]
PATHS = ["/api/v1/orders", "/api/v2/orders", "/api/v1/users", "/internal/x",
         "/internal/metrics", "/static/img-1.png", "/static/img-22.png",
         "/static/app.js", "/health"]
FILES = ["report", "img-7", "img-12", "data", "cat", "notes"]
EXTS = [".png", ".jpg", ".tmp", ".txt", ".png~", ""]
NETWORKS4 = ["10.0.0.0/8", "10.1.0.0/16", "192.168.0.0/16", "172.16.0.0/12",
             "10.1.2.0/24", "192.168.1.6/31"]
NETWORKS6 = ["2001:db8::/32", "2001:db8:1::/48", "fd00::/8"]

# (field path, type) of every event field.
FIELDS = [
    ("source", "str"), ("detail-type", "str"), ("region", "str"),
    ("account", "str"), ("detail.state", "str"), ("detail.count", "int"),
    ("detail.price", "int"), ("detail.user.name", "str"),
    ("detail.user.tier", "int"), ("detail.path", "str"),
    ("detail.file", "str"), ("detail.ip", "str"), ("detail.code", "mixed"),
    ("detail.amount", "dec"),
]

# Fields whose values are lists (--arrays=1): resources, tags, and the
# fields of the item objects of detail.items.
RESOURCES = [f"arn:aws:ec2:{r}:123456789012:instance/i-{k:04x}"
             for r in REGIONS[:3] for k in range(4)]
TAGS = ["prod", "staging", "blue", "green", "pci", "batch", "web", "db"]
SKUS = [f"sku-{c}{n}" for c in "abc" for n in range(4)]
ARRAY_FIELDS = [
    ("resources", "str"), ("detail.tags", "str"),
    ("detail.items.sku", "str"), ("detail.items.qty", "int"),
    ("detail.items.unit", "dec"), ("detail.flag", "lit"),
]

# Operators and their weights (percent); each applies to some field types.
OPERATORS = [
    ("exact", 20, {"str", "int", "mixed", "dec", "lit"}),
    ("list", 14, {"str", "int", "mixed", "dec"}),
    ("prefix", 8, {"str"}),
    ("suffix", 6, {"str"}),
    ("equals-ignore-case", 6, {"str"}),
    ("wildcard", 5, {"str"}),
    ("cidr", 5, {"ip"}),
    ("exists", 4, {"str", "int", "mixed", "ip", "dec", "lit"}),
    ("not-exists", 4, {"str", "int", "mixed", "ip", "dec", "lit"}),
    ("numeric", 8, {"int", "dec"}),
    ("numeric-range", 8, {"int", "dec"}),
    ("anything-but", 5, {"str", "int", "mixed", "dec"}),
    ("anything-but-list", 3, {"str", "int", "mixed", "dec"}),
    ("anything-but-prefix", 2, {"str"}),
    ("anything-but-suffix", 1, {"str"}),
    ("anything-but-ignore-case", 1, {"str"}),
    ("anything-but-wildcard", 2, {"str"}),
    ("prefix-ignore-case", 2, {"str"}),
    ("suffix-ignore-case", 2, {"str"}),
]


def random_case(rng, s):
    return "".join(c.upper() if rng.random() < 0.3 else c for c in s)


def ip_address(rng):
    kind = rng.randrange(5)
    if kind == 0:
        return f"10.{rng.randrange(3)}.{rng.randrange(4)}.{rng.randrange(256)}"
    if kind == 1:
        return f"192.168.{rng.randrange(3)}.{rng.randrange(10)}"
    if kind == 2:
        return f"172.{rng.randrange(14, 34)}.0.{rng.randrange(256)}"
    if kind == 3:
        return f"2001:db8:{rng.randrange(3):x}::{rng.randrange(65536):x}"
    return f"fd{rng.randrange(256):02x}::1"


def field_value(rng, path):
    """A value of the field at `path`, as an event would carry it."""
    if path == "source":
        return rng.choice(SOURCES)
    if path == "detail-type":
        return rng.choice(TYPES)
    if path == "region":
        return rng.choice(REGIONS)
    if path == "account":
        return rng.choice(ACCOUNTS)
    if path == "detail.state":
        return rng.choice(STATES)
    if path == "detail.count":
        return rng.randrange(101)
    if path == "detail.price":
        return rng.randrange(-1000, 100001)
    if path == "detail.user.name":
        return random_case(rng, rng.choice(NAMES))
    if path == "detail.user.tier":
        return rng.randrange(1, 6)
    if path == "detail.path":
        return rng.choice(PATHS)
    if path == "detail.file":
        return rng.choice(FILES) + rng.choice(EXTS)
    if path == "detail.ip":
        return ip_address(rng)
    if path == "detail.code":
        code = rng.choice([200, 201, 301, 404, 500, 503])
        return code if rng.random() < 0.7 else str(code)
    if path in ("detail.amount", "detail.items.unit"):
        # A price in cents, now and then whole.
        cents = rng.randrange(-500, 10001)
        if rng.random() < 0.2:
            cents -= cents % 100
        return cents / 100
    if path == "resources":
        return rng.choice(RESOURCES)
    if path == "detail.tags":
        return rng.choice(TAGS)
    if path == "detail.items.sku":
        return rng.choice(SKUS)
    if path == "detail.items.qty":
        return rng.randrange(11)
    if path == "detail.flag":
        return rng.choice([True, False, None])
    raise ValueError(path)


def put(doc, path, value):
    parts = path.split(".")
    for p in parts[:-1]:
        doc = doc.setdefault(p, {})
    doc[parts[-1]] = value


def event(rng, arrays):
    doc = {}
    for path, _ in FIELDS:
        if rng.random() < 0.9:
            put(doc, path, field_value(rng, path))
    if not arrays:
        return doc
    if rng.random() < 0.9:
        put(doc, "resources", [field_value(rng, "resources")
                               for _ in range(rng.randrange(4))])
    if rng.random() < 0.9:
        tags = [field_value(rng, "detail.tags") for _ in range(rng.randrange(4))]
        if tags and rng.random() < 0.2:
            tags = [tags[:1], tags[1:]]  # an array of arrays: one list
        put(doc, "detail.tags", tags)
    if rng.random() < 0.9:
        items = []
        for _ in range(rng.randrange(1, 4)):
            item = {}
            for name in ("sku", "qty", "unit"):
                if rng.random() < 0.9:
                    item[name] = field_value(rng, f"detail.items.{name}")
            items.append(item)
        put(doc, "detail.items", items)
    if rng.random() < 0.5:
        put(doc, "detail.flag", field_value(rng, "detail.flag"))
    if "count" in doc.get("detail", {}) and rng.random() < 0.15:
        doc["detail"]["count"] = [doc["detail"]["count"],
                                  field_value(rng, "detail.count")]
    return doc


def int_domain(path):
    return {"detail.count": (0, 100), "detail.price": (-1000, 100000),
            "detail.user.tier": (1, 5), "detail.code": (200, 503),
            "detail.amount": (-500, 10000), "detail.items.qty": (0, 10),
            "detail.items.unit": (-500, 10000)}[path]


def affix(rng, s, front):
    n = rng.randrange(1, len(s) + 1) if s else 0
    return s[:n] if front else s[len(s) - n:]


def number(units, scale):
    """units / scale, an int when whole (as a pattern would write it)."""
    return units // scale if units % scale == 0 else units / scale


def condition(rng, path, kind, op):
    """The list of `path` for operator `op`."""
    if kind == "mixed":  # a number or its string, like the events
        def value():
            v = field_value(rng, path)
            return v
    elif kind in ("int", "dec"):
        def value():
            return field_value(rng, path)
    else:
        def value():
            v = field_value(rng, path)
            return v.lower() if path == "detail.user.name" else v
    if op == "exact":
        return [value()]
    if op == "list":
        values = [value() for _ in range(rng.randrange(2, 5))]
        if kind == "mixed":  # one type per list
            want = type(values[0])
            values = [v for v in values if type(v) is want]
        return values
    if op == "prefix":
        return [{"prefix": affix(rng, value(), True)}]
    if op == "suffix":
        return [{"suffix": affix(rng, value(), False)}]
    if op == "equals-ignore-case":
        return [{"equals-ignore-case": random_case(rng, value())}]
    if op == "wildcard":
        s = value()
        if len(s) < 2:
            return [s]
        if rng.random() < 0.5:  # one star
            i = rng.randrange(len(s) + 1)
            j = rng.randrange(i, len(s) + 1)
            return [{"wildcard": s[:i] + "*" + s[j:]}]
        return [{"wildcard": stars(rng, s)}]
    if op == "cidr":
        return [{"cidr": rng.choice(NETWORKS4 + NETWORKS6)}]
    if op == "exists":
        return [{"exists": True}]
    if op == "not-exists":
        return [{"exists": False}]
    lo, hi = int_domain(path) if kind in ("int", "mixed", "dec") else (0, 0)
    # Amounts in cents (dec): operands with fractions, or whole.
    scale = 100 if kind == "dec" else 1
    if op == "numeric":
        return [{"numeric": [rng.choice(["<", "<=", ">", ">=", "="]),
                             number(rng.randint(lo, hi), scale)]}]
    if op == "numeric-range":
        # Event Ruler refuses a range whose bottom is not below its top.
        a = rng.randint(lo, hi - 1)
        b = rng.randint(a + 1, hi)
        return [{"numeric": [rng.choice([">", ">="]), number(a, scale),
                             rng.choice(["<", "<="]), number(b, scale)]}]
    if op == "anything-but":
        return [{"anything-but": value()}]
    if op == "anything-but-list":
        values = [value() for _ in range(rng.randrange(2, 4))]
        if kind == "mixed":
            want = type(values[0])
            values = [v for v in values if type(v) is want]
        return [{"anything-but": values}]
    if op == "anything-but-prefix":
        return [{"anything-but": {"prefix": affix(rng, value(), True) or "x"}}]
    if op == "anything-but-suffix":
        return [{"anything-but": {"suffix": affix(rng, value(), False) or "x"}}]
    if op == "anything-but-ignore-case":
        return [{"anything-but": {"equals-ignore-case":
                                  random_case(rng, value())}}]
    if op in ("prefix-ignore-case", "suffix-ignore-case"):
        front = op == "prefix-ignore-case"
        return [{"prefix" if front else "suffix": {
            "equals-ignore-case": random_case(rng, affix(rng, value(), front))
            or "x"}}]
    if op == "anything-but-wildcard":
        patterns = [stars(rng, value()) for _ in range(rng.choice([1, 1, 2]))]
        return [{"anything-but": {"wildcard": patterns[0] if len(patterns) == 1
                                  else patterns}}]
    raise ValueError(op)


def stars(rng, s):
    """A pattern of 1 to 3 stars that `s` matches: runs of it replaced by
    '*', never two stars in a row (Event Ruler refuses "**"); the
    matching events come from the same values."""
    if len(s) < 2:
        return s + "*"
    cuts = sorted(rng.sample(range(len(s) + 1), min(len(s) + 1,
                                                   2 * rng.randint(1, 3))))
    out, last = [], 0
    for a, b in zip(cuts[::2], cuts[1::2]):
        out.append(s[last:a])
        last = b
    out.append(s[last:])
    # Between two stars a part must not be empty.
    parts = [out[0]] + [p for p in out[1:-1] if p] + [out[-1]]
    return "*".join(parts)


# The share of fields whose list mixes kinds of entry (mixed_list), and of
# patterns with a "$or" (or_group).
MIXED_SHARE = 0.10
OR_SHARE = 0.12


def mixed_list(rng, path, kind, names, weights):
    """A list of several kinds of entry for `path`, one "or" group: its
    values (one or a list) with one more entry of another kind, namely a
    condition of the field's operators (["running", {"prefix": "term"}]), a
    value of the other type (strings with numbers: [404, "500"]) or a
    literal ([..., null]); for the true/false/null field, two literals."""
    if kind == "lit":
        return rng.sample([True, False, None], 2)
    entries = condition(rng, path, kind, rng.choice(["exact", "list"]))
    how = rng.choice(["condition", "condition", "other type", "literal"])
    if how == "other type" and kind in ("int", "mixed", "dec"):
        v = entries[0]
        extra = [str(v)] if not isinstance(v, str) else [int(v)]
    elif how == "other type" and path == "account":  # digits, as a number
        extra = [int(field_value(rng, path))]
    elif how == "literal":
        extra = [rng.choice([True, False, None])]
    else:
        conditions = [(n, w) for n, w in zip(names, weights)
                      if n not in ("exact", "list")]
        op = rng.choices(*zip(*conditions))[0]
        extra = condition(rng, path, kind, op)
    entries = entries + extra
    rng.shuffle(entries)
    return entries


def field_condition(rng, path, kind):
    """The list of one field: an operator drawn from OPERATORS, or now and
    then (MIXED_SHARE) a mixed_list."""
    kind_for_ops = "ip" if path == "detail.ip" else kind
    ops = [(name, w) for name, w, kinds in OPERATORS
           if (kind_for_ops in kinds or (kind_for_ops == "ip" and
                                         "str" in kinds)) and not (
               path.startswith("detail.items.") and "exists" in name)]
    names, weights = zip(*ops)
    if rng.random() < MIXED_SHARE:
        return mixed_list(rng, path, kind, names, weights)
    op = rng.choices(names, weights)[0]
    return condition(rng, path, kind, op)


def or_group(rng, pool):
    """The entries of a "$or": 2 or 3 objects, each naming 1 or 2 of the
    (relative path, field path, type) in pool."""
    entries = []
    for _ in range(rng.choice([2, 2, 3])):
        entry = {}
        for rel, path, kind in rng.sample(pool, rng.choice([1, 1, 2])):
            put(entry, rel, field_condition(rng, path, kind))
        entries.append(entry)
    return entries


def pattern(rng, arrays):
    """Like an EventBridge rule: most (85%) name their source, one or two
    of the 100 sources, and then 0 to 3 other fields; the rest name 1 to 4
    fields of any kind. Some (OR_SHARE) add a "$or" of 2 or 3 entries, at
    the top level or under "detail", on fields the pattern does not name
    otherwise."""
    doc = {}
    all_fields = FIELDS + (ARRAY_FIELDS if arrays else [])
    if rng.random() < 0.85:
        sources = rng.sample(SOURCES, rng.choice([1, 1, 1, 2]))
        put(doc, "source", sources)
        fields = rng.sample(all_fields[1:], rng.randrange(0, 4))
        named = {"source"}
    else:
        fields = rng.sample(all_fields, rng.randrange(1, 5))
        named = set()
    for path, kind in fields:
        put(doc, path, field_condition(rng, path, kind))
        named.add(path)
    if rng.random() < OR_SHARE:
        under_detail = rng.random() < 0.5
        pool = [(path[len("detail."):] if under_detail else path, path, kind)
                for path, kind in all_fields if path not in named and (
                    path.startswith("detail.") or not under_detail)]
        put(doc, "detail.$or" if under_detail else "$or",
            or_group(rng, pool))
    return doc


def flatten(doc, prefix=""):
    out = {}
    for key, value in doc.items():
        name = f"{prefix}.{key}" if prefix else key
        if isinstance(value, dict):
            out.update(flatten(value, name))
        else:
            out[name] = value
    return out


def readings(value, path=""):
    """Every way to read a JSON value one array element at a time: a list
    of {path: scalar} (Event.json's rule, pubsub.proto; an empty array is
    one empty reading)."""
    if isinstance(value, dict):
        out = [{}]
        for key, v in value.items():
            name = f"{path}.{key}" if path else key
            out = [{**a, **b} for a in out for b in readings(v, name)]
        return out
    if isinstance(value, list):
        return [r for v in value for r in readings(v, path)] or [{}]
    return [{path: value}]


def grammar_string(value):
    """A string literal of the CLI's grammar (filter/parse.h FormatString)."""
    out = []
    for byte in value.encode():
        c = chr(byte)
        if c in '"\\':
            out.append("\\" + c)
        elif 0x20 <= byte <= 0x7E:
            out.append(c)
        else:
            out.append(f"\\x{byte:02X}")
    return '"' + "".join(out) + '"'


def event_text(doc):
    return ", ".join(
        f"{name} = {grammar_string(v) if isinstance(v, str) else v}"
        for name, v in flatten(doc).items())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rules", type=int, default=2000)
    parser.add_argument("--events", type=int, default=200)
    parser.add_argument("--seed", type=int, default=44)
    parser.add_argument("--arrays", type=int, default=1)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rng = random.Random(args.seed)
    with open(os.path.join(args.out, "rules.jsonl"), "w",
              encoding="utf-8") as f:
        for _ in range(args.rules):
            f.write(json.dumps(pattern(rng, args.arrays),
                               ensure_ascii=False) + "\n")
    text_path = os.path.join(args.out, "events.txt")
    with open(os.path.join(args.out, "events.jsonl"), "w",
              encoding="utf-8") as f, open(
                  text_path if not args.arrays else os.devnull, "w",
                  encoding="utf-8") as text:
        for _ in range(args.events):
            doc = event(rng, args.arrays)
            f.write(json.dumps(doc, ensure_ascii=False) + "\n")
            text.write(event_text(doc) + "\n")


if __name__ == "__main__":
    main()
