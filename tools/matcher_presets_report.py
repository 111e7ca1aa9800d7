#!/usr/bin/env python3
"""Summarises a bench/matcher_presets.sh run as Markdown on stdout.

usage: matcher_presets_report.py OUT

OUT holds meta.txt and <preset>.json (matcher_bench --format=json: one JSON
object per path). Per preset: events/s median (min-max over passes), p50/p99
of a call, matches and rows checked per event; the index's bytes per
subscription, load seconds and peak RSS; whether any cohort size is slower
than MatchEvent (median against median, same run); cohort 64 over cohort 1.
"""
import glob
import json
import os
import sys


def label(row):
    if row.get("path") == "MatchEvent":
        return "MatchEvent"
    return "cohort %d" % row["cohort_max"]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    print("# The matcher alone on one thread, by workload preset\n")
    print("```")
    with open(os.path.join(out, "meta.txt")) as f:
        print(f.read().rstrip())
    print("```\n")
    files = sorted(glob.glob(os.path.join(out, "*.json")))
    if not files:
        sys.exit("matcher_presets_report: no <preset>.json in " + out)
    for path in files:
        with open(path) as f:
            rows = [json.loads(line) for line in f if line.strip()]
        if not rows:
            sys.exit("matcher_presets_report: %s is empty" % path)
        first = rows[0]
        print("## %s\n" % first["workload"])
        print("%s subscriptions, %s events, workload SHA-256 `%s`; load "
              "%.2f s, %.1f bytes/subscription (the index's own count), "
              "peak RSS %.0f MB, %s predicates, %s clusters.\n" % (
                  format(first["subscriptions"], ","),
                  format(first["events"], ","), first["workload_sha256"],
                  first["load_s"], first["bytes_per_subscription"],
                  max(r.get("peak_rss_mb", 0) for r in rows),
                  format(first["predicates"], ","),
                  format(first["clusters"], ",")))
        print("| path | events/s (min-max) | µs/event | p50 / p99 µs per call "
              "| matches/event | rows checked/event |")
        print("|---|---:|---:|---:|---:|---:|")
        for r in rows:
            rows_checked = ("-" if r.get("path") == "MatchEvent" else
                            format(round(r["rows_checked_per_event"]), ","))
            m = r["matches_per_event"]
            print("| %s | %s (%s-%s) | %.1f | %.0f / %.0f | %s | %s |" % (
                label(r), format(round(r["events_per_s"]), ","),
                format(round(r["events_per_s_min"]), ","),
                format(round(r["events_per_s_max"]), ","),
                1e6 / r["events_per_s"], r["p50_us"], r["p99_us"],
                "%.2f" % m if m < 10 else "%.1f" % m, rows_checked))
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


if __name__ == "__main__":
    main()
