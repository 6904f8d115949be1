"""Zone balance on generated days: how lopsided the zones get with and without it, and its cost.

Role: the figure behind the README's zone-balance row. Each seed's day is drawn by
`nodewright.simulator.scenario.generate` and run as `nodewright simulate` runs it (real handlers on
moto and the in-memory cluster, Nodewright's consolidation), twice: as drawn, and with every
NodePool annotated `nodewright.io/zone-balance: <--balance>` (default `nodes:1`). Nothing else
differs: same workloads, spot interruptions, capacity errors and prices.

    .venv/bin/python -m bench.zone_balance [--seeds 1,2,3] [--hours 1] [--balance nodes:1]
        [--jobs 2] [--json FILE]

Imbalance is measured per NodePool, as the setting holds it: at each minute of the day, the most
Nodewright nodes (running instances, from launch to termination) the NodePool has in one of the
scenario's zones minus the fewest it has in another (a zone with none counts 0), the NodePool with
the largest such difference counting for the minute. Per run: that skew's time-weighted mean, its
maximum, and at the end of the day; the bill (compute $), pods lost, PDB and limit violations,
pending -> bound p50/p99, nodes launched and CPU seconds of the run. A NodePool only ever used by
pods that pin themselves to one zone is lopsided either way: zone balance never moves a pod.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

SAMPLE_SECONDS = 60.0


def skew_over_time(records: Iterable[Any], zones: Sequence[str], start: float, end: float) -> list[float]:
    """Per minute from `start` to `end`, the largest per-NodePool difference between the zone with the
    most running instances and the zone with the fewest (records: the simulator's InstanceRecord).
    """
    records = list(records)
    pools = sorted({r.nodepool for r in records})
    out: list[float] = []
    t = start
    while t <= end:
        worst = 0.0
        for pool in pools:
            counts = dict.fromkeys(zones, 0)
            for r in records:
                if r.nodepool == pool and r.launched_at <= t and (r.terminated_at is None or r.terminated_at > t):
                    counts[r.zone] = counts.get(r.zone, 0) + 1
            worst = max(worst, float(max(counts.values()) - min(counts.values())))
        out.append(worst)
        t += SAMPLE_SECONDS
    return out


def run(task: tuple[int, float, str]) -> dict[str, Any]:
    """One seed's day, with zone balance `balance` on every NodePool (or as drawn when '')."""
    from nodewright.simulator.runner import run_scenario
    from nodewright.simulator.scenario.generate import generate, load

    seed, hours, balance = task
    document = generate(seed, hours=hours)
    if balance:
        for pool in document["nodepools"]:
            metadata = pool.setdefault("metadata", {})
            metadata.setdefault("annotations", {})["nodewright.io/zone-balance"] = balance
    scenario = load(document, f"<generated seed {seed}>")
    result = run_scenario(scenario, None, plots=False)
    summary, world = result.summary, result.world
    assert world is not None
    skews = skew_over_time(world.recorder.instances.values(), scenario.zones, scenario.start, world.end)
    pending = summary.get("pending_seconds") or {}
    return {
        "seed": seed,
        "balance": balance or "off",
        "skew_mean": round(statistics.fmean(skews), 3) if skews else 0.0,
        "skew_max": max(skews, default=0.0),
        "skew_end": skews[-1] if skews else 0.0,
        "cost_usd": round(summary["cost_usd"], 4),
        "pods_lost": summary["pods_lost"],
        "pdb_violations": summary["pdb_violations"],
        "limit_violations": summary["limit_violations"],
        "pending_p50": pending.get("p50", 0.0),
        "pending_p99": pending.get("p99", 0.0),
        "nodes_launched": summary["nodes_launched"],
        "cpu_seconds": summary["cpu_seconds"],
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.zone_balance", description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="1,2,3", help="comma-separated generated-day seeds")
    parser.add_argument("--hours", type=float, default=1.0, help="compress each drawn day to this many hours")
    parser.add_argument("--balance", default="nodes:1", help="the zone-balance annotation's value")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--json", help="write every row here")
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    tasks = [(seed, args.hours, balance) for seed in seeds for balance in ("", args.balance)]
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        rows = list(pool.map(run, tasks))
    header = (
        f"{'seed':>4} {'balance':>8} {'skew mean':>9} {'max':>4} {'end':>4} {'cost $':>9} {'lost':>4} "
        f"{'pdb':>3} {'limit':>5} {'p50 s':>6} {'p99 s':>6} {'nodes':>5} {'cpu s':>7}"
    )
    print(header)
    for r in rows:
        print(
            f"{r['seed']:>4} {r['balance']:>8} {r['skew_mean']:>9.2f} {r['skew_max']:>4.0f} {r['skew_end']:>4.0f} "
            f"{r['cost_usd']:>9.2f} {r['pods_lost']:>4} {r['pdb_violations']:>3} {r['limit_violations']:>5} "
            f"{r['pending_p50']:>6.1f} {r['pending_p99']:>6.1f} {r['nodes_launched']:>5} {r['cpu_seconds']:>7.1f}"
        )
    totals = {}
    for balance in ("off", args.balance):
        mine = [r for r in rows if r["balance"] == balance]
        totals[balance] = {
            "skew_mean": round(statistics.fmean(r["skew_mean"] for r in mine), 3),
            "skew_max": max(r["skew_max"] for r in mine),
            "skew_end_mean": round(statistics.fmean(r["skew_end"] for r in mine), 3),
            "cost_usd": round(sum(r["cost_usd"] for r in mine), 4),
            "pods_lost": sum(r["pods_lost"] for r in mine),
            "violations": sum(r["pdb_violations"] + r["limit_violations"] for r in mine),
        }
        t = totals[balance]
        print(
            f"all  {balance:>8} {t['skew_mean']:>9.2f} {t['skew_max']:>4.0f} {t['skew_end_mean']:>4.1f} "
            f"{t['cost_usd']:>9.2f} {t['pods_lost']:>4} violations {t['violations']}"
        )
    off, on = totals["off"]["cost_usd"], totals[args.balance]["cost_usd"]
    print(f"cost of zone balance: {on - off:+.2f} $ ({(on / off - 1) * 100 if off else 0.0:+.2f}%)")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump({"rows": rows, "totals": totals}, out, indent=2)
    failed = any(t["pods_lost"] or t["violations"] for t in totals.values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
