"""`nodewright simulate` through its command line."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from nodewright.cli import app
from nodewright.cli import commands as _commands  # noqa: F401  (registers the commands)
from tests.simulator.conftest import NODECLASS, deployment, nodepool

runner = CliRunner()


def test_simulate_writes_the_report_and_prints_where(tmp_path: Path) -> None:
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(
        "name: tiny\ndescription: a few pods\nduration: 2m\nconsolidation: off\n"
        f"nodepools:{nodepool()}nodeclasses:{NODECLASS}workloads:" + deployment("web", 10),
        encoding="utf-8",
    )
    report = tmp_path / "out"
    result = runner.invoke(app, ["simulate", str(scenario), "--report", str(report), "--seed", "5"])
    assert result.exit_code == 0, result.output
    assert "report:" in result.output
    assert "pods lost" in result.output
    summary = json.loads((report / "summary.json").read_text())
    assert summary["seed"] == 5
    assert summary["pods_lost"] == 0
    assert (report / "report.html").exists()


def test_an_invalid_scenario_is_refused_naming_the_file_and_field(tmp_path: Path) -> None:
    scenario = tmp_path / "broken.yaml"
    scenario.write_text("name: broken\nduration: 10 minutes\n", encoding="utf-8")
    result = runner.invoke(app, ["simulate", str(scenario)])
    assert result.exit_code == 1
    assert f"{scenario}:2: Scenario/broken: duration:" in result.output
    assert not (Path("sim-report") / "broken").exists()


def test_the_summary_names_pods_a_budget_held_until_the_reclaim_apart_from_the_lost(tmp_path: Path) -> None:
    scenario = tmp_path / "held.yaml"
    scenario.write_text(
        "name: held\nduration: 10m\nconsolidation: off\n"
        f"nodepools:{nodepool(capacity_types='spot')}nodeclasses:{NODECLASS}workloads:"
        + deployment("web", 6, cpu="2", memory="4Gi")
        + "pdbs:\n  - {apiVersion: policy/v1, kind: PodDisruptionBudget, metadata: {name: web},"
        " spec: {maxUnavailable: 0, selector: {matchLabels: {app: web}}}}\n"
        "interruptions:\n  - {at: 4m, count: 1, rebalance: false}\n",
        encoding="utf-8",
    )
    result = runner.invoke(app, ["simulate", str(scenario), "--report", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["pods_lost"] == 0
    assert summary["pods_held_by_pdb_at_interruption"] > 0
    assert "pods a PDB held until the reclaim" in result.output
