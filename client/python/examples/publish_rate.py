"""Publishes N events over PublishStream and prints the rate (events/s).

    python examples/publish_rate.py --target=127.0.0.1:50051 --events=200000 \\
        --batch=64 --window=16 [--subscriptions=5000] [--prebuilt]

Events carry two int and two string attributes (price, kind, region, type),
drawn from a pool of 4,096 generated before the clock starts. By default
each is given to publish_stream as a dict, so the time includes the
client's conversion to protobuf (its hot path); --prebuilt builds the
PublishRequests first and times the stream alone. --subscriptions=N adds N
random subscriptions (subscriber "publish-rate") first and removes them at
the end. --workload=FILE publishes the events of a workload file written by
`cohort workload --out=FILE` (the `E` lines of its v1 text format, the
fabret presets) instead, cycling through them, so that the rate compares
with `cohort load --workload=FILE` on the same server. Prints events/s,
matches per event and the client's CPU use (near 100% means the client, not
the server, is the bottleneck).
"""

from __future__ import annotations

import argparse
import itertools
import random
import time
from typing import Iterator, List

import cohort
from cohort import F, Filter

REGIONS = ["eu-west", "eu-north", "us-east", "us-west", "ap-south", "ap-east"]
TYPES = ["order", "quote", "trade", "cancel"]
POOL = 4096


def random_event(rng: random.Random) -> cohort.EventLike:
    return {
        "price": rng.randrange(1000),
        "kind": rng.randrange(16),
        "region": rng.choice(REGIONS),
        "type": rng.choice(TYPES)
    }


def random_filter(rng: random.Random) -> Filter:
    low = rng.randrange(1000)
    f = F("price").between(low, low + rng.randrange(1, 200))
    if rng.random() < 0.5:
        f = f & (F("kind") == rng.randrange(16))
    if rng.random() < 0.5:
        f = f & F("region").isin(rng.sample(REGIONS, 2))
    if rng.random() < 0.3:
        f = f & (F("type") == rng.choice(TYPES))
    return f


def workload_events(path: str) -> List[cohort.EventLike]:
    """The events of a `cohort workload` v1 file: `E n name value ...`."""
    events: List[cohort.EventLike] = []
    with open(path, encoding="utf-8") as f:
        first = f.readline()
        if not first.startswith("# cohort-workload v1 "):
            raise SystemExit(f"{path}: not a cohort-workload v1 file "
                             "(the fabret presets; events-1m is v2)")
        for number, line in enumerate(f, start=2):
            fields = line.split()
            if not fields or fields[0] != "E":
                continue
            count = int(fields[1])
            if len(fields) != 2 + 2 * count:
                raise SystemExit(f"{path}:{number}: expected {count} pairs")
            events.append({
                fields[i]: int(fields[i + 1])
                for i in range(2, len(fields), 2)
            })
    if not events:
        raise SystemExit(f"{path}: no events")
    return events


def subscribe(client: cohort.Client, count: int,
              rng: random.Random) -> List[int]:
    ids: List[int] = []
    for start in range(0, count, 1000):
        filters = [random_filter(rng) for _ in range(min(1000, count - start))]
        ids += client.subscribe("publish-rate",
                                filters[0],
                                *filters[1:],
                                timeout=60)
    return ids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default="127.0.0.1:50051")
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--batch",
                        type=int,
                        default=cohort.DEFAULT_BATCH,
                        help="events per PublishRequest")
    parser.add_argument("--window",
                        type=int,
                        default=cohort.DEFAULT_WINDOW,
                        help="requests in flight")
    parser.add_argument(
        "--subscriptions",
        type=int,
        default=0,
        help="random subscriptions to add first (removed at the end)")
    parser.add_argument("--prebuilt",
                        action="store_true",
                        help="build the PublishRequests before timing")
    parser.add_argument("--ids",
                        action="store_true",
                        help="ask for the matched ids")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workload",
                        help="publish the events of this `cohort workload` "
                        "file (v1 format)")
    args = parser.parse_args()

    rng = random.Random(args.seed)
    pool = (workload_events(args.workload) if args.workload else
            [random_event(rng) for _ in range(POOL)])
    with cohort.Client(args.target) as client:
        ids = subscribe(client, args.subscriptions,
                        rng) if args.subscriptions else []
        try:
            events: Iterator[cohort.StreamItem] = itertools.islice(
                itertools.cycle(pool), args.events)
            if args.prebuilt:
                events = iter(
                    cohort.publish_requests(events, args.batch, args.ids))
            wall, cpu = time.perf_counter(), time.process_time()
            results = client.publish_stream(events,
                                            batch=args.batch,
                                            window=args.window,
                                            return_ids=args.ids)
            count = matches = 0
            for result in results:
                count += 1
                matches += result.match_count
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        finally:
            if ids:
                client.unsubscribe(ids, timeout=60)
    prebuilt = ", prebuilt requests" if args.prebuilt else ""
    print(f"published {count} events in {wall:.2f} s: "
          f"{count / wall:,.0f} events/s (batch {args.batch}, "
          f"window {args.window}{prebuilt}); "
          f"{matches / max(count, 1):.2f} matches/event; "
          f"client CPU {100 * cpu / wall:.0f}%")


if __name__ == "__main__":
    main()
