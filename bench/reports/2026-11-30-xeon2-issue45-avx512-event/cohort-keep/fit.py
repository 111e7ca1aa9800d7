#!/usr/bin/env python3
"""Issue 45's refit of matcher/cohort_keep.h, after the per-event path's
AVX-512 check (MatchBlockForEventAvx512) and phase 1's rank tables.

Reads crossover.csv (matcher_bench --keep=per_event and --keep=masks,
events/s at each cohort size, one run at a time) and model-inputs.csv (the
model's inputs averaged over every cohort of each size, printed by a
throwaway build of PredicateTable::BeginCohort under --keep=masks). For
the constants before this refit, the new ones and a grid over the cached
lead row's cost with AVX-512, a range group search's and a set id's, prints
each point's measured ratio (time per event over time in masks: above 1,
masks are faster) and the model's. A point within 5% of a tie counts as
right either way. No third-party modules.

usage: fit.py [DIR]   (default: this file's folder)
"""
import csv
import math
import os
import sys

here = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))


def table(name, key_fields):
    """A CSV of this folder as {(preset, events): row}."""
    with open(os.path.join(here, name)) as f:
        return {(r["preset"], int(r["events"])): key_fields(r)
                for r in csv.DictReader(f)}


rates = table("crossover.csv", lambda r: (float(r["per_event_events_per_s"]),
                                          float(r["masks_events_per_s"])))
inputs = table("model-inputs.csv", lambda r: r)
keys = sorted(k for k in rates if k in inputs)

# (row, cached lead row, uncached lead row, inline lead row, position,
#  search, set id; masks: row, position)
OLD = (4, 12, 2.5, 2.5, 0.06, 0, 0, 20, 2.5)


def ratio(k, c):
    r = {f: float(v) for f, v in inputs[k].items() if f != "preset"}
    unc = r["slots_uncached"]
    per_event = (c[0] * r["rows_sum"] + c[1] * r["lead_rows_sum"] * (1 - unc) +
                 c[2] * r["lead_rows_sum"] * unc +
                 c[3] * r["inline_lead_rows_sum"] + c[4] * r["positions_sum"] +
                 c[5] * r["searches_sum"] + c[6] * r["set_ids_sum"])
    masks = c[7] * r["rows_union"] + c[8] * r["positions_all"]
    return per_event / masks


def real(k):
    per_event, masks = rates[k]
    return masks / per_event  # time per event over time in masks


def wrong(c):
    return [k for k in keys if abs(real(k) - 1) >= 0.05 and
            (ratio(k, c) > 1) != (real(k) > 1)]


def margin(c):
    right = [k for k in keys if k not in wrong(c) and abs(real(k) - 1) >= 0.05]
    return min(abs(math.log(ratio(k, c))) for k in right)


grid = []
for lc in (2, 3, 4, 5, 6, 7, 8, 10, 12):
    for s in (0, 10, 20, 40, 60, 80, 100, 150, 200):
        for st in (0, 1, 2, 4, 6, 8, 12, 16):
            c = (4, lc, 2.5, 2.5, 0.06, s, st, 20, 2.5)
            grid.append((len(wrong(c)), -margin(c), c))
grid.sort(key=lambda t: t[:2])
NEW = grid[0][2]


def cell(k, c):
    """The model's ratio for point k, marked "!" where it chooses wrong."""
    r = ratio(k, c)
    right = abs(real(k) - 1) < 0.05 or (r > 1) == (real(k) > 1)
    return "%.2f%s" % (r, "" if right else "!")


lines = ["%-12s %3s %6s %6s %6s" % ("preset", "n", "real", "old", "new")]
lines += ["%-12s %3d %6.2f %6s %6s" % (k[0], k[1], real(k), cell(k, OLD),
                                       cell(k, NEW)) for k in keys]
print("\n".join(lines))
print("wrong (! above): old %d, new %d of %d points" %
      (len(wrong(OLD)), len(wrong(NEW)), len(keys)))
print("grid, fewest wrong then widest margin (|log model ratio|):")
for n, m, c in grid[:8]:
    print("  cached lead row %g, search %g, set id %g: %d wrong, margin %.2f"
          % (c[1], c[5], c[6], n, -m))
