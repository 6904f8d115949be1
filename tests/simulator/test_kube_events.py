"""Kubernetes Events in a simulation: the spot storm's, as the in-memory cluster stored them.

Faked: AWS (moto), the cluster (in memory), on a virtual clock. Real: the three handlers and
their controllers (the session's `shipped_run`). Observed: summary.json's `kube_events` block and the report's figures.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from nodewright.simulator.runner import RunResult


def test_the_spot_storm_leaves_its_interruption_drain_and_scheduler_events_in_the_summary(
    tmp_path: Path, shipped_run: Callable[..., RunResult]
) -> None:
    result = shipped_run("spot-storm", tmp_path)

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
