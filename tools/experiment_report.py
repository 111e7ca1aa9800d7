#!/usr/bin/env python3
"""Turns a bench/experiment.sh result folder into report.md, CSVs and plots.

    tools/experiment_report.py results/2026-11-22

Reads meta.txt, servers.csv, loads.csv, runs.csv and raw/ (one `cohort load`
JSON per run; callgrind summaries for experiment 4). Writes, next to them:
clients.csv, cohort.csv, locality.csv, scaling.csv, cache.csv (medians with
min and max over repetitions), fig_*.png (gnuplot, pngcairo) and report.md,
and prints report.md. Every figure and table names the machine, the flags and
the workload checksum. Uses the standard library only.
"""
import csv
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

PAPER = ("Larus & Parkes, fabret workload (1M subscriptions, 100k events): "
         "staged beat threaded by 21% in response time; cohorts limited to "
         "4, 10 and 20 events cost 21%, 17% and 9%; without partitioning the "
         "staged server ran no faster than the threaded one.")


def read_meta(folder):
    meta = {}
    with open(os.path.join(folder, "meta.txt")) as f:
        for line in f:
            key, _, value = line.rstrip("\n").partition(": ")
            meta[key] = value
    return meta


def read_csv(folder, name):
    path = os.path.join(folder, name)
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f))


def spread(values):
    """(median, min, max) of a non-empty list."""
    return statistics.median(values), min(values), max(values)


def fmt(values, scale=1.0, digits=0):
    med, lo, hi = spread([v * scale for v in values])
    if len(values) == 1:
        return f"{med:,.{digits}f}"
    return f"{med:,.{digits}f} ({lo:,.{digits}f}-{hi:,.{digits}f})"


class Runs:
    """Publish runs of runs.csv, grouped by (experiment, config, x)."""

    def __init__(self, folder):
        self.folder = folder
        self.groups = {}
        for row in read_csv(folder, "runs.csv"):
            if row["experiment"] == "cache":
                continue
            with open(os.path.join(folder, row["file"])) as f:
                data = json.load(f)
            key = (row["experiment"], row["config"], row["x"])
            self.groups.setdefault(key, []).append(data)

    def get(self, experiment, config, x):
        return self.groups.get((experiment, config, str(x)), [])

    def configs(self, experiment):
        seen = []
        for (e, c, _x) in self.groups:
            if e == experiment and c not in seen:
                seen.append(c)
        return seen

    def xs(self, experiment, config):
        return [x for (e, c, x) in self.groups if e == experiment and c == config]


def rate(run):
    return run["events_per_s"]


def lat(run, q):
    return run["latency_us"][q] / 1000.0  # ms


def errors(runs):
    return sum(sum((r.get("errors") or {}).values()) + r.get("unanswered", 0)
               for r in runs)


def partition_batch(run):
    """Mean cohort size in the run's stats: the predicate stage's (the
    partitioned layout forms each cohort once), else the partitions'."""
    stages = (run.get("stats") or {}).get("stages") or []
    for prefix in ("predicate", "partition/"):
        sizes = [s["events_per_batch"] for s in stages
                 if s["name"].startswith(prefix) and s["events"] > 0]
        if sizes:
            return statistics.mean(sizes)
    return float("nan")


