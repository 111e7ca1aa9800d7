#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (tools/fuzz/README.md).

    tools/fuzz/make_seeds.py [--store_dirs=DIR,DIR,...]

Deterministic: running it again writes the same files. It writes
  matcher/testdata/index_fuzzer/seed-*       op sequences in the target's format
  service/model/testdata/validation_fuzzer/seed-*  requests encoded by protoc --encode
  service/model/testdata/parse_fuzzer/seed-*        CLI subscriptions, Event Ruler
      patterns and events
  service/storage/testdata/store_fuzzer/seed-*       only with --store_dirs: real
      --data_dir folders written by cohortd, packed in the target's format,
      plus torn and corrupted copies of their newest journal or snapshot.
Files not named seed-* (crash reproducers, merged inputs) are left alone.
"""

import os
import random
import re
import struct
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def write(folder, name, data):
    path = os.path.join(ROOT, folder)
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "seed-" + name), "wb") as f:
        f.write(data)


def index_seeds():
    """Op sequences: op byte, then the fields index_fuzzer.cc decodes."""
    rng = random.Random(5)

    def value():
        kind = rng.randrange(4)
        if kind == 0:
            return bytes([0, rng.randrange(16)])
        if kind == 1:
            return bytes([1, rng.randrange(256)])
        if kind == 2:
            return bytes([2, rng.randrange(7)])
        return bytes([3]) + struct.pack("<q", rng.randrange(-2**63, 2**63))

    def add():
        out = bytes([0, rng.randrange(32), 1 + rng.randrange(4)])
        for _ in range(out[2]):
            op = rng.randrange(7)
            out += bytes([rng.randrange(6), op]) + value()
            if op == 6:  # BETWEEN: an upper bound and the swap byte
                out += value() + bytes([1])
        return out

    def match(events):
        out = bytes([3, events - 1])
        for _ in range(events):
            mask = rng.randrange(64)
            out += bytes([mask])
            out += b"".join(value() for _ in range(bin(mask).count("1")))
        return out

    for n, (subs, events) in enumerate([(4, 1), (16, 8), (40, 64), (60, 70)]):
        data = b"".join(add() for _ in range(subs))
        data += match(events)
        data += b"".join(bytes([2, rng.randrange(32)]) for _ in range(subs // 4))
        data += match(events)
        write("matcher/testdata/index_fuzzer", f"{n}", data)


def encode(message, text):
    proto = "proto/cohort/v1/pubsub.proto"
    return subprocess.run(
        ["protoc", f"--encode=cohort.v1.{message}", "-I", ROOT, proto],
        input=text.encode(), capture_output=True, check=True, cwd=ROOT).stdout


def validation_seeds():
    """[limits byte] then [kind byte][2-byte length][request] sections."""
    subscribe = encode("SubscribeRequest", """
      subscriptions { subscriber: "alice"
        predicates { attribute: "price" op: OP_LE value: 500 }
        predicates { attribute: "kind" op: OP_EQ value: 7 } }
      subscriptions { subscriber: "bob"
        predicates { attribute: "x" op: OP_BETWEEN value: -5 upper: 9 }
        predicates { attribute: "y" op: OP_NE value: 3 } }
      subscriptions { subscriber: "carol"
        predicates { attribute: "price" op: OP_GT value: -9223372036854775808 } }
    """)
    bad_subscribe = encode("SubscribeRequest", """
      subscriptions { subscriber: "dave"
        predicates { attribute: "9bad" op: OP_EQ value: 1 } }
    """)
    publish = encode("PublishRequest", """
      events { attributes { name: "price" value: 420 }
               attributes { name: "kind" value: 7 } payload: "hello" }
      events { attributes { name: "x" value: 0 } attributes { name: "y" value: 4 }
               attributes { name: "unknown" value: 1 } }
      return_ids: true
    """)
    unsubscribe = encode("UnsubscribeRequest", "subscription_ids: [2, 99]")
    listen = encode("ListenRequest", 'subscriber: "alice"')

    def section(kind, data):
        return bytes([kind]) + struct.pack("<H", len(data)) + data

    for limits in (0, 1):
        data = bytes([limits]) + section(0, subscribe) + section(2, publish)
        data += section(1, unsubscribe) + section(2, publish)
        data += section(3, listen) + section(0, bad_subscribe)
        write("service/model/testdata/validation_fuzzer", f"session-{limits}", data)

    # Issue 44's string operators, with events that hold and fail each; one
    # group per session, so that the derived names fit the target's small
    # name dictionary.
    groups = {
        "wildcard": (r"""
          subscriptions { subscriber: "erin"
            predicates { attribute: "f" op: OP_WILDCARD string_value: "a*a" } }
          subscriptions { subscriber: "erin"
            predicates { attribute: "f" op: OP_WILDCARD string_value: "im*g" } }
        """, ["a", "aba", "img", "imgg", "im"]),
        "affixes": (r"""
          subscriptions { subscriber: "erin"
            predicates { attribute: "f" op: OP_SUFFIX string_value: ".png" }
            predicates { attribute: "f" op: OP_NOT_PREFIX string_value: "tmp" }
            predicates { attribute: "f" op: OP_NOT_SUFFIX string_value: "~" } }
          subscriptions { subscriber: "frank"
            predicates { attribute: "f" op: OP_EQUALS_IGNORE_CASE
                         string_value: "Caf\303\251" } }
        """, ["a.png", "tmp.png", "x.png~", "CAF\\303\\211", "p"]),
        "cidr": (r"""
          subscriptions { subscriber: "erin"
            predicates { attribute: "f" op: OP_CIDR string_value: "10.0.0.0/8" } }
          subscriptions { subscriber: "erin"
            predicates { attribute: "f" op: OP_CIDR
                         string_value: "2001:db8::8000:0:0:0/65" } }
        """, ["10.1.2.3", "11.0.0.1", "2001:db8::8000:0:0:1",
              "2001:db9::8000:0:0:1", "::ffff:10.1.2.3"]),
    }
    bad_filters = encode("SubscribeRequest", r"""
      subscriptions { subscriber: "gina"
        predicates { attribute: "f" op: OP_WILDCARD string_value: "a*b*c" } }
    """)
    for name, (text, values) in groups.items():
        filters = encode("SubscribeRequest", text)
        events = encode("PublishRequest", "".join(
            f'events {{ attributes {{ name: "f" string_value: "{v}" }} }}\n'
            for v in values))
        data = bytes([0]) + section(0, filters) + section(2, events)
        data += section(0, bad_filters) + section(2, events)
        write("service/model/testdata/validation_fuzzer", f"filters-{name}",
              data)

    # JSON events (Event.json): arrays, arrays of objects kept together,
    # literals, a document beside an attribute; and ones refused.
    json_filters = encode("SubscribeRequest", r"""
      subscriptions { subscriber: "hal"
        predicates { attribute: "o.p" op: OP_EQ value: 1 }
        predicates { attribute: "o.q" op: OP_EQ string_value: "b" } }
      subscriptions { subscriber: "hal"
        predicates { attribute: "t" op: OP_NE string_value: "a" } }
      subscriptions { subscriber: "hal"
        predicates { attribute: "n" op: OP_NOT_EXISTS } }
    """)
    documents = [
        '{"o": [{"p": 1, "q": "a"}, {"p": 2, "q": "b"}], "t": ["a", "b"]}',
        '{"o": {"p": 1, "q": "b"}, "t": [["a"], []], "n": null}',
        '{"o": [{"p": 1.5}, {}], "t": "a", "x": [true, false]}',
        '{"o": {"p": 1, "p": 2}}',
        '{"a.b": 1, "a": {"b": 2}}',
        '{"t": [1, 2, 3, 4, 5, 6, 7], "o": [{"p": 1}, {"p": 2}]}',
    ]
    json_events = encode("PublishRequest", "".join(
        "events { json: '" + d + "' }\n" for d in documents[:3]) +
        'events { attributes { name: "n" value: 3 } json: \'{"t": "c"}\' }\n')
    for k, d in enumerate(documents[3:]):
        bad = encode("PublishRequest", "events { json: '" + d + "' }")
        for limits in (0, 1):
            data = bytes([limits]) + section(0, json_filters)
            data += section(2, json_events) + section(2, bad)
            write("service/model/testdata/validation_fuzzer",
                  f"json-{k}-{limits}", data)


    # "Or" (any_of): branches that match together, a group of existence
    # tests, an expansion past the small limits' --max_or_expansion (4).
    or_filters = encode("SubscribeRequest", r"""
      subscriptions { subscriber: "ivy"
        predicates { attribute: "k" op: OP_EQ value: 1 }
        any_of {
          alternatives { predicates { attribute: "a" op: OP_EQ value: 1 } }
          alternatives { predicates { attribute: "b" op: OP_EQ string_value: "x" }
                         predicates { attribute: "a" op: OP_NE value: 1 } } } }
      subscriptions { subscriber: "ivy"
        any_of {
          alternatives { predicates { attribute: "a" op: OP_GE value: 0 } }
          alternatives { predicates { attribute: "b" op: OP_PREFIX string_value: "x" } } }
        any_of {
          alternatives { predicates { attribute: "k" op: OP_EXISTS } }
          alternatives { predicates { attribute: "k" op: OP_NOT_EXISTS } } } }
    """)
    or_over = encode("SubscribeRequest", r"""
      subscriptions { subscriber: "ivy"
        any_of {
          alternatives { predicates { attribute: "a" op: OP_EQ value: 1 } }
          alternatives { predicates { attribute: "a" op: OP_EQ value: 2 } }
          alternatives { predicates { attribute: "a" op: OP_EQ value: 3 } } }
        any_of {
          alternatives { predicates { attribute: "k" op: OP_EQ value: 1 } }
          alternatives { predicates { attribute: "k" op: OP_EQ value: 2 } } } }
    """)
    or_events = encode("PublishRequest", r"""
      events { attributes { name: "k" value: 1 } attributes { name: "a" value: 1 }
               attributes { name: "b" string_value: "x" } }
      events { attributes { name: "k" value: 1 } attributes { name: "a" value: 2 }
               attributes { name: "b" string_value: "xy" } }
      events { attributes { name: "a" value: -1 } }
      events { json: '{"k": 1, "a": [1, 2], "b": ["x", "z"]}' }
      return_ids: true
    """)
    for limits in (0, 1):
        data = bytes([limits]) + section(0, or_filters) + section(2, or_events)
        data += section(0, or_over) + section(1, encode(
            "UnsubscribeRequest", "subscription_ids: [1]"))
        data += section(2, or_events)
        write("service/model/testdata/validation_fuzzer", f"or-{limits}",
              data)


def parse_seeds():
    """[parser byte: 0 subscription, 1 event] then the text."""
    subscriptions = [
        "price <= 500 and kind = 7",
        "x between -5 and 9, y != 3 && z in [1, 5]",
        "a in 1..1_000_000 AND b ge +3 and c <> -9223372036854775808",
        "and = 1 and between = 2",
        "price is 5",
        "x between 5 and 1",
        "caf\u00e9 = 1",
        'f suffix ".png" and f not prefix "tmp" and f not suffix "~"',
        'n equals-ignore-case "Alice" and ip cidr "10.0.0.0/8"',
        'f wildcard "img-*.png" and f not 5',
    ]
    # Event Ruler patterns (a subscription text starting with '{').
    patterns = [
        '{"source": ["aws.ec2"], "detail": {"state": ["running", "stopped"]}}',
        '{"time": [{"prefix": "2017"}], "d": {"c": [{"numeric": [">", 0, '
        '"<=", 5]}], "x": [{"anything-but": [100, 200]}], "ip": [{"cidr": '
        '"10.0.0.0/8"}], "e": [{"exists": false}]}}',
        '{"s": [{"anything-but": {"equals-ignore-case": ["a", "B"]}}], '
        '"f": [{"wildcard": "a*b*c"}], "p": [{"anything-but": {"prefix": ""}}]}',
        '{"n": [3.0e2, -0.0], "m": [{"numeric": [">=", 1, "<=", 5]}]}',
        '{"$or": [{"a": [1]}, {"b": [2]}], "c": [true, 1.5, "x"]}',
        '{"a": [1], "a": [2], "u": ["\\u00e9\\ud83d\\ude00"]}',
    ]
    subscriptions += patterns
    events = ["price=420 kind=7", "price = 420, kind = 7", "a=1 a=2", "x=", "y=9223372036854775807"]
    for i, text in enumerate(subscriptions):
        write("service/model/testdata/parse_fuzzer", f"subscription-{i}", b"\0" + text.encode())
    for i, text in enumerate(events):
        write("service/model/testdata/parse_fuzzer", f"event-{i}", b"\1" + text.encode())


# store_fuzzer.cc's file names, by index.
STORE_NAMES = ["snapshot-1", "snapshot-2", "snapshot-3", "journal-1",
               "journal-2", "journal-3", "snapshot-4.tmp", "notes.txt"]


def pack_store(files):
    out = b""
    for name, data in files:
        out += bytes([STORE_NAMES.index(name)]) + struct.pack("<H", len(data)) + data
    return out


def store_seeds(dirs):
    """Real data dirs; generations are renumbered from 1 in order."""
    for n, folder in enumerate(dirs):
        entries = sorted(os.listdir(folder))
        generations = sorted({int(m.group(1)) for e in entries
                              if (m := re.match(r"(?:snapshot|journal)-(\d+)$", e))})
        renumber = {g: i + 1 for i, g in enumerate(generations)}
        files = []
        for e in entries:
            m = re.match(r"(snapshot|journal)-(\d+)$", e)
            if m:
                with open(os.path.join(folder, e), "rb") as f:
                    files.append((f"{m.group(1)}-{renumber[int(m.group(2))]}", f.read()))
        files.sort(key=lambda f: (f[0].split("-")[1], f[0]))
        write("service/storage/testdata/store_fuzzer", f"{n}", pack_store(files))
        name, data = files[-1]
        if len(data) > 8:
            torn = files[:-1] + [(name, data[:-3])]
            write("service/storage/testdata/store_fuzzer", f"{n}-torn", pack_store(torn))
            flipped = bytearray(data)
            flipped[len(data) // 2] ^= 0x20
            write("service/storage/testdata/store_fuzzer", f"{n}-flipped",
                  pack_store(files[:-1] + [(name, bytes(flipped))]))


def main():
    store_dirs = []
    for arg in sys.argv[1:]:
        if arg.startswith("--store_dirs="):
            store_dirs = [d for d in arg.split("=", 1)[1].split(",") if d]
        else:
            sys.exit(f"make_seeds.py: unknown argument {arg}")
    index_seeds()
    validation_seeds()
    parse_seeds()
    store_seeds(store_dirs)


if __name__ == "__main__":
    main()
