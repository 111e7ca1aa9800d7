#!/usr/bin/env python3
"""Paired ratios between two configurations of one preemption probe run.

usage: ratios.py PROBE_JSON A/B [A/B ...]

For each A/B, the median, min and max over rounds of A's events/s over
B's in the same round (locality_probe --preemption output).
"""
import json
import statistics
import sys


def main():
    configs = json.load(open(sys.argv[1]))["configs"]
    for pair in sys.argv[2:]:
        a, b = pair.split("/")
        if a not in configs or b not in configs:
            continue
        r = [x / y for x, y in zip(configs[a]["events_per_s"],
                                   configs[b]["events_per_s"])]
        print(f"{a} / {b}: median {statistics.median(r):.3f} "
              f"min {min(r):.3f} max {max(r):.3f}")


if __name__ == "__main__":
    main()
