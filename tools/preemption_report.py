#!/usr/bin/env python3
"""Report of bench/preemption.sh: medians, spread and paired ratios.

    tools/preemption_report.py OUT CHECK

OUT/probe.json is bench/locality_probe --preemption's output (each
configuration's events/s, matches and steals per round). Writes
OUT/report.md and prints it. CHECK is "", LOOSE or REAL: with a bound, a
ratio below it fails (exit 1), as do configurations that disagree on the
matches.
"""

import json
import pathlib
import statistics
import sys

# (name, numerator, denominator, bounds by CHECK).
RATIOS = [
    ("p2 / p1 (2 cores against 1)", "p2", "p1", {}),
    ("p16 / p2 (16 threads on 2 cores)", "p16", "p2",
     {"LOOSE": 0.6, "REAL": 0.9}),
    ("p16-nosteal / p2 (the same without stealing)", "p16-nosteal", "p2", {}),
    ("p2-hog / p2 (partitioned, a hog on one core)", "p2-hog", "p2",
     {"LOOSE": 0.45, "REAL": 0.7}),
    ("p2-hog-nosteal / p2 (the same without stealing)", "p2-hog-nosteal",
     "p2", {}),
    ("c2-hog / c2 (2 copies: replicated, a hog on one core)", "c2-hog", "c2",
     {}),
    ("p2 / c2 (one index against 2 copies)", "p2", "c2", {}),
]


def main(argv):
    out = pathlib.Path(argv[1])
    check = argv[2] if len(argv) > 2 else ""
    probe = json.loads((out / "probe.json").read_text())
    configs = probe["configs"]
    lines = [(out / "meta.txt").read_text().rstrip(), ""]
    # With a one-thread configuration, each one's speedup over it, paired
    # by round (bench/device_scaling.sh copies).
    base = configs.get("p1")
    lines.append("| configuration | median events/s | min | max | "
                 "median steals |" + (" x p1, paired |" if base else ""))
    lines.append("|---|---:|---:|---:|---:|" + ("---:|" if base else ""))
    for name, c in configs.items():
        v = c["events_per_s"]
        row = (f"| {name} | {statistics.median(v):,.0f} | "
               f"{min(v):,.0f} | {max(v):,.0f} | "
               f"{statistics.median(c['steals']):,.0f} |")
        if base:
            pairs = [a / b for a, b in zip(v, base["events_per_s"])]
            row += f" {statistics.median(pairs):.2f}x |"
        lines.append(row)
    totals = sorted({m for c in configs.values() for m in c["matches"]})
    lines.append("")
    lines.append(f"matches per run: {totals} (one value: every configuration "
                 "found the same matches in every round)")
    lines.append("")
    lines.append("| ratio, paired by round | median | min | max | bound |")
    lines.append("|---|---:|---:|---:|---:|")
    failed = []
    for name, num, den, bounds in RATIOS:
        if num not in configs or den not in configs:
            continue
        pairs = [a / b for a, b in zip(configs[num]["events_per_s"],
                                       configs[den]["events_per_s"])]
        median = statistics.median(pairs)
        bound = bounds.get(check)
        mark = ""
        if bound is not None:
            mark = f">= {bound}"
            if median < bound:
                mark += " FAILED"
                failed.append(f"{name}: {median:.3f} < {bound}")
        lines.append(f"| {name} | {median:.3f} | {min(pairs):.3f} | "
                     f"{max(pairs):.3f} | {mark} |")
    if len(totals) != 1:
        failed.append(f"configurations disagree on the matches: {totals}")
    report = "\n".join(lines) + "\n"
    (out / "report.md").write_text(report)
    print(report)
    for f in failed:
        print(f"preemption: {f}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
