#!/usr/bin/env python3
"""Summarises a bench/service_bench.sh result folder as Markdown."""
import glob
import json
import os
import statistics
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def main(folder):
    with open(os.path.join(folder, "matcher.json")) as f:
        matcher = [json.loads(line) for line in f if line.strip()]
    print(f"# cohortd on fabret-1m ({folder})\n")
    print("## Matcher alone (one thread, bench/matcher_bench)\n")
    print("| cohort_max | events/s median (min-max) |")
    print("|---|---|")
    by_cohort = {}
    for r in matcher:
        by_cohort[r["cohort_max"]] = r["events_per_s"]
        print(f"| {r['cohort_max']} | {r['events_per_s']:,.0f} "
              f"({r['events_per_s_min']:,.0f}-{r['events_per_s_max']:,.0f}) |")
    if matcher:
        print(f"\nworkload {matcher[0]['workload']} sha256 "
              f"{matcher[0]['workload_sha256']}, {matcher[0]['subscriptions']} "
              f"subscriptions; machine: {matcher[0]['machine']}")
    print("\n## Server\n")
    print("| mode | load s | stream events/s median (min-max) | "
          "vs matcher c64 | matches/event | p50/p99 ms at 50% | "
          "p50/p99 ms at 80% |")
    print("|---|---|---|---|---|---|---|")
    for mode in ("staged", "threaded"):
        streams = sorted(glob.glob(os.path.join(folder, f"{mode}_stream_*.json")))
        if not streams:
            continue
        rates = [load(f)["events_per_s"] for f in streams]
        median = statistics.median(rates)
        loaded = load(os.path.join(folder, f"{mode}_load.json")).get("load") or {}
        cells = []
        for percent in (50, 80):
            path = os.path.join(folder, f"{mode}_unary_{percent}.json")
            if os.path.exists(path):
                lat = load(path)["latency_us"]
                errors = load(path).get("errors") or {}
                note = f" ({sum(errors.values())} errors)" if errors else ""
                cells.append(f"{lat['p50'] / 1000:.2f} / {lat['p99'] / 1000:.2f}"
                             f"{note}")
            else:
                cells.append("-")
        ratio = median / by_cohort[64] if by_cohort.get(64) else float("nan")
        matches = load(streams[0])["matches_per_event"]
        print(f"| {mode} | {loaded.get('seconds', float('nan')):.2f} | "
              f"{median:,.0f} ({min(rates):,.0f}-{max(rates):,.0f}) | "
              f"{ratio:.2f}x | {matches:,.1f} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main(sys.argv[1])
