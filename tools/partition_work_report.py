#!/usr/bin/env python3
"""Summarises a bench/partition_work.sh run: report.md and work.csv.

usage: partition_work_report.py OUT COUNTS LAYOUTS CONCURRENT [COPIES]

OUT holds meta.txt and runs/<layout>-<P>-<rep>-<core>.json (locality_probe
output; partitioned in G index copies: layout partitioned-cG). COUNTS,
LAYOUTS and COPIES are comma-separated; CONCURRENT is 1 for --concurrent
runs. Medians over repetitions, with min-max; ratios against P = 1 of the
same layout, taken in the same run.
"""
import glob
import json
import os
import statistics
import sys

SPLITS = ["tasks", "cohorts", "attributes", "stealing", "phase2_stealing",
          "phase2_units"]


def load(out, layout, p):
    """{rep: [core JSON, ...]} for one layout and P."""
    reps = {}
    for path in glob.glob(f"{out}/runs/{layout}-{p}-*-*.json"):
        rep = path.rsplit("-", 2)[1]
        with open(path) as f:
            reps.setdefault(rep, []).append(json.load(f))
    return reps


def seconds(layout, cores, concurrent, split="tasks"):
    """The seconds one round of `layout` takes on P cores."""
    if layout == "partitioned" and not concurrent:
        return max(cores[0]["core_seconds_" + split])
    # Concurrent sharded/replicated: the slowest core bounds the round;
    # partitioned --threads and the model's core 0: the one probe.
    return max(c["match_seconds"] for c in cores)


def machine_events(layout, p, cores):
    """Events the machine matches in one round."""
    return cores[0]["events"] * (p if layout == "replicated" else 1)


def whole_bytes(layout, p, cores):
    """The whole index's memory at P cores."""
    b = cores[0]["index_bytes"]
    return b if layout.startswith("partitioned") else p * b


