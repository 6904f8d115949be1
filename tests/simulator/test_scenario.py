"""Scenario files: the shipped ones are valid, and every problem names the file, line and field."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from nodewright.simulator.scenario import Scenario, ScenarioError, load_scenario, parse_scenario
from tests.simulator.conftest import NODECLASS, deployment, nodepool

SCENARIOS = sorted((Path(__file__).parents[2] / "examples" / "scenarios").glob("*.yaml"))


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_every_shipped_scenario_is_valid_and_says_what_it_shows(path: Path) -> None:
    scenario = load_scenario(path)
    assert scenario.name == path.stem
    assert scenario.nodepools
    assert scenario.workloads
    assert scenario.description
    assert path.read_text().startswith("#")  # the comment saying what it shows


def test_the_five_scenarios_of_the_issue_are_shipped() -> None:
    assert {p.stem for p in SCENARIOS} >= {"scale-up", "spot-storm", "diurnal", "limits", "zone-outage"}


def problems(text: str, tmp_path: Path) -> list[str]:
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ScenarioError) as raised:
        load_scenario(path)
    return [str(p) for p in raised.value.problems]


BASE = f"name: bad\nduration: 5m\nnodepools:{nodepool()}nodeclasses:{NODECLASS}"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            BASE.replace("duration: 5m", "duration: soon"), "bad.yaml:2: Scenario/bad: duration:", id="duration"
        ),
        pytest.param(BASE + "colour: blue\n", "colour: unknown field", id="unknown-field"),
        pytest.param(BASE.replace("name: bad", "name: Bad_Name"), "name:", id="name"),
        pytest.param(
            BASE + "interruptions:\n  - {at: 1m}\n",
            "interruptions[0]: needs exactly one of count and fraction",
            id="interruption-size",
        ),
        pytest.param(
            BASE + "interruptions:\n  - {at: 1m, fraction: 1.5}\n",
            "interruptions[0].fraction: must be between",
            id="fraction",
        ),
        pytest.param(
            BASE + "capacity_errors:\n  - {zone: us-west-2a}\n", "capacity_errors[0].zone:", id="capacity-error-zone"
        ),
        pytest.param(BASE + "consolidation: sometimes\n", "consolidation:", id="consolidation-mode"),
        pytest.param(
            BASE + "workloads:" + deployment("web", 1, schedule="    replicas: [{at: 1m}]\n"),
            "workloads[0].replicas[0]: needs exactly one of replicas and diurnal",
            id="segment",
        ),
        pytest.param(
            BASE.replace("operator: Gt", "operator: Greater"),
            "NodePool/default: spec.template.spec.requirements[3].operator:",
            id="nodepool-through-the-project-parser",
        ),
        pytest.param(
            BASE.replace("name: default}", "name: other}", 1), "refers to EC2NodeClass 'other'", id="nodeclass-ref"
        ),
        pytest.param(
            BASE + "pdbs: [{kind: PodDisruptionBudget, metadata: {name: x}, spec: {}}]\n", "pdbs[0].spec", id="pdb"
        ),
        pytest.param(BASE.replace("nodepools:", "nodepools:\n  - missing.yaml", 1), "cannot read", id="missing-file"),
        pytest.param(
            BASE + "consolidation_min_savings_percent: 150\n",
            "consolidation_min_savings_percent: must be between 0 and 100",
            id="guard-percent",
        ),
        pytest.param(
            BASE + "workloads:\n  - at: 1m\n    manifest: {apiVersion: apps/v1, kind: Deployment, metadata: {name: w}, "
            "spec: {template: {spec: {containers: [{name: c, image: i}]}}}}\n",
            "workloads[0].at: only a DaemonSet is created later",
            id="at-on-a-deployment",
        ),
        pytest.param(
            BASE + "workloads:\n  - at: 9m\n    manifest: {apiVersion: apps/v1, kind: DaemonSet, metadata: {name: d}, "
            "spec: {template: {spec: {containers: [{name: c, image: i}]}}}}\n",
            "workloads[0].at: is after the end of the scenario",
            id="daemonset-after-the-end",
        ),
        pytest.param(BASE + "ami_releases: [soon]\n", "ami_releases[0]:", id="ami-release-duration"),
        pytest.param(
            BASE + "ami_releases: [1m, 5m]\n",
            "ami_releases[1]: is not before the scenario's duration",
            id="ami-release-after-the-end",
        ),
        pytest.param("kind: Simulation\n" + BASE, 'kind: must be Scenario, got "Simulation"', id="kind"),
        pytest.param("apiVersion: v1\n" + BASE, "apiVersion: must be nodewright.io/v1alpha1", id="api-version"),
    ],
)
def test_problems_name_the_file_and_the_field(text: str, expected: str, tmp_path: Path) -> None:
    found = problems(text, tmp_path)
    assert any(expected in p for p in found), found
    assert all(str(tmp_path / "bad.yaml") in p or "missing.yaml" in p for p in found), found


def test_a_daemonset_entry_with_at_is_created_then(tmp_path: Path) -> None:
    path = tmp_path / "late.yaml"
    path.write_text(
        BASE + "workloads:\n  - at: 2m\n    manifest: {apiVersion: apps/v1, kind: DaemonSet, metadata: {name: d}, "
        "spec: {template: {spec: {containers: [{name: c, image: i, resources: {requests: {cpu: 500m}}}]}}}}\n",
        encoding="utf-8",
    )
    loaded = load_scenario(path)
    assert loaded.daemonsets == ()
    assert [(t, d.name) for t, d in loaded.late_daemonsets] == [(120.0, "d")]


def test_ami_releases_are_read_in_time_order(tmp_path: Path) -> None:
    path = tmp_path / "releases.yaml"
    path.write_text(BASE + "ami_releases: [4m, 90s]\n", encoding="utf-8")
    assert load_scenario(path).ami_releases == (90.0, 240.0)


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    found = problems("name: x\nduration: -1m\nseed: many\nboot_delay: later\n", tmp_path)
    fields = " ".join(found)
    for field in ("duration", "seed", "boot_delay", "nodepools"):
        assert field in fields


def test_a_diurnal_curve_runs_between_its_bounds_and_peaks_when_told(scenario: Callable[[str], Scenario]) -> None:
    loaded = scenario(
        BASE
        + "workloads:"
        + deployment(
            "web", 1, schedule="    replicas: [{at: 0s, diurnal: {min: 200, max: 2000, period: 24h, peak: 12h}}]\n"
        )
    )
    web = loaded.workloads[0]
    assert web.replicas_at(0) == 200
    assert web.replicas_at(12 * 3600) == 2000
    assert 200 < web.replicas_at(6 * 3600) < 2000
    assert len(web.change_times(3600)) == 60  # every minute by default


def test_steps_hold_until_the_next_one(scenario: Callable[[str], Scenario]) -> None:
    loaded = scenario(
        BASE
        + "workloads:"
        + deployment("web", 7, schedule="    replicas: [{at: 1m, replicas: 10}, {at: 3m, replicas: 0}]\n")
    )
    web = loaded.workloads[0]
    assert [web.replicas_at(t) for t in (0, 60, 120, 180, 240)] == [7, 10, 10, 0, 0]


def test_inline_documents_report_lines_of_the_scenario_file(tmp_path: Path) -> None:
    text = BASE.replace("operator: Gt", "operator: Greater")
    with pytest.raises(ScenarioError) as raised:
        parse_scenario(text, tmp_path / "inline.yaml")
    (problem,) = [p for p in raised.value.problems if "operator" in p.path]
    assert problem.line == text.splitlines().index(next(line for line in text.splitlines() if "Greater" in line)) + 1


def test_the_stability_guard_is_read_from_the_scenario(scenario: Callable[[str], Scenario]) -> None:
    text = BASE.replace("name: bad", "name: guarded")
    loaded = scenario(text + "consolidation_min_savings: 0.02\nconsolidation_min_savings_percent: 5\n")
    assert (loaded.consolidation_min_savings, loaded.consolidation_min_savings_percent) == (0.02, 5.0)
    assert (scenario(text).consolidation_min_savings, scenario(text).consolidation_min_savings_percent) == (0.0, 0.0)


def test_the_cpu_charge_and_single_flight_are_read_and_default_to_the_plain_clock(
    scenario: Callable[[str], Scenario], tmp_path: Path
) -> None:
    text = BASE.replace("name: bad", "name: charged")
    loaded = scenario(text + "cpu_charge: 1.7\nfunctions:\n  provisioner: {rate: 1m, single_flight: true}\n")
    assert loaded.cpu_charge == 1.7
    assert loaded.provisioner.single_flight
    assert not loaded.consolidator.single_flight
    plain = scenario(text)
    assert (plain.cpu_charge, plain.provisioner.single_flight) == (0.0, False)
    found = problems(text + "cpu_charge: -1\nfunctions:\n  provisioner: {single_flight: maybe}\n", tmp_path)
    assert any("cpu_charge" in p for p in found)
    assert any("single_flight" in p for p in found)
