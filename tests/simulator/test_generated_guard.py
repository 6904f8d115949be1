"""The CI guard of issue 15: generated days, nobody's tuning, in nodewright and karpenter modes.

Real: the scenario generator and the whole simulator (the Lambda handlers, moto, the in-memory
cluster) on seeds 1 to 4, each day compressed to half an hour with a quarter of its replicas so the
module stays near a minute of CPU (70 s measured). Observed: each run's summary. A seed fails on a
lost pod, a PDB violation (in either mode) or nodewright mode's bill (compute and its own cost)
above the Karpenter reference's (compute and the nodes hosting its controller); `karpenter` is the
Karpenter v1.14 reference since issue 34 (it was Nodewright's engine without many-to-many before).

The seeds are the first ones, not chosen: a seed current code fails is marked xfail(strict=True)
with its symptom, so the fix shows up as an unexpected pass and the mark must then go.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from nodewright.simulator.runner import run_scenario
from nodewright.simulator.scenario.generate import generate, load

SEEDS = (1, 2, 3, 4)
HOURS = 0.5
SCALE = 0.25
# What each failing seed showed against the Karpenter reference, while it fails (none today: seeds 1
# and 4 failed until preferred pod anti-affinity stopped buying a node per replica).
KNOWN_FAILURES: dict[int, str] = {}


def _run(seed: int, mode: str) -> dict[str, Any]:
    scenario = load(generate(seed, hours=HOURS, scale=SCALE), f"<generated seed {seed}>")
    return run_scenario(replace(scenario, consolidation=mode), plots=False).summary


@pytest.mark.parametrize(
    "seed",
    [
        pytest.param(seed, marks=pytest.mark.xfail(strict=True, reason=KNOWN_FAILURES[seed]))
        if seed in KNOWN_FAILURES
        else seed
        for seed in SEEDS
    ],
    ids=[f"seed-{seed}" for seed in SEEDS],
)
def test_a_generated_day_loses_no_pod_breaks_no_pdb_and_costs_no_more_than_karpenter_mode(seed: int) -> None:
    runs = {mode: _run(seed, mode) for mode in ("nodewright", "karpenter")}
    for mode, summary in runs.items():
        assert summary["pods_lost"] == 0, f"seed {seed}, {mode} mode: {summary['pods_lost']} pods lost"
        assert summary["pdb_violations"] == 0, f"seed {seed}, {mode} mode: {summary['pdb_violations']} PDB violations"
    nodewright, karpenter = runs["nodewright"]["bill"]["total_usd"], runs["karpenter"]["bill"]["total_usd"]
    ratio = nodewright / karpenter
    assert nodewright <= karpenter, f"seed {seed}: ${nodewright:.4f} > karpenter's ${karpenter:.4f} ({ratio:.3f}x)"
