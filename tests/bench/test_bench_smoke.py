"""The scheduling benchmark at small sizes: every plan valid, the bound below every plan.

Runs the real harness (bundled catalog, both schedulers, the LP) on a few dozen pods per workload,
so a change that breaks the benchmark or produces an invalid plan fails here in seconds.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from bench import scheduling
from bench.harness import instance_types
from bench.harness.workloads import WORKLOADS
from nodewright.model.instancetype import InstanceType


@pytest.fixture(scope="module")
def types() -> list[InstanceType]:
    return instance_types.benchmark_types()


def test_the_benchmark_takes_400_types_from_the_c_m_r_families(types: list[InstanceType]) -> None:
    assert len(types) == instance_types.KARPENTER_TYPE_COUNT
    assert {t.label("karpenter.k8s.aws/instance-category") for t in types} == {"c", "m", "r"}
    prices = [o.price for o in (t.cheapest_offering() for t in types) if o is not None]
    assert prices == sorted(prices)


@pytest.mark.parametrize("workload", sorted(WORKLOADS))
def test_every_workload_yields_valid_plans_no_cheaper_than_the_bound(workload: str, types: list[InstanceType]) -> None:
    row = scheduling.measure(workload, 60, types, instance_types.default_pool(), repeats=1)

    # measure() raises InvalidPlan for an invalid plan from either scheduler.
    assert row.unschedulable == 0
    assert row.karpenter_unschedulable == 0
    assert row.bound > 0
    assert row.cost >= row.bound * (1 - 1e-6)
    assert row.karpenter_cost >= row.bound * (1 - 1e-6)
    assert row.aggregate_bound <= row.bound * (1 + 1e-6)


def test_main_prints_the_table_and_writes_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "results.json"

    status = scheduling.main(["--case", "diverse:50", "--case", "uniform:40", "--repeats", "1", "--json", str(out)])

    assert status == 0
    printed = capsys.readouterr().out
    assert "cost vs Karpenter" in printed
    assert "machine:" in printed
    document = json.loads(out.read_text())
    assert [(r["workload"], r["pods"]) for r in document["rows"]] == [("diverse", 50), ("uniform", 40)]
    assert document["instance_types"] == 400
    assert "vs 1k-5k" in printed
    assert "CPU s" in printed
    assert document["size_drift"] == []  # no case of 10,000 pods or more


def _row(workload: str, pods: int, ratio: float) -> scheduling.Row:
    nan = float("nan")
    return scheduling.Row(
        workload, pods, 1.0, 1.0, pods, 1, 100 * ratio, 0, 100.0, 100.0, ratio, nan, 0, 0, 0.0, 0, nan
    )


def test_a_large_case_is_compared_with_the_mean_ratio_of_the_same_workload_at_1k_to_5k_pods() -> None:
    rows = [
        _row("diverse", 100, 1.30),  # below 1,000 pods: not a reference
        _row("diverse", 1_000, 1.05),
        _row("diverse", 5_000, 1.07),
        _row("diverse", 10_000, 1.065),
        _row("diverse", 20_000, 1.14),
        _row("uniform", 2_000, 1.00),
        _row("batch", 20_000, 1.00),  # no small case of its own workload
    ]

    drift = scheduling.size_drift(rows)

    assert sorted(drift) == [("diverse", 10_000), ("diverse", 20_000)]
    ten, twenty = drift[("diverse", 10_000)], drift[("diverse", 20_000)]
    assert ten.small_pods == (1_000, 5_000)
    assert ten.small_ratio == pytest.approx(1.06)
    assert ten.drift == pytest.approx(1.065 / 1.06 - 1)
    assert ten.within
    assert twenty.drift == pytest.approx(1.14 / 1.06 - 1)
    assert not twenty.within
    printed = _render(scheduling.table(rows, "t"))
    assert "+0.5% (yes)" in printed
    assert "+7.5% (no)" in printed


def _render(table: object) -> str:
    console = Console(width=250, record=True)
    console.print(table)
    return console.export_text()
