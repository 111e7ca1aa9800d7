#!/usr/bin/env python3
"""Summarises a bench/matcher_presets.sh run as Markdown on stdout.

usage: matcher_presets_report.py OUT

OUT holds meta.txt and <preset>.json (matcher_bench --format=json: one JSON
object per path, or one per path per repetition when the binary was run once
per repetition). Per preset: events/s median (min-max over passes), p50/p99
of a call, matches and rows checked per event; the index's bytes per
subscription, load seconds and peak RSS; whether any cohort size is slower
than MatchEvent (median against median, same run); cohort 64 over cohort 1.

With <preset>.baseline.json beside it (matcher_presets.sh --baseline: the
two binaries run one repetition each in turn), also the baseline's figures
and, per path, after/before: the median (min-max) of the per-repetition
ratios, each taken between the two runs of one repetition.
"""
import glob
import json
import os
import statistics
import sys


def label(row):
    if row.get("path") == "MatchEvent":
        return "MatchEvent"
    return "cohort %d" % row["cohort_max"]


def read_rows(path):
    with open(path) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    if not rows:
        sys.exit("matcher_presets_report: %s is empty" % path)
    return rows


def merge(rows):
    """Groups rows by path, in first-seen order. A path run once per
    repetition has one row per repetition: events/s becomes the median of
    the runs' medians with the extremes of their passes, p50/p99 and the
    load figures the median of the runs'."""
    by = {}
    for r in rows:
        by.setdefault(label(r), []).append(r)
    merged = []
    for name, group in by.items():
        m = dict(group[0])
        if len(group) > 1:
            m["events_per_s"] = statistics.median(g["events_per_s"]
                                                  for g in group)
            m["events_per_s_min"] = min(g["events_per_s_min"] for g in group)
            m["events_per_s_max"] = max(g["events_per_s_max"] for g in group)
            for key in ("p50_us", "p99_us", "load_s"):
                m[key] = statistics.median(g[key] for g in group)
            m["peak_rss_mb"] = max(g.get("peak_rss_mb", 0) for g in group)
        m["runs"] = group
        merged.append(m)
    return merged


def thousands(x):
    return format(round(x), ",")


def print_preset(rows):
    first = rows[0]
    print("%s subscriptions, %s events, workload SHA-256 `%s`; load "
          "%.2f s, %.1f bytes/subscription (the index's own count), "
          "peak RSS %.0f MB, %s predicates, %s clusters.\n" % (
              thousands(first["subscriptions"]), thousands(first["events"]),
              first["workload_sha256"], first["load_s"],
              first["bytes_per_subscription"],
              max(r.get("peak_rss_mb", 0) for r in rows),
              thousands(first["predicates"]), thousands(first["clusters"])))
    print("| path | events/s (min-max) | µs/event | p50 / p99 µs per call "
          "| matches/event | rows checked/event |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in rows:
        rows_checked = ("-" if r.get("path") == "MatchEvent" else
                        thousands(r["rows_checked_per_event"]))
        m = r["matches_per_event"]
        print("| %s | %s (%s-%s) | %.1f | %.0f / %.0f | %s | %s |" % (
            label(r), thousands(r["events_per_s"]),
            thousands(r["events_per_s_min"]),
            thousands(r["events_per_s_max"]), 1e6 / r["events_per_s"],
            r["p50_us"], r["p99_us"], "%.2f" % m if m < 10 else "%.1f" % m,
            rows_checked))
    print()
    by = {label(r): r["events_per_s"] for r in rows}
    if "MatchEvent" in by:
        slower = [k for k, v in by.items()
                  if k != "MatchEvent" and v < by["MatchEvent"]]
        print("- slower than MatchEvent: %s" % (
            ", ".join("%s (%.2fx)" % (k, by[k] / by["MatchEvent"])
                      for k in slower) if slower else "none"))
    if "cohort 1" in by and "cohort 64" in by:
        print("- cohort 64 over cohort 1: %.2fx" % (
            by["cohort 64"] / by["cohort 1"]))
    print()


def print_comparison(before, after):
    b0, a0 = before[0], after[0]
    print("Against the baseline (before -> after): load %.2f -> %.2f s, "
          "%.1f -> %.1f bytes/subscription, peak RSS %.0f -> %.0f MB.\n" % (
              b0["load_s"], a0["load_s"], b0["bytes_per_subscription"],
              a0["bytes_per_subscription"],
              max(r.get("peak_rss_mb", 0) for r in before),
              max(r.get("peak_rss_mb", 0) for r in after)))
    if b0["matches_per_event"] != a0["matches_per_event"]:
        print("**The two binaries found different matches: %s and %s per "
              "event.**\n" % (b0["matches_per_event"],
                             a0["matches_per_event"]))
    print("| path | before, events/s | after, events/s | after/before, "
          "per repetition: median (min-max) |")
    print("|---|---:|---:|---:|")
    by_before = {label(r): r for r in before}
    for r in after:
        b = by_before.get(label(r))
        if b is None:
            continue
        ratios = [a["events_per_s"] / p["events_per_s"]
                  for a, p in zip(r["runs"], b["runs"])]
        print("| %s | %s | %s | %.2fx (%.2f-%.2f) |" % (
            label(r), thousands(b["events_per_s"]),
            thousands(r["events_per_s"]), statistics.median(ratios),
            min(ratios), max(ratios)))
    print()


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    print("# The matcher alone on one thread, by workload preset\n")
    print("```")
    with open(os.path.join(out, "meta.txt")) as f:
        print(f.read().rstrip())
    print("```\n")
    files = sorted(p for p in glob.glob(os.path.join(out, "*.json"))
                   if not p.endswith(".baseline.json"))
    if not files:
        sys.exit("matcher_presets_report: no <preset>.json in " + out)
    for path in files:
        rows = merge(read_rows(path))
        print("## %s\n" % rows[0]["workload"])
        print_preset(rows)
        baseline = path[:-len(".json")] + ".baseline.json"
        if os.path.exists(baseline):
            print_comparison(merge(read_rows(baseline)), rows)


if __name__ == "__main__":
    main()
