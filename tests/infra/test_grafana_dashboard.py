"""The Grafana dashboard (deploy/grafana/nodewright-dashboard.json) graphs only what the functions emit.

What is real: the simulator running the real handlers (tests/infra/scenarios/scale-down.yaml:
launches, a consolidation that deletes and replaces nodes, interruption messages), each
function's observer, the names the Lambda observer emits each metric under
(`adapters.metricnames`), and the namespace and service dimension the stack gives each function.
Observed: every panel's (namespace, service, metric), checked against what was emitted.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from infra.constructs.function import METRICS_NAMESPACE
from nodewright.adapters.metricnames import KARPENTER_NAMES, emitted_names
from nodewright.simulator.runner import run_scenario
from nodewright.simulator.scenario import load_scenario

REPO = Path(__file__).resolve().parents[2]
DASHBOARD = REPO / "deploy" / "grafana" / "nodewright-dashboard.json"


@pytest.fixture(scope="module")
def emitted() -> set[tuple[str, str]]:
    """(service, metric name) of every data point the functions emitted in a simulated run."""
    result = run_scenario(load_scenario(REPO / "tests" / "infra" / "scenarios" / "scale-down.yaml"), plots=False)
    assert result.world is not None
    return {
        (function, name)
        for function, observer in result.world.observers.items()
        for metric in observer.metrics
        for name in emitted_names(metric[0])
    }


def _targets() -> list[dict[str, Any]]:
    dashboard = json.loads(DASHBOARD.read_text())
    return [target for panel in dashboard["panels"] for target in panel["targets"]]


def test_every_panels_metric_is_emitted_by_the_function_it_names(emitted: set[tuple[str, str]]) -> None:
    targets = _targets()
    assert targets
    for target in targets:
        assert target["namespace"] == METRICS_NAMESPACE
        assert (target["dimensions"]["service"], target["metricName"]) in emitted, target["metricName"]


def test_the_dashboard_uses_karpenters_names_where_they_exist_and_the_cloudwatch_source() -> None:
    names = {t["metricName"] for t in _targets()}
    assert set(KARPENTER_NAMES) & names == set()  # never the Nodewright name where Karpenter's exists
    assert {n for n in names if n.startswith("karpenter_")} <= set(KARPENTER_NAMES.values())
    dashboard = json.loads(DASHBOARD.read_text())
    assert {p["datasource"]["type"] for p in dashboard["panels"]} == {"cloudwatch"}
