"""Node repair, measured: how long a broken node's pods take to run elsewhere.

    python -m bench.repair [--seeds 3,11,27] [--variants 2] [--http] [--json FILE]

Runs examples/scenarios/node-repair.yaml through the simulator (the real handlers on moto and the
in-memory cluster) at each seed (the seed chooses which nodes break and the instance ids), then
`--variants` generated variants: the same cluster with four failures drawn from the variant's
seed (cause among Ready=Unknown, Ready=False, KernelReady=False, NetworkingReady=False and an
impaired system status check; times 5 to 50 minutes in, at least 10 minutes apart, so that no
more than two nodes are broken at once). `--http` runs each once more with `kube_api: http` (the
functions read the nodes' conditions through the real Kubernetes adapter over the API emulator).

Per run and over all runs: seconds from each failure to its pods running elsewhere (the node
holds no workload pod and every pod displaced from it is bound again: summary.json's `repair`
block), by cause, p50 and max; seconds from the failure to the node's removal; pods lost, PDB and
do-not-disrupt violations.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from nodewright.simulator.report.metrics import percentiles
from nodewright.simulator.runner import run_scenario
from nodewright.simulator.scenario import load_scenario
from nodewright.simulator.scenario.model import NodeFailure, Scenario

SCENARIO = Path(__file__).resolve().parents[1] / "examples" / "scenarios" / "node-repair.yaml"
CAUSES = (
    ("Ready", "Unknown", ""),
    ("Ready", "False", ""),
    ("KernelReady", "False", ""),
    ("NetworkingReady", "False", ""),
    ("", "", "system"),
)
MINUTE = 60.0


def variant(base: Scenario, seed: int) -> Scenario:
    """`base` with four failures drawn from `seed` (see the module docstring)."""
    rng = random.Random(seed)
    times = sorted(rng.sample(range(5, 51), 12))
    chosen: list[float] = []
    for t in times:
        if not chosen or t - chosen[-1] >= 10:
            chosen.append(float(t))
    failures = []
    for minute in chosen[:4]:
        condition, status, check = rng.choice(CAUSES)
        failures.append(
            NodeFailure(
                at=minute * MINUTE, condition=condition or "Ready", status=status or "Unknown", status_check=check
            )
        )
    return replace(base, name=f"{base.name}-variant-{seed}", seed=seed, node_failures=tuple(failures))


def measure(scenario: Scenario) -> dict[str, Any]:
    """One run's repair figures (see the module docstring)."""
    result = run_scenario(scenario, None, plots=False)
    summary = result.summary
    world = result.world
    assert world is not None
    start = world.scenario.start
    records = [
        {
            "cause": r.cause,
            "broke_at_s": r.broke_at - start,
            "pods": r.pods,
            "recovery_s": None if r.recovered_at is None else r.recovered_at - r.broke_at,
            "removed_s": None if r.removed_at is None else r.removed_at - r.broke_at,
            "removed_by": r.removed_by,
        }
        for r in world.recorder.repairs.values()
    ]
    return {
        "scenario": scenario.name,
        "seed": scenario.seed,
        "kube_api": scenario.kube_api,
        "nodes": records,
        "repair": summary["repair"],
        "pods_lost": summary["pods_lost"],
        "pdb_violations": summary["pdb_violations"],
        "do_not_disrupt_violations": summary["do_not_disrupt_violations"],
        "pods_pending_at_end": summary["pods_pending_at_end"],
        "handler_errors": summary["handler_errors"],
    }


def overall(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Every run's nodes together: recovery and removal by cause, and the totals."""
    nodes = [n for run in runs for n in run["nodes"]]
    causes = sorted({n["cause"] for n in nodes})

    def figures(values: list[float]) -> dict[str, Any]:
        p = percentiles(values)
        return {"p50": p["p50"], "max": p["max"], "count": p["count"]}

    return {
        "runs": len(runs),
        "nodes_broken": len(nodes),
        "not_recovered": sum(1 for n in nodes if n["recovery_s"] is None),
        "recovery_s": figures([n["recovery_s"] for n in nodes if n["recovery_s"] is not None]),
        "recovery_s_by_cause": {
            c: figures([n["recovery_s"] for n in nodes if n["cause"] == c and n["recovery_s"] is not None])
            for c in causes
        },
        "removed_s_by_cause": {
            c: figures([n["removed_s"] for n in nodes if n["cause"] == c and n["removed_s"] is not None])
            for c in causes
        },
        "pods_lost": sum(r["pods_lost"] for r in runs),
        "pdb_violations": sum(r["pdb_violations"] for r in runs),
        "do_not_disrupt_violations": sum(r["do_not_disrupt_violations"] for r in runs),
        "handler_errors": sum(r["handler_errors"] for r in runs),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Run the scenario, its seeds and variants, and print the figures."""
    parser = argparse.ArgumentParser(prog="python -m bench.repair", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="3,11,27", help="seeds of the shipped scenario (default 3,11,27)")
    parser.add_argument("--variants", type=int, default=2, help="generated variants (default 2)")
    parser.add_argument("--http", action="store_true", help="also run each with kube_api: http")
    parser.add_argument("--json", type=Path, help="write every run's figures here")
    args = parser.parse_args(argv)
    base = load_scenario(SCENARIO)
    scenarios = [base.with_seed(int(s)) for s in args.seeds.split(",") if s.strip()]
    scenarios += [variant(base, 100 + i) for i in range(args.variants)]
    if args.http:
        scenarios += [replace(s, kube_api="http") for s in list(scenarios)]
    runs = []
    for scenario in scenarios:
        run = measure(scenario)
        runs.append(run)
        by_cause = {c: (f["p50"], f["max"]) for c, f in run["repair"]["recovery_seconds_by_cause"].items()}
        print(
            f"{run['scenario']} seed {run['seed']} {run['kube_api']}: recovery s (p50, max) by cause {by_cause}; "
            f"lost {run['pods_lost']}, pdb {run['pdb_violations']}, dnd {run['do_not_disrupt_violations']}"
        )
    total = overall(runs)
    print(json.dumps(total, indent=1))
    if args.json is not None:
        args.json.write_text(json.dumps({"runs": runs, "overall": total}, indent=1), encoding="utf-8")
    return 0 if total["pods_lost"] == 0 and total["not_recovered"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
