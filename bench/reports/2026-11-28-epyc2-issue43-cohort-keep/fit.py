#!/usr/bin/env python3
"""Issue 43's refit of matcher/cohort_keep.h (experiment 2's plateau).

Reads crossover.csv (matcher_bench --keep=per_event and --keep=masks,
events/s at each cohort size) and model-inputs.csv (the cost model's
inputs, averaged over every cohort of that size: printed by a throwaway
build of PredicateTable::BeginCohort under --keep=masks). For the old
constants, the new ones and a grid over the lead rows' costs and the
masks' position cost, prints each point's measured ratio (per-event time
over masks time: above 1, masks are faster) and the model's. A point
within 5% of a tie counts as right either way. Needs numpy.

usage: fit.py [DIR]   (default: this file's folder)
"""
import csv
import os
import sys

import numpy as np

here = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(__file__)
rates = {(r["preset"], int(r["events"])):
         (float(r["per_event_events_per_s"]), float(r["masks_events_per_s"]))
         for r in csv.DictReader(open(os.path.join(here, "crossover.csv")))}
inputs = {(r["preset"], int(r["events"])): r
          for r in csv.DictReader(open(os.path.join(here, "model-inputs.csv")))}
keys = sorted(k for k in rates if k in inputs)


def terms(k):
    r = {f: float(v) for f, v in inputs[k].items() if f != "preset"}
    unc = r["slots_uncached"]
    per_event = [r["rows_sum"], r["lead_rows_sum"] * (1 - unc),
                 r["lead_rows_sum"] * unc, r["positions_sum"]]
    masks = [r["rows_union"], r["positions_all"]]
    return np.array(per_event), np.array(masks)


def real(k):
    per_event, masks = rates[k]
    return masks / per_event  # time per event over time in masks


def ratio(k, c):
    pe, m = terms(k)
    return (pe @ np.array(c[:4])) / (m @ np.array(c[4:]))


def wrong(c):
    return [k for k in keys if abs(real(k) - 1) >= 0.05 and
            (ratio(k, c) > 1) != (real(k) > 1)]


# (row, lead row cached, lead row uncached, position; masks: row, position)
OLD = (4, 4, 1.0, 0.06, 20, 1.5)
NEW = (4, 12, 2.5, 0.06, 20, 2.5)
print("%-12s %3s %6s %6s %6s" % ("preset", "n", "real", "old", "new"))
for k in keys:
    cells = []
    for c in (OLD, NEW):
        r = ratio(k, c)
        ok = abs(real(k) - 1) < 0.05 or (r > 1) == (real(k) > 1)
        cells.append("%.2f%s" % (r, "" if ok else "!"))
    print("%-12s %3d %6.2f %6s %6s" % (k[0], k[1], real(k), *cells))
print("wrong (! above): old %d, new %d of %d points" %
      (len(wrong(OLD)), len(wrong(NEW)), len(keys)))
grid = []
for lc in (4, 6, 8, 10, 11, 12, 14):
    for lu in (1.0, 1.2, 1.4, 1.6, 1.8, 2.0, 2.5):
        for mp in (1.5, 1.8, 2.0, 2.2, 2.5, 3.0):
            c = (4, lc, lu, 0.06, 20, mp)
            w = wrong(c)
            right = [k for k in keys if k not in w and abs(real(k) - 1) >= 0.05]
            margin = min(abs(np.log(ratio(k, c))) for k in right)
            grid.append((len(w), -margin, c, w))
grid.sort(key=lambda t: t[:2])
print("grid, fewest wrong then widest margin (|log model ratio|):")
for n, m, c, w in grid[:6]:
    print("  cached %g, uncached %g, masks position %g: %d wrong %s, margin %.2f"
          % (c[1], c[2], c[5], n, w, -m))