def copies_rows(out, counts, copies, mem_p1):
    """The work model's (P, G) rows: G x the bound at P / G (phase-2
    stealing schedule), G x its memory."""
    rows = []
    for p in counts:
        for g in copies:
            if g > p or p % g or p // g not in counts:
                continue
            reps = load(out, "partitioned", p // g)
            bounds = []
            for c in reps.values():
                split = ("phase2_stealing"
                         if "core_seconds_phase2_stealing" in c[0]
                         else "stealing")
                bounds.append(g * c[0]["baseline_seconds"] /
                              seconds("partitioned", c, False, split))
            per_copy = statistics.median(
                c[0]["index_bytes"] for c in reps.values())
            rows.append(f"| {p} | {g} | {p // g} | "
                        f"{statistics.median(bounds):.2f}x "
                        f"({min(bounds):.2f}–{max(bounds):.2f}) | "
                        f"{g * per_copy / 1e6:.0f} | "
                        f"{per_copy / mem_p1:.2f}x |")
    return rows


def main():
    out, counts, layouts, concurrent = sys.argv[1:5]
    copies = [int(g) for g in
              (sys.argv[5] if len(sys.argv) > 5 else "1").split(",")]
    counts = [int(p) for p in counts.split(",")]
    layouts = layouts.split(",")
    concurrent = concurrent == "1"
    rows, csv, split_rows, totals = [], [], [], {}
    csv.append("layout,partitions,seconds_median,min,max,events_per_s,"
               "speedup,index_bytes,memory_vs_p1")
    base = {}
    runs = []  # (layout, P) in report order
    for layout in layouts:
        for p in counts:
            runs.append((layout, p))
            if layout == "partitioned" and concurrent:
                runs += [(f"partitioned-c{g}", p) for g in copies
                         if 1 < g <= p and p % g == 0]
    for layout, p in runs:
        reps = load(out, layout, p)
        if not reps:
            sys.exit(f"partition_work_report: no runs for {layout} P={p}")
        secs = [seconds(layout, c, concurrent) for c in reps.values()]
        first = next(iter(reps.values()))
        med = statistics.median(secs)
        rate = machine_events(layout, p, first) / med
        memory = whole_bytes(layout, p, first)
        # partitioned-cG is compared with partitioned at P = 1.
        family = "partitioned" if layout.startswith(
            "partitioned") else layout
        base.setdefault(family, (rate, memory))
        speedup = rate / base[family][0]
        mem_ratio = memory / base[family][1]
        if concurrent:
            totals[(layout, p)] = {
                (c[0]["all_matches"] if "all_matches" in c[0]
                 else sum(x["matches"] for x in c))
                for c in reps.values()}
        rows.append(f"| {layout} | {p} | {med:.3f} ({min(secs):.3f}–"
                    f"{max(secs):.3f}) | {rate:,.0f} | {speedup:.2f}x | "
                    f"{memory / 1e6:.0f} | {mem_ratio:.2f}x |")
        csv.append(",".join(str(x) for x in [
            layout, p, round(med, 6), round(min(secs), 6),
            round(max(secs), 6), round(rate), round(speedup, 3), memory,
            round(mem_ratio, 3)]))
        if layout == "partitioned" and not concurrent:
            cells = []
            for split in SPLITS:
                if not all(f"core_seconds_{split}" in c[0]
                           for c in reps.values()):
                    cells.append("–")  # runs from before the split
                    continue
                slowest = [seconds(layout, c, False, split)
                           for c in reps.values()]
                s = statistics.median(slowest)
                bounds = [c[0]["baseline_seconds"] / t for c, t in
                          zip(reps.values(), slowest)]
                cells.append(f"{s:.4f} ({statistics.median(bounds):.2f}x, "
                             f"{min(bounds):.2f}–{max(bounds):.2f})")
            mean = statistics.median(
                sum(c[0]["core_seconds_tasks"]) / p for c in reps.values())
            t1 = statistics.median(
                c[0]["baseline_seconds"] for c in reps.values())
            split_rows.append(f"| {p} | {t1:.4f} | " + " | ".join(cells) +
                              f" | {mean:.4f} |")
    if concurrent:
        distinct = set().union(*totals.values())
        if len(distinct) != 1:
            sys.exit("partition_work_report: the matches do not add up to one "
                     f"total: {sorted(totals.items())}")
    with open(os.path.join(out, "work.csv"), "w") as f:
        f.write("\n".join(csv) + "\n")
    with open(os.path.join(out, "meta.txt")) as f:
        meta = f.read().strip()
    kind = ("all P cores at once" if concurrent
            else "the work model: one core's share")
    lines = [f"# Matcher-only scaling, P = {','.join(map(str, counts))} "
             f"({kind})", "", "```", meta, "```", "",
             "| layout | P | seconds (min–max) | events/s | "
             + ("speedup vs P=1" if concurrent else "bound on speedup vs P=1")
             + " | whole index MB | memory vs P=1 |",
             "|---|---|---|---|---|---|---|", *rows, ""]
    if concurrent:
        lines.append(
            "All P cores match at once. partitioned: one process, P threads "
            "pinned to CPUs 0..P-1 and scheduled by the server's "
            "CohortPipeline; seconds = its wall time. sharded_phase1 and "
            "replicated: P processes pinned to CPUs 0..P-1, loops started "
            "together; seconds = the slowest core's. Shared caches and memory "
            f"bandwidth are in the figures. The matches add up to "
            f"{distinct.pop():,} for every P and layout.")
    else:
        lines.append(
            "seconds: the slowest core's share. partitioned: every piece of "
            "every cohort timed on one thread, phase 1 split over the cores "
            "as the server's predicate stage prefers (each batch of tasks, as "
            "the server hands them out, on the core whose part of the "
            "predicate table it walks), phase 2 of "
            "partition p on core p; sharded_phase1 and "
            "replicated: core 0 alone. The speedup assumes P cores do their "
            "shares in parallel with no interference, so it bounds what P "
            "cores can reach. Memory: the whole index at P (partitioned: one "
            "index and the mask buffers the server keeps at P (2 below 4 partitions, 4 from 4, 6 from 16 on); sharded_phase1: P shards; "
            "replicated: P copies).")
        if split_rows:
            lines += ["", "## partitioned: the slowest core under three "
                      "splits of phase 1", "",
                      "T(1): the whole index (one partition) matching every "
                      "cohort, timed in the same run, cohort by cohort beside "
                      "the P partitions' pieces (locality_probe --baseline). "
                      "Each split: its slowest core's seconds and the bound "
                      "T(1) / slowest core, median and min–max over the "
                      "repetitions: a ratio taken inside one run, which the "
                      "machine's drift between runs does not move (compare "
                      "the table above, whose ratios are across runs). "
                      "tasks: each batch of tasks (as the server hands them "
                      "out: CohortMasks::BatchTasks) on the core whose part "
                      "of the predicate table it walks "
                      "(CohortMasks::batch_part), "
                      "the server's preference with no credit for stealing; "
                      "cohorts: all of cohort k's phase 1 on core k % P; "
                      "attributes: each attribute's tasks on one core, "
                      "largest first onto the least-loaded core; stealing: "
                      "BeginCohort and each batch to the least-loaded core, "
                      "what the server's idle cores taking tasks does over a "
                      "run (bench/work_model.h). Phase 2 of partition p is "
                      "core p's under these four; phase-2 stealing: the "
                      "stealing schedule, and a partition's share of a "
                      "cohort goes to the least-loaded core when its own "
                      "core is more than the pipeline's 20 us behind it "
                      "(--phase2_stealing; the misses a thief pays are left "
                      "out: experiment 4 measures them); phase 2 in steal "
                      "units: the same with each share cut into the "
                      "meta's steal units, each timed on its own and "
                      "placed by the same rule (--steal_units).",
                      "",
                      "| P | T(1), same run | tasks (static) | cohorts "
                      "(k on core k % P) | attributes (LPT by time) | "
                      "tasks, stealing | phase 2 too, stealing | "
                      "phase 2 in steal units, stealing | mean core |",
                      "|---|---|---|---|---|---|---|---|---|", *split_rows]
        cp = copies_rows(out, counts, copies, base["partitioned"][1]) \
            if "partitioned" in base else []
        if cp:
            lines += ["", "## partitioned in G index copies (--index_copies)",
                      "",
                      "Each copy's P / G cores do a P / G-partition share of "
                      "every G-th cohort, so the bound is G x the bound at "
                      "P / G (phase-2 stealing schedule, per repetition) and "
                      "the memory G x the index at P / G with its mask "
                      "buffers. G = P is the replicated layout. Per copy: "
                      "one copy's memory against the index at P = 1.",
                      "",
                      "| P | G | cores per copy | bound on speedup vs P=1 "
                      "(min–max) | whole index MB | memory per copy vs P=1 |",
                      "|---|---|---|---|---|---|", *cp]
    lines += ["", "Reproduce: `bench/partition_work.sh"
              + (" --concurrent" if concurrent else "") + "`.", ""]
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
