"""Nodewright's own bill: the pricing of what a run measured, and the block every summary carries.

Real: the simulator (handlers, moto, the in-memory cluster; the session's `shipped_run`) for the
summary test. Observed: the
`self_cost` block and the report's row.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from nodewright.simulator.report.selfcost import (
    HOURS_PER_MONTH,
    LAMBDA_GB_SECOND_ARM,
    LAMBDA_REQUEST,
    METRIC_MONTH,
    AwsCalls,
    Invocation,
    self_cost,
)
from nodewright.simulator.runner import RunResult


def test_an_hour_of_one_waiting_provisioner_is_priced_by_its_gigabyte_seconds_and_scaled_to_a_month() -> None:
    invocations = [Invocation("provisioner", 58.0, 512) for _ in range(60)]
    metric = ("KubeApiRequests", 4.0, "Count", {})
    cost = self_cost(
        hours=1.0,
        invocations=invocations,
        calls=AwsCalls(),
        decisions={"provisioner": []},
        metrics={"provisioner": [metric, metric]},
    )
    lambda_month = (60 * 58 * 0.5 * LAMBDA_GB_SECOND_ARM + 60 * LAMBDA_REQUEST) * HOURS_PER_MONTH
    assert cost["by_item_usd_per_month"]["lambda"] == pytest.approx(lambda_month, abs=0.01)
    assert cost["lambda_gb_seconds_per_month"] == {"provisioner": round(60 * 58 * 0.5 * HOURS_PER_MONTH)}
    assert cost["custom_metrics"] == 1  # the same name and dimensions is one metric
    assert cost["by_item_usd_per_month"]["metrics"] == METRIC_MONTH
    assert cost["invocations_per_month"] == {"provisioner": 60 * 730}


def test_a_run_of_no_time_has_no_monthly_cost() -> None:
    with pytest.raises(ValueError, match="no time"):
        self_cost(hours=0, invocations=[], calls=AwsCalls(), decisions={}, metrics={})


def test_every_simulation_reports_what_nodewright_itself_would_cost(
    tmp_path: Path, shipped_run: Callable[..., RunResult]
) -> None:
    result = shipped_run("scale-up", tmp_path)
    own = result.summary["self_cost"]
    # The provisioner waits for pods until 10 s before its 68 s timeout, every minute.
    seconds_a_month = own["lambda_gb_seconds_per_month"]["provisioner"]  # at 1,024 MB: GB-s = seconds
    assert 0.9 * 58 * 60 * 730 < seconds_a_month < 1.05 * 60 * 60 * 730
    assert own["dynamodb_per_month"]["writes"] > 0
    assert own["usd_per_month"] == pytest.approx(sum(own["by_item_usd_per_month"].values()), abs=0.02)
    assert "Nodewright's own AWS bill" in (tmp_path / "report.md").read_text()
