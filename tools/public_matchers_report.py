#!/usr/bin/env python3
"""Report of bench/public_matchers.sh: Cohort against TAMA and REIN.

Usage: public_matchers_report.py DIR

Reads DIR/meta.txt and, per preset, DIR/<preset>.export.json (what was kept),
<preset>.cohort.json (matcher_bench's JSON lines), <preset>.tama.json and
<preset>.rein.json (bench/public_driver.cc's lines); prints Markdown: per
preset, microseconds per event for every path (median of the repetitions,
with their range), load time and memory, and each Cohort path's speed-up over
the best public matcher on that preset.
"""

import json
import os
import sys


def read_lines(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def path_name(row):
    if row["path"] == "MatchEvent":
        return "Cohort MatchEvent"
    return "Cohort MatchCohort, %d" % row["cohort_max"]


def us(rate):
    return 1e6 / rate if rate > 0 else float("inf")


def times(ratio):
    return ("%.2fx" if ratio < 2 else "%.1fx") % ratio


def main(argv):
    if len(argv) != 2:
        sys.stderr.write(__doc__)
        return 2
    out = argv[1]
    meta = open(os.path.join(out, "meta.txt")).read().strip()
    order = ["fabret-1m", "selective-1m", "ranges-1m"]
    presets = sorted(
        (
            name[: -len(".export.json")]
            for name in os.listdir(out)
            if name.endswith(".export.json")
        ),
        key=lambda p: (order.index(p) if p in order else len(order), p),
    )
    print("# Cohort against the public matchers TAMA and REIN\n")
    print("```\n%s\n```\n" % meta)
    print(
        "Every matcher runs on one thread over the same kept subscriptions and "
        "the same events, and every public matcher's match count agreed with "
        "Cohort's on every event (the run stops otherwise). Microseconds per "
        "event are the inverse of events/s (median of the repetitions; the "
        "range is the slowest and fastest repetition). Cohort's memory is its "
        "index's own count; the public matchers' is the resident memory their "
        "load added.\n"
    )
    verdicts = []
    for preset in presets:
        export = read_lines(os.path.join(out, preset + ".export.json"))[0]
        cohort = read_lines(os.path.join(out, preset + ".cohort.json"))
        public = []
        for m in ("tama", "rein"):
            path = os.path.join(out, "%s.%s.json" % (preset, m))
            if os.path.exists(path):
                public += read_lines(path)
        print("## %s\n" % preset)
        print(
            "%d of %d subscriptions kept (`--ne=%s`: %d subscriptions and %d "
            "NE predicates left out); %d events; %.1f matches per event; "
            "%d attributes, at most %d distinct values on one.\n"
            % (
                export["kept"],
                export["subscriptions"],
                export["ne"],
                export["subscriptions_dropped"],
                export["predicates_dropped"],
                export["events"],
                export["matches_per_event"],
                export["attributes"],
                export["domain"] - 2,
            )
        )
        best = min(public, key=lambda r: us(r["events_per_s"])) if public else None
        print(
            "| matcher, path | µs per event | range | events/s | "
            "load s | memory MB | vs best public |"
        )
        print("|---|---|---|---|---|---|---|")
        slowest = None
        for r in cohort:
            t = us(r["events_per_s"])
            mem = r["bytes_per_subscription"] * r["subscriptions"] / 2**20
            ratio = us(best["events_per_s"]) / t if best else float("nan")
            if slowest is None or ratio < slowest[1]:
                slowest = (path_name(r), ratio)
            print(
                "| %s | %.1f | %.1f–%.1f | %.0f | %.2f | %.0f | %s |"
                % (
                    path_name(r),
                    t,
                    us(r["events_per_s_max"]),
                    us(r["events_per_s_min"]),
                    r["events_per_s"],
                    r["load_s"],
                    mem,
                    times(ratio),
                )
            )
        for r in public:
            extra = " (tree depth %d)" % r["level"] if r["matcher"] == "TAMA" else ""
            print(
                "| %s%s | %.1f | %.1f–%.1f | %.0f | %.2f | %.0f | |"
                % (
                    r["matcher"],
                    extra,
                    us(r["events_per_s"]),
                    us(r["events_per_s_max"]),
                    us(r["events_per_s_min"]),
                    r["events_per_s"],
                    r["load_s"],
                    r["rss_added_mb"],
                )
            )
        print()
        if best and slowest:
            verdicts.append(
                "- %s: best public matcher %s at %.1f µs per event; Cohort's "
                "slowest path, %s, is %s faster%s."
                % (
                    preset,
                    best["matcher"],
                    us(best["events_per_s"]),
                    slowest[0],
                    times(slowest[1]),
                    "" if slowest[1] > 1 else " (NOT faster: a path loses)",
                )
            )
    print("## Summary\n")
    print("\n".join(verdicts))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
