"""The shipped node-repair scenario, run by the simulator end to end: nodes break (NotReady, a node
monitoring agent condition, an impaired EC2 status check) and the consolidator handler repairs
them.

Real: the provisioner, consolidator and interruption handlers with their controllers, the
disruption engine, the EC2 adapter (DescribeInstanceStatus included) on moto, the DynamoDB state
store on moto, and the in-memory cluster (or, with `kube_api: http`, the Kubernetes adapter over
the API emulator), on the virtual clock. Faked: what breaks the nodes (nodewright/simulator/world/failures.py: the
condition written as the kubelet, the node lifecycle controller or the node monitoring agent
would, the impaired status check in DescribeInstanceStatus's answer). Observed: summary.json's
`repair` block, the consolidator's decisions, lost pods and violations.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from bench.repair import variant
from nodewright.simulator.runner import run_scenario
from nodewright.simulator.scenario import Scenario, ScenarioError, load_scenario

SCENARIO = Path(__file__).resolve().parents[2] / "examples" / "scenarios" / "node-repair.yaml"


def test_the_scenario_reads_its_failures() -> None:
    scenario = load_scenario(SCENARIO)
    assert [(f.at, f.cause) for f in scenario.node_failures] == [
        (300.0, "Ready=Unknown"),
        (2160.0, "KernelReady=False"),
        (2400.0, "status-check:system"),
        (3120.0, "Ready=False"),
    ]
    assert scenario.repair_max_unhealthy_percent == 20


@pytest.mark.parametrize("kube_api", ["inmemory", "http"])
def test_every_broken_node_is_repaired_and_its_pods_run_elsewhere_losing_none(kube_api: str) -> None:
    scenario = replace(load_scenario(SCENARIO), kube_api=kube_api)
    result = run_scenario(scenario, None, plots=False)
    summary = result.summary
    repair = summary["repair"]
    assert repair["nodes_broken"] == 4
    assert repair["not_recovered"] == 0
    assert repair["removed_by"] == {"repair": 4}
    by_cause = {cause: figures["max"] for cause, figures in repair["recovery_seconds_by_cause"].items()}
    # NotReady: Kubernetes deletes the pods after their 300 s toleration; new capacity boots in 35 s.
    assert 300 < by_cause["Ready=Unknown"] < 420
    assert 300 < by_cause["Ready=False"] < 420
    # Ready stays True: the pods move when repair replaces the node, 10 or 30 minutes in.
    assert 600 < by_cause["status-check:system"] < 780
    assert 1800 < by_cause["KernelReady=False"] < 1980
    assert summary["pods_lost"] == 0
    assert summary["pdb_violations"] == 0
    assert summary["do_not_disrupt_violations"] == 0
    assert summary["pods_pending_at_end"] == 0
    world = result.world
    assert world is not None
    decisions = [d for d in world.observers["consolidator"].decisions if d["decision"] == "repair"]
    assert sorted((d["condition"], d["status"]) for d in decisions) == [
        ("EC2StatusCheck", "impaired (system)"),
        ("KernelReady", "False"),
        ("Ready", "False"),
        ("Ready", "Unknown"),
    ]


def test_a_generated_variant_is_repaired_as_well() -> None:
    scenario = variant(load_scenario(SCENARIO), 101)
    summary = run_scenario(scenario, None, plots=False).summary
    assert summary["repair"]["nodes_broken"] == len(scenario.node_failures)
    assert summary["repair"]["not_recovered"] == 0
    assert summary["pods_lost"] == 0
    assert summary["pdb_violations"] == 0


def test_nothing_is_repaired_when_the_guard_forbids_it(scenario: Callable[[str], Scenario]) -> None:
    text = SCENARIO.read_text(encoding="utf-8").replace("duration: 90m", "duration: 45m")
    text += "repair_max_unhealthy_percent: 0\n"
    summary = run_scenario(scenario(text), None, plots=False).summary
    assert summary["repair"]["removed_by"] == {}
    assert summary["pods_lost"] == 0


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("{at: 5m, condition: Ready, status: False}", r"node_failures\[0\]\.status: quote \"False\""),
        ("{at: 5m, status_check: disk}", r"node_failures\[0\]\.status_check"),
        ("{at: 5m, status_check: system, condition: Ready}", "takes either status_check or condition"),
        ("{at: 5m, nodepool: gpu}", r"node_failures\[0\]\.nodepool: no NodePool is named 'gpu'"),
    ],
    ids=["bare-false", "unknown-check", "both", "unknown-nodepool"],
)
def test_a_bad_failure_entry_is_named(scenario: Callable[[str], Scenario], entry: str, message: str) -> None:
    text = SCENARIO.read_text(encoding="utf-8")
    text = text[: text.index("node_failures:")] + f"node_failures:\n  - {entry}\n"
    with pytest.raises(ScenarioError, match=message):
        scenario(text)
