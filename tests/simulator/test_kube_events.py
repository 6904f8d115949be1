"""Kubernetes Events in a simulation: the spot storm's, as the in-memory cluster stored them.

Faked: AWS (moto), the cluster (in memory), on a virtual clock. Real: the three handlers and
their controllers. Observed: summary.json's `kube_events` block and the report's figures.
"""

from __future__ import annotations

from pathlib import Path

from nodewright.simulator.runner import run_scenario
from nodewright.simulator.scenario import load_scenario

SPOT_STORM = Path(__file__).parents[2] / "examples" / "scenarios" / "spot-storm.yaml"


def test_the_spot_storm_leaves_its_interruption_drain_and_scheduler_events_in_the_summary(tmp_path: Path) -> None:
    result = run_scenario(load_scenario(SPOT_STORM), tmp_path, plots=False)

    events = result.summary["kube_events"]
    ours = events["nodewright"]
    interrupted = result.summary["interruption"]["instances"]
    assert interrupted
    # ReplaceThenDrain: the recommendation's drain has removed each node before its warning came.
    assert ours["SpotRebalanceRecommendation"]["events"] == interrupted
    assert ours["Evicted"]["events"] >= 1
    assert ours["Nominated"]["events"] >= 1  # the drained pods waited for their replacements
    assert events["default-scheduler"]["Scheduled"]["events"] >= result.summary["pods_created"] // 2
    assert all(n["occurrences"] >= n["events"] for reasons in events.values() for n in reasons.values())
    report = (tmp_path / "report.md").read_text()
    assert "Kubernetes Events from nodewright" in report
    assert "SpotRebalanceRecommendation" in report