def write_csv(folder, name, header, rows):
    with open(os.path.join(folder, name), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def caption(meta, servers, load, workload_key="workload"):
    flags = "; ".join(f"{name}: cohortd {servers.get(name, '')}".strip()
                      for name in load[1])
    return (f"machine: {meta.get('machine', '?')}. "
            f"workload: {meta.get(workload_key, '?')}. "
            f"load: cohort load {load[0]}, warmup {meta.get('warmup_s')} s, "
            f"{meta.get('duration_s')} s x {meta.get('reps')} reps. "
            f"servers: {flags}.")


def wrap(text, width):
    words, lines, line = text.split(), [], ""
    for w in words:
        if line and len(line) + 1 + len(w) > width:
            lines.append(line)
            line = w
        else:
            line = f"{line} {w}".strip()
    if line:
        lines.append(line)
    return lines


def gnuplot(folder, name, script, footer):
    """Runs a gnuplot script with a footer; returns the PNG name or None."""
    if shutil.which("gnuplot") is None:
        return None
    lines = wrap(footer, 150)
    bottom = 0.06 + 0.028 * len(lines)
    labels = "".join(
        f'set label {i + 1} "{l.replace(chr(34), chr(39))}" at screen 0.01, '
        f'screen {0.012 + 0.028 * (len(lines) - 1 - i):.3f} font ",8"\n'
        for i, l in enumerate(lines))
    full = (f'set terminal pngcairo noenhanced size 1100,'
            f'{620 + 18 * len(lines)} font "sans,10"\nset output "{name}"\n{labels}'
            f"BOTTOM = {bottom:.3f}\n{script}")
    subprocess.run(["gnuplot"], input=full, text=True, cwd=folder, check=True)
    return name


def add_figure(md, plots, png, number, cap):
    """Appends figure `number` (if it was drawn) and its caption."""
    if png:
        plots.append(png)
        md.append(f"\n![experiment {number}]({png})\n")
    md.append(f"*{cap}*\n")


def clients_section(folder, meta, servers, loads, runs, plots, md):
    configs = runs.configs("clients")
    if not configs:
        return
    rows, table = [], []
    data = {}
    for c in configs:
        for x in sorted(runs.xs("clients", c), key=int):
            rs = runs.get("clients", c, x)
            data[(c, int(x))] = rs
            rows.append([c, x, len(rs)] + [
                round(v, 3) for q in ("mean", "p50", "p99")
                for v in spread([lat(r, q) for r in rs])] + [
                round(v) for v in spread([rate(r) for r in rs])] + [errors(rs)])
    write_csv(folder, "clients.csv",
              ["mode", "clients", "reps", "mean_ms", "mean_ms_min",
               "mean_ms_max", "p50_ms", "p50_ms_min", "p50_ms_max", "p99_ms",
               "p99_ms_min", "p99_ms_max", "events_per_s", "events_per_s_min",
               "events_per_s_max", "errors"], rows)
    md.append("## 1. Response time vs publishing clients: staged vs threaded\n")
    md.append("Closed loop: each client publishes one event and waits for the "
              "reply, as in the paper. Medians over repetitions, (min-max).\n")
    md.append("| clients | staged mean ms | threaded mean ms | staged vs "
              "threaded (mean) | staged p99 ms | threaded p99 ms | staged "
              "events/s | threaded events/s |")
    md.append("|---|---|---|---|---|---|---|---|")
    xs = sorted({x for (_c, x) in data})
    for x in xs:
        s, t = data.get(("staged", x), []), data.get(("threaded", x), [])
        if not s or not t:
            continue
        sm = statistics.median(lat(r, "mean") for r in s)
        tm = statistics.median(lat(r, "mean") for r in t)
        md.append(f"| {x} | {fmt([lat(r, 'mean') for r in s], digits=2)} | "
                  f"{fmt([lat(r, 'mean') for r in t], digits=2)} | "
                  f"{(sm / tm - 1) * 100:+.0f}% | "
                  f"{fmt([lat(r, 'p99') for r in s], digits=2)} | "
                  f"{fmt([lat(r, 'p99') for r in t], digits=2)} | "
                  f"{fmt([rate(r) for r in s])} | {fmt([rate(r) for r in t])} |")
    steps = [("sharded_wait100", "as it was: `--index=sharded_phase1 "
              "--cohort_wait_us=100`"),
             ("staged_wait100", "partitioned layout: `--cohort_wait_us=100`"),
             ("staged", "and no wait when a stage is free: the defaults"),
             ("threaded", "`--mode=threaded`")]
    steps = [(c, what) for c, what in steps
             if any((c, x) in data for x in xs)]
    if len(steps) > 2:
        md.append("\nWhich change bought what: mean response time (ms) of the "
                  "staged server as it was, with the partitioned layout "
                  "(phase 1 once per cohort, cohorts formed once), and with "
                  "no wait for company when a stage is free.\n")
        md.append("| clients | " + " | ".join(
            f"{c} ({what})" for c, what in steps) + " |")
        md.append("|---|" + "---|" * len(steps))
        for x in xs:
            cells = []
            for c, _what in steps:
                rs = data.get((c, x), [])
                cells.append(fmt([lat(r, "mean") for r in rs], digits=2)
                             if rs else "-")
            md.append(f"| {x} | " + " | ".join(cells) + " |")
    err = sum(errors(rs) for rs in data.values())
    md.append(f"\nErrors and unanswered requests over all runs: {err}.\n")
    cap = caption(meta, servers, (loads.get("clients", ""), configs))
    dat = []
    for x in xs:
        cells = [str(x)]
        for c in ("staged", "threaded"):
            rs = data.get((c, x)) or []
            cells += ([f"{statistics.median(lat(r, q) for r in rs):.4f}"
                       for q in ("mean", "p99")] +
                      [f"{statistics.median(rate(r) for r in rs):.1f}"]
                      if rs else ["NaN"] * 3)
        dat.append(" ".join(cells))
    with open(os.path.join(folder, "fig_clients.dat"), "w") as f:
        f.write("\n".join(dat) + "\n")
    png = gnuplot(folder, "fig_clients.png", """
set multiplot layout 1,2 title "Experiment 1: closed-loop publishing clients, staged vs threaded"
set bmargin at screen BOTTOM + 0.08
set logscale x 2
set xlabel "publishing clients"
set key top left
set grid
set ylabel "response time (ms)"
plot "fig_clients.dat" u 1:2 w lp lw 2 pt 7 t "staged mean", \
     "" u 1:5 w lp lw 2 pt 5 t "threaded mean", \
     "" u 1:3 w lp dt 2 pt 7 t "staged p99", \
     "" u 1:6 w lp dt 2 pt 5 t "threaded p99"
set ylabel "events/s"
set yrange [0:*]
plot "fig_clients.dat" u 1:4 w lp lw 2 pt 7 t "staged", \
     "" u 1:7 w lp lw 2 pt 5 t "threaded"
unset multiplot
""", cap)
    add_figure(md, plots, png, 1, cap)


def cohort_section(folder, meta, servers, loads, runs, plots, md):
    configs = runs.configs("cohort")
    if not configs:
        return
    limits = sorted((int(c[1:]) for c in configs), key=lambda n: n or 1 << 30)
    data = {n: runs.get("cohort", f"c{n}", n) for n in limits}
    unbounded = statistics.median(rate(r) for r in data.get(0, [])) \
        if data.get(0) else None
    rows = []
    md.append("## 2. Cohort limit (`--cohort_max`)\n")
    md.append("Saturating load; throughput, latency per request, and the "
              "throughput lost against unbounded cohorts (the paper lost "
              "21%, 17% and 9% at 4, 10 and 20). `cohort size` is the mean "
              "events per cohort the partitions ran.\n")
    md.append("| cohort_max | events/s | loss vs unbounded | p50 ms | p99 ms "
              "| cohort size |")
    md.append("|---|---|---|---|---|---|")
    dat = []
    for n in limits:
        rs = data[n]
        med = statistics.median(rate(r) for r in rs)
        loss = (1 - med / unbounded) * 100 if unbounded else float("nan")
        size = statistics.median(partition_batch(r) for r in rs)
        label = "unbounded (0)" if n == 0 else str(n)
        md.append(f"| {label} | {fmt([rate(r) for r in rs])} | {loss:.1f}% | "
                  f"{fmt([lat(r, 'p50') for r in rs], digits=2)} | "
                  f"{fmt([lat(r, 'p99') for r in rs], digits=2)} | "
                  f"{size:.1f} |")
        rows.append([n, len(rs)] + [round(v) for v in spread(
            [rate(r) for r in rs])] + [round(loss, 2)] + [
            round(v, 3) for q in ("p50", "p99")
            for v in spread([lat(r, q) for r in rs])] + [round(size, 2),
                                                         errors(rs)])
        lo, hi = min(rate(r) for r in rs), max(rate(r) for r in rs)
        dat.append(f'"{"inf" if n == 0 else n}" {med:.1f} {lo:.1f} {hi:.1f} '
                   f"{statistics.median(lat(r, 'p50') for r in rs):.4f} "
                   f"{statistics.median(lat(r, 'p99') for r in rs):.4f}")
    write_csv(folder, "cohort.csv",
              ["cohort_max", "reps", "events_per_s", "events_per_s_min",
               "events_per_s_max", "loss_vs_unbounded_pct", "p50_ms",
               "p50_ms_min", "p50_ms_max", "p99_ms", "p99_ms_min",
               "p99_ms_max", "mean_cohort_size", "errors"], rows)
    with open(os.path.join(folder, "fig_cohort.dat"), "w") as f:
        f.write("\n".join(dat) + "\n")
    cap = caption(meta, servers, (loads.get("cohort", ""),
                                  [f"c{n}" for n in limits]))
    png = gnuplot(folder, "fig_cohort.png", """
set multiplot layout 1,2 title "Experiment 2: cohort limit (0 = unbounded, shown as inf)"
set bmargin at screen BOTTOM + 0.08
set xlabel "--cohort_max"
set grid
set key top left
set style fill solid 0.5
set boxwidth 0.6
set ylabel "events/s (median, min-max)"
set yrange [0:*]
plot "fig_cohort.dat" u 0:2:xtic(1) w boxes t "throughput", \
     "" u 0:2:3:4 w yerrorbars pt 0 lc rgb "black" t ""
set ylabel "latency per request (ms)"
set logscale y
set yrange [*:*]
plot "fig_cohort.dat" u 0:5:xtic(1) w lp lw 2 pt 7 t "p50", \
     "" u 0:6 w lp lw 2 pt 5 t "p99"
unset multiplot
""", cap)
    add_figure(md, plots, png, 2, cap)


def locality_section(folder, meta, servers, loads, runs, plots, md):
    configs = runs.configs("locality")
    if not configs:
        return
    md.append("## 3. Locality: the index layouts and the threaded server\n")
    md.append("`partitioned` (the design): one predicate table, each "
              "cohort's phase 1 done once with its work split over the "
              "partitions' cores, each partition matching every cohort "
              "against its own part of the clusters. `sharded_phase1` (the "
              "earlier layout): each partition owns a whole index of 1/P of "
              "the subscriptions and runs both phases for every event. "
              "`replicated`: every partition holds the whole index and "
              "matches every P-th event in cohorts (the staged server "
              "without partitioning). `threaded`: workers share one index, "
              "one event at a time. `stream` is the saturating load of "
              "experiment 2; `closed16` is 16 closed-loop clients as in "
              "experiment 1.\n")
    md.append("| server | stream events/s | stream p99 ms | closed16 mean ms "
              "| closed16 events/s |")
    md.append("|---|---|---|---|---|")
    rows, dat = [], []
    base = None
    for c in configs:
        s = runs.get("locality", c, "stream")
        k = runs.get("locality", c, "closed16")
        if not s:
            continue
        if c == "partitioned":
            base = statistics.median(rate(r) for r in s)
        md.append(f"| {c} | {fmt([rate(r) for r in s])} | "
                  f"{fmt([lat(r, 'p99') for r in s], digits=2)} | "
                  f"{fmt([lat(r, 'mean') for r in k], digits=2) if k else '-'} | "
                  f"{fmt([rate(r) for r in k]) if k else '-'} |")
        for load, rs in (("stream", s), ("closed16", k)):
            if rs:
                rows.append([c, load, len(rs)] + [round(v) for v in spread(
                    [rate(r) for r in rs])] + [round(v, 3) for q in (
                        "mean", "p50", "p99") for v in spread(
                        [lat(r, q) for r in rs])] + [errors(rs)])
        dat.append(f'"{c}" {statistics.median(rate(r) for r in s):.1f} '
                   f"{min(rate(r) for r in s):.1f} {max(rate(r) for r in s):.1f}")
    write_csv(folder, "locality.csv",
              ["server", "load", "reps", "events_per_s", "events_per_s_min",
               "events_per_s_max", "mean_ms", "mean_ms_min", "mean_ms_max",
               "p50_ms", "p50_ms_min", "p50_ms_max", "p99_ms", "p99_ms_min",
               "p99_ms_max", "errors"], rows)
    if base:
        md.append("")
        for c in configs:
            s = runs.get("locality", c, "stream")
            if s and c != "partitioned":
                m = statistics.median(rate(r) for r in s)
                md.append(f"- {c}: {m / base:.2f}x the partitioned "
                          "server's stream throughput.")
        md.append("")
    # Scaling with partitions.
    scaling = runs.configs("scaling")
    srows, sdat = [], []
    points = []
    for c in scaling:
        for x in runs.xs("scaling", c):
            points.append((int(x), runs.get("scaling", c, x)))
    points.sort()
    if points:
        one = statistics.median(rate(r) for r in points[0][1])
        md.append("Scaling of the partitioned server with partitions "
                  "(stream load):\n")
        md.append("| partitions | events/s | speedup vs 1 |")
        md.append("|---|---|---|")
        for p, rs in points:
            m = statistics.median(rate(r) for r in rs)
            md.append(f"| {p} | {fmt([rate(r) for r in rs])} | "
                      f"{m / one:.2f}x |")
            srows.append([p, len(rs)] + [round(v) for v in spread(
                [rate(r) for r in rs])] + [round(m / one, 3)])
            sdat.append(f"{p} {m:.1f} {min(rate(r) for r in rs):.1f} "
                        f"{max(rate(r) for r in rs):.1f}")
        write_csv(folder, "scaling.csv",
                  ["partitions", "reps", "events_per_s", "events_per_s_min",
                   "events_per_s_max", "speedup_vs_1"], srows)
        md.append("")
    with open(os.path.join(folder, "fig_locality.dat"), "w") as f:
        f.write("\n".join(dat) + "\n")
    with open(os.path.join(folder, "fig_scaling.dat"), "w") as f:
        f.write("\n".join(sdat) + "\n")
    names = configs + [c for c in scaling if c not in configs]
    cap = caption(meta, servers, (loads.get("locality", ""), names))
    png = gnuplot(folder, "fig_locality.png", """
set multiplot layout 1,2 title "Experiment 3: locality (stream load)"
set bmargin at screen BOTTOM + 0.08
set grid
set style fill solid 0.5
set boxwidth 0.6
set ylabel "events/s (median, min-max)"
set yrange [0:*]
set key top left
plot "fig_locality.dat" u 0:2:xtic(1) w boxes t "throughput", \
     "" u 0:2:3:4 w yerrorbars pt 0 lc rgb "black" t ""
set xlabel "partitions"
set xtics auto
set offsets graph 0.05, graph 0.05, 0, 0
plot "fig_scaling.dat" u 1:2:3:4 w yerrorlines lw 2 pt 7 t "partitioned"
unset multiplot
""", cap)
    add_figure(md, plots, png, 3, cap)


CALLGRIND = {
    "I": re.compile(r"I\s+refs:\s+([\d,]+)"),
    "D": re.compile(r"D\s+refs:\s+([\d,]+)"),
    "D1": re.compile(r"D1\s+misses:\s+([\d,]+)"),
    "LL": re.compile(r"LL misses:\s+([\d,]+)"),
}


def read_callgrind(path):
    """The summary counts valgrind --cache-sim=yes prints at exit."""
    with open(path) as f:
        text = f.read()
    out = {}
    for key, pattern in CALLGRIND.items():
        m = pattern.search(text)
        if not m:
            raise ValueError(f"{path}: no '{key}' count")
        out[key] = int(m.group(1).replace(",", ""))
    return out


def cache_section(folder, meta, servers, runs_rows, plots, md):
    rows = [r for r in runs_rows if r["experiment"] == "cache"]
    if not rows:
        return
    md.append("## 4. Simulated caches: instructions and misses per event\n")
    cores = re.search(r"each of (\d+) cores", meta.get("cache_model", ""))
    md.append(f"Callgrind over `bench/locality_probe --all_cores`, which "
              f"does what each core of a {cores.group(1) if cores else '?'}"
              "-core server does, core by core, each starting from cold "
              "simulated caches "
              "of its own (L1s and a last-level slice; see its header), with "
              "instrumentation on only while the cores match (not while the "
              "index is built, nor, for partitioned, while the cohorts' masks "
              "are first computed: the masks other cores wrote are cold in "
              "each core's pass). Counts are the whole machine's, per "
              "published event. partitioned/S: phase 1 split over the cores "
              "by S (tasks is the server's: each core walks its own part of "
              "the predicate table). Hardware counters are not available in "
              "these virtual machines.\n")
    md.append("| layout | cohort_max | events | "
              "instructions/event | D1 misses/event | LL misses/event | "
              "LL misses per 1k instructions |")
    md.append("|---|---|---|---|---|---|---|")
    out, dat = [], []
    for r in rows:
        stem = os.path.join(folder, r["file"]).removesuffix(".json")
        with open(stem + ".json") as f:
            probe = json.load(f)
        counts = read_callgrind(stem + ".callgrind")
        scale = probe["cores_per_event"] / max(1, probe["events"])
        per = {k: counts[k] * scale for k in counts}
        per_k = per["LL"] / per["I"] * 1000 if per["I"] else float("nan")
        name = probe["layout"]
        if "phase1_split" in probe:
            name += "/" + probe["phase1_split"]
        md.append(f"| {name} | {probe['cohort_max']} | "
                  f"{probe['events']:,} | {per['I']:,.0f} | {per['D1']:,.0f} | "
                  f"{per['LL']:,.0f} | {per_k:.2f} |")
        out.append([name, probe["cohort_max"], probe["partitions"],
                    probe["subscriptions"], probe["events"], probe["matches"],
                    round(per["I"]), round(per["D"]), round(per["D1"]),
                    round(per["LL"]), round(per_k, 3)])
        dat.append(f'"{name}\\nc{probe["cohort_max"]}" '
                   f"{per['I']:.1f} {per['LL']:.2f}")
    write_csv(folder, "cache.csv",
              ["layout", "cohort_max", "partitions", "subscriptions_core0",
               "events_core0", "matches_core0", "instructions_per_event",
               "data_refs_per_event", "d1_misses_per_event",
               "ll_misses_per_event", "ll_misses_per_1k_instructions"], out)
    with open(os.path.join(folder, "fig_cache.dat"), "w") as f:
        f.write("\n".join(dat) + "\n")
    cap = (f"machine: {meta.get('machine', '?')} (simulated: "
           f"{meta.get('cache_model', '?')}). workload: "
           f"{meta.get('cache_workload', '?')}. probe: bench/locality_probe "
           "--layout=L --cohort_max=C --all_cores [--phase1_split=S].")
    png = gnuplot(folder, "fig_cache.png", """
set multiplot layout 1,2 title "Experiment 4: callgrind, per published event (whole machine)"
set bmargin at screen BOTTOM + 0.1
set grid
set style fill solid 0.5
set boxwidth 0.6
set yrange [0:*]
set key top left
set ylabel "instructions per event"
plot "fig_cache.dat" u 0:2:xtic(1) w boxes t "instructions"
set ylabel "last-level cache misses per event"
plot "fig_cache.dat" u 0:3:xtic(1) w boxes lc 2 t "LL misses"
unset multiplot
""", cap)
    add_figure(md, plots, png, 4, cap)


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    folder = argv[1]
    meta = read_meta(folder)
    servers = {r["config"]: r["flags"] for r in read_csv(folder, "servers.csv")}
    loads = {r["experiment"]: r["load_flags"]
             for r in read_csv(folder, "loads.csv")}
    runs_rows = read_csv(folder, "runs.csv")
    runs = Runs(folder)
    plots = []
    md = [f"# The StagedServer experiments on cohortd ({os.path.basename(os.path.normpath(folder))})\n"]
    md.append(f"- machine: {meta.get('machine', '?')}")
    md.append(f"- commit: {meta.get('commit', '?')}; started "
              f"{meta.get('date', '?')}; took "
              f"{meta.get('duration_total_s', '?')} s"
              f"{' (--quick)' if meta.get('quick') == '1' else ''}")
    md.append(f"- workload: {meta.get('workload', '?')}")
    md.append(f"- server CPUs: {meta.get('server_cpus', 'all')}; load "
              f"generator CPUs: {meta.get('client_cpus', 'all')}")
    md.append(f"- each point: {meta.get('reps')} x {meta.get('duration_s')} s "
              f"after {meta.get('warmup_s')} s warmup; median (min-max)")
    md.append(f"- the paper: {PAPER}\n")
    clients_section(folder, meta, servers, loads, runs, plots, md)
    cohort_section(folder, meta, servers, loads, runs, plots, md)
    locality_section(folder, meta, servers, loads, runs, plots, md)
    cache_section(folder, meta, servers, runs_rows, plots, md)
    text = "\n".join(md) + "\n"
    with open(os.path.join(folder, "report.md"), "w") as f:
        f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
