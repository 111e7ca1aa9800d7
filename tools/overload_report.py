#!/usr/bin/env python3
"""Checks and summarises a bench/overload.sh run (its pass criteria).

Reads the JSON reports of `cohort load`, the `cohort stats --json` snapshots
and rss.csv from the run directory; prints summary.md to stdout, ending with
"overload: N passed, M failed".

The memory bound is derived from the queue limits: what the server may hold
beyond its state before the overload is
  queue_limit x ADMITTED_EVENT_BYTES              (admitted, unanswered events)
  + listeners x listener_queue_limit x DELIVERY_BYTES   (queued deliveries)
  + GRPC_SLACK_BYTES                              (transport buffers, threads)
"""

import argparse
import csv
import json
import os
import statistics

# An admitted fabret event: its PublishRequest share (~10 attributes), the
# compact record, its EventResult and the per-partition partials; 2 KiB is
# about three times what they take, to cover allocator rounding.
ADMITTED_EVENT_BYTES = 2048
# A queued delivery: a shared copy of the event (the first delivery of an
# event pays for it), its id vector and the deque node.
DELIVERY_BYTES = 1024
# gRPC's own memory under load: HTTP/2 flow-control windows and write
# buffers of the publisher and listener connections, completion-queue
# threads' stacks and arenas. 64 MiB is an allowance, not a measurement.
GRPC_SLACK_BYTES = 64 << 20


def load(path):
    with open(path) as f:
        return json.load(f)


