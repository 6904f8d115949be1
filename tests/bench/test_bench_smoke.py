"""The scheduling benchmark at small sizes: every plan valid, the bound below every plan.

Runs the real harness (bundled catalog, both schedulers, the LP) on a few dozen pods per workload,
so a change that breaks the benchmark or produces an invalid plan fails here in seconds.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

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
