"""A DaemonSet added to a packed cluster: how long its pods wait, per overflow policy.

Role: the figure behind the README's late-DaemonSet row. Runs examples/scenarios/late-daemonset.yaml
as `nodewright simulate` runs it (real handlers on moto and the in-memory cluster), once per value of
the NodePool's `nodewright.io/daemonset-overflow` annotation (Replace, Report, Ignore), and samples
every 30 s of virtual time how many DaemonSet pods wait unbound for their node.

    .venv/bin/python -m bench.late_daemonset [--policies Replace,Report,Ignore] [--jobs 3] [--json FILE]

Per run: daemon pods waiting at their peak and at the end, when the last one was bound (seconds
after the DaemonSet appeared; none while any waits at the end), nodes launched, cost, pods lost,
PDB and limit violations, and the run's CPU seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

SCENARIO = Path(__file__).resolve().parents[1] / "examples" / "scenarios" / "late-daemonset.yaml"
SAMPLE_SECONDS = 30.0


def run(policy: str) -> dict[str, Any]:
    """One run of the scenario with the NodePools' overflow policy set to `policy`."""
    from nodewright.simulator.runner import run_scenario
    from nodewright.simulator.scenario import load_scenario

    scenario = load_scenario(str(SCENARIO))
    scenario = replace(scenario, nodepools=tuple(replace(p, daemon_overflow=policy) for p in scenario.nodepools))
    appears = min(t for t, _ in scenario.late_daemonsets)
    samples: list[tuple[float, int]] = []

    def sample(world: Any, t: float) -> None:
        waiting = sum(1 for p in world.cluster.snapshot().pods if p.daemon and not p.node_name)
        samples.append((t, waiting))

    def schedule(world: Any) -> None:
        t = 0.0
        while t <= scenario.duration:
            world.loop.at(scenario.start + t, lambda t=t: sample(world, t))
            t += SAMPLE_SECONDS

    summary = run_scenario(scenario, None, plots=False, on_built=schedule).summary
    waited = [t for t, n in samples if n > 0]
    at_end = samples[-1][1] if samples else 0
    return {
        "policy": policy,
        "waiting_peak": max((n for _, n in samples), default=0),
        "waiting_at_end": at_end,
        "all_bound_after_s": None if at_end or not waited else max(waited) + SAMPLE_SECONDS - appears,
        "nodes_launched": summary["nodes_launched"],
        "cost_usd": round(summary["cost_usd"], 4),
        "pods_lost": summary["pods_lost"],
        "pdb_violations": summary["pdb_violations"],
        "limit_violations": summary["limit_violations"],
        "cpu_seconds": summary["cpu_seconds"],
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.late_daemonset", description=__doc__.splitlines()[0])
    parser.add_argument("--policies", default="Replace,Report,Ignore")
    parser.add_argument("--jobs", type=int, default=3)
    parser.add_argument("--json", help="write every row here")
    args = parser.parse_args(argv)
    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        rows = list(pool.map(run, policies))
    print(
        f"{'policy':>8} {'peak':>5} {'at end':>6} {'all bound after':>15} {'nodes':>5} {'cost $':>7} "
        f"{'lost':>4} {'pdb':>3} {'limit':>5} {'cpu s':>6}"
    )
    for r in rows:
        bound = "never" if r["all_bound_after_s"] is None else f"{r['all_bound_after_s']:.0f} s"
        print(
            f"{r['policy']:>8} {r['waiting_peak']:>5} {r['waiting_at_end']:>6} {bound:>15} {r['nodes_launched']:>5} "
            f"{r['cost_usd']:>7.2f} {r['pods_lost']:>4} {r['pdb_violations']:>3} {r['limit_violations']:>5} "
            f"{r['cpu_seconds']:>6.1f}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2), encoding="utf-8")
    return 1 if any(r["pods_lost"] or r["pdb_violations"] or r["limit_violations"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