def stage_sum(stats, key):
    return sum(int(s.get(key, 0)) for s in stats.get("stages", []))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument("--capacity", type=float, required=True)
    p.add_argument("--unloaded_p99", type=float, required=True)
    p.add_argument("--queue_limit", type=int, required=True)
    p.add_argument("--latency_target_us", type=int, default=0)
    p.add_argument("--max_concurrent_streams", type=int, default=0)
    p.add_argument("--listener_queue_limit", type=int, required=True)
    p.add_argument("--listeners", type=int, required=True)
    p.add_argument("--policy", required=True)
    p.add_argument("--factor", type=float, required=True)
    p.add_argument("--server_up", type=int, required=True)
    a = p.parse_args()
    d = a.dir

    caps = sorted(
        load(os.path.join(d, f))["events_per_s"]
        for f in os.listdir(d)
        if f.startswith("capacity_") and f != "capacity_q.json"
    )
    cap_q = load(os.path.join(d, "capacity_q.json"))["events_per_s"]
    unloaded = load(os.path.join(d, "unloaded.json"))
    # The unloaded run of the overload configuration (listeners attached);
    # absent without listeners (and in runs made before it existed).
    ul_path = os.path.join(d, "unloaded_listeners.json")
    unloaded_l = load(ul_path) if os.path.exists(ul_path) else None
    over = load(os.path.join(d, "overload.json"))
    rec_closed = load(os.path.join(d, "recovery_closed.json"))
    rec_open = load(os.path.join(d, "recovery_open.json"))
    before = load(os.path.join(d, "stats_before.json"))
    during = load(os.path.join(d, "stats_overload.json"))
    with open(os.path.join(d, "rss.csv")) as f:
        rss = [(float(r["t_s"]), int(r["rss_kib"])) for r in csv.DictReader(f)]

    u99 = a.unloaded_p99
    # The baseline for the latency criteria: the same configuration at low
    # load (Ul), else U.
    base99 = unloaded_l["latency_us"]["p99"] if unloaded_l else u99
    base_name = "Ul" if unloaded_l else "U"
    checks = []

    def check(name, ok, detail):
        checks.append((name, ok, detail))

    check("server up", a.server_up == 1,
          "cohortd ran and answered GetStats after the overload")

    base_kib = rss[0][1] if rss else 0
    peak_kib = max((r for _, r in rss), default=0)
    bound = (a.queue_limit * ADMITTED_EVENT_BYTES +
             a.listeners * a.listener_queue_limit * DELIVERY_BYTES +
             GRPC_SLACK_BYTES)
    growth = (peak_kib - base_kib) * 1024
    check("memory bound", bool(rss) and growth <= bound,
          f"RSS {base_kib / 1024:.0f} MiB before, peak {peak_kib / 1024:.0f} "
          f"MiB: growth {growth / 2**20:.1f} MiB <= bound "
          f"{bound / 2**20:.1f} MiB ({a.queue_limit} x "
          f"{ADMITTED_EVENT_BYTES} B + {a.listeners} x "
          f"{a.listener_queue_limit} x {DELIVERY_BYTES} B + "
          f"{GRPC_SLACK_BYTES >> 20} MiB)")

    p99 = over["latency_us"]["p99"]
    also = (f"; {p99 / u99:.2f}x U = {u99 / 1000:.2f} ms, without listeners"
            if unloaded_l else "")
    check("admitted p99", p99 <= 2 * base99,
          f"{p99 / 1000:.2f} ms <= 2 x {base_name} {base99 / 1000:.2f} ms "
          f"({p99 / base99:.2f}x{also})")

    errors = over.get("errors") or {}
    other = {k: v for k, v in errors.items() if k != "RESOURCE_EXHAUSTED"}
    rejected = errors.get("RESOURCE_EXHAUSTED", 0)
    check("rejections", not other and over["unanswered"] == 0 and rejected > 0,
          f"{rejected} RESOURCE_EXHAUSTED, other errors {other or 'none'}, "
          f"{over['unanswered']} unanswered")

    dropped = stage_sum(during, "droppedDeliveries") - stage_sum(
        before, "droppedDeliveries")
    disconnected = stage_sum(during, "disconnectedListeners") - stage_sum(
        before, "disconnectedListeners")
    goodput = over["events_per_s"]
    if a.policy == "drop":
        shed = dropped > 0
        what = f"{dropped} deliveries dropped"
    else:
        shed = disconnected >= 2
        what = f"{disconnected} listeners disconnected"
    if a.listeners == 0:
        shed = True
        what = "no listeners (--no_listeners)"
    check("slow listeners", shed and goodput >= 0.5 * cap_q,
          f"--slow_listener={a.policy}: {what}; publishers' goodput "
          f"{goodput:,.0f} events/s = {goodput / cap_q:.0%} of Cq")

    rc = rec_closed["events_per_s"]
    ro99 = rec_open["latency_us"]["p99"]
    check("recovery", rc >= 0.8 * cap_q and ro99 <= 2 * base99,
          f"right after: closed loop {rc:,.0f} events/s = "
          f"{rc / cap_q:.0%} of Cq; open loop p99 {ro99 / 1000:.2f} ms "
          f"({ro99 / base99:.2f}x {base_name})")

    print(f"# Overload run ({d})\n")
    print(f"| phase | events/s | p50 ms | p99 ms | failed requests |")
    print(f"|---|---:|---:|---:|---|")
    print(f"| A. capacity, closed loop (median of {len(caps)}; "
          f"{caps[0]:,.0f}-{caps[-1]:,.0f}) | {a.capacity:,.0f} | | | |")
    print(f"| C. Cq: capacity of the overload configuration, closed loop "
          f"| {cap_q:,.0f} | | | |")
    rows = [("B. U: unloaded, 10% of capacity", unloaded)]
    if unloaded_l:
        rows.append(("C. Ul: unloaded, 10%, overload configuration",
                     unloaded_l))
    rows += [(f"C. overload, offered {a.factor:g}x capacity", over),
             ("D. recovery, closed loop", rec_closed),
             ("D. recovery, open loop 10%", rec_open)]
    for name, r in rows:
        lat = r["latency_us"]
        print(f"| {name} | {r['events_per_s']:,.0f} | {lat['p50'] / 1000:.2f} "
              f"| {lat['p99'] / 1000:.2f} | {r.get('errors') or 'none'} |")
    roles = ("2 normal, 2 slow, 2 stopped" if a.listeners else "none")
    target = (f"--latency_target_us={a.latency_target_us} (U / 2)"
              if a.latency_target_us else "no --latency_target_us")
    limit_now = during.get("admissionLimit", "?")
    print(f"\n--queue_limit={a.queue_limit} (capacity x unloaded p99, whole "
          f"requests), {target}; admission limit in force at the end of C: "
          f"{limit_now} events; --slow_listener={a.policy}, "
          f"--listener_queue_limit={a.listener_queue_limit}, "
          f"--max_concurrent_streams={a.max_concurrent_streams}, {a.listeners} "
          f"listeners ({roles}), attached before Cq\n")
    passed = sum(1 for _, ok, _ in checks if ok)
    for name, ok, detail in checks:
        print(f"- {'PASS' if ok else 'FAIL'} {name}: {detail}")
    print(f"\noverload: {passed} passed, {len(checks) - passed} failed")


if __name__ == "__main__":
    main()
