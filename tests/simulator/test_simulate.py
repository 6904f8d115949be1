"""End-to-end runs of short scenarios: the provisioner's and the interruption function's goals."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from nodewright.model import labels as wk
from nodewright.simulator.runner import run_scenario
from nodewright.simulator.scenario import Scenario
from tests.simulator.conftest import NODECLASS, deployment, nodepool

PNG = b"\x89PNG\r\n\x1a\n"


def test_a_burst_of_pods_is_launched_for_within_seconds_and_nothing_is_lost(
    scenario: Callable[[str], Scenario], tmp_path: Path
) -> None:
    burst = scenario(
        "name: burst\nduration: 4m\nconsolidation: off\n"
        f"nodepools:{nodepool()}nodeclasses:{NODECLASS}workloads:"
        + deployment("web", 0, schedule="    replicas: [{at: 0s, replicas: 0}, {at: 20s, replicas: 150}]\n")
    )
    result = run_scenario(burst, tmp_path / "report")
    summary = result.summary
    assert summary["pods_lost"] == 0
    assert summary["pdb_violations"] == 0
    assert summary["limit_violations"] == 0
    assert summary["handler_errors"] == 0
    # The provisioner's goal: pending -> CreateFleet within 3 s at the median, 12 s at p99.
    assert summary["pending_to_launch_seconds"]["count"] == 150
    assert summary["pending_to_launch_seconds"]["p50"] <= 3
    assert summary["pending_to_launch_seconds"]["p99"] <= 12
    # ... and the pods are bound once their nodes have booted (35 s).
    assert 35 <= summary["pending_seconds"]["p50"] <= 45
    world = result.world
    assert world is not None
    assert all(p.node_name for p in world.cluster.memory.pods())
    nodes = world.cluster.memory.nodes()
    assert nodes
    assert all(n.ready and n.provider_id.startswith("aws:///us-east-1") for n in nodes)
    assert all(n.labels[wk.NODEPOOL] == "default" and n.labels[wk.NW_NODECLAIM] for n in nodes)
    assert summary["nodes_launched"] == len(nodes)
    assert summary["cost_usd"] > 0
    files = {p.name for p in result.files}
    assert {"summary.json", "report.md", "report.html", "nodes.png", "pending.png", "cost.png"} <= files
    for name in ("nodes.png", "pending.png", "cost.png", "overview.png"):
        assert (tmp_path / "report" / name).read_bytes().startswith(PNG)
    assert "pods lost" in (tmp_path / "report" / "report.md").read_text()
    assert "data:image/png;base64," in (tmp_path / "report" / "report.html").read_text()


def test_spot_interruptions_travel_eventbridge_and_sqs_to_the_handler_and_no_pod_is_lost(
    scenario: Callable[[str], Scenario],
) -> None:
    storm = scenario(
        "name: storm\nduration: 12m\nconsolidation: off\n"
        f"nodepools:{nodepool(capacity_types='spot')}nodeclasses:{NODECLASS}workloads:"
        + deployment("web", 40)
        + "pdbs:\n  - {apiVersion: policy/v1, kind: PodDisruptionBudget, metadata: {name: web},"
        " spec: {maxUnavailable: 25%, selector: {matchLabels: {app: web}}}}\n"
        "interruptions:\n  - {at: 4m, count: 2, within: 1m, rebalance_lead: 1m}\n"
    )
    summary = run_scenario(storm).summary
    assert summary["interruption"]["instances"] == 2
    assert summary["invocations"]["interruption"] >= 2
    assert summary["handler_errors"] == 0
    assert summary["pods_lost"] == 0
    assert summary["pdb_violations"] == 0
    assert summary["interruption"]["cordon_seconds_max"] <= 1
    assert summary["interruption"]["replacement_request_seconds_max"] <= 5
    assert summary["interruption"]["drain_seconds_max"] <= 30
    assert summary["nodes_terminated"]


def test_nodepool_limits_are_never_exceeded(scenario: Callable[[str], Scenario]) -> None:
    pool = nodepool(extra='      limits: {cpu: "16"}\n')
    capped = scenario(
        "name: capped\nduration: 5m\nconsolidation: off\n"
        f"nodepools:{pool}nodeclasses:{NODECLASS}workloads:" + deployment("batch", 40, cpu="1")
    )
    result = run_scenario(capped)
    summary = result.summary
    assert summary["limit_violations"] == 0
    assert summary["pods_lost"] == 0
    world = result.world
    assert world is not None
    cpus = sum(n.capacity["cpu"] for n in world.cluster.memory.nodes()) / 1000
    assert 0 < cpus <= 16
    assert any(not p.node_name for p in world.cluster.memory.pods())  # the rest waits, as it should


def test_capacity_errors_block_the_offering_and_fall_back_to_on_demand(scenario: Callable[[str], Scenario]) -> None:
    outage = scenario(
        "name: outage\nduration: 4m\nconsolidation: off\nzones: [us-east-1a, us-east-1b]\n"
        "capacity_errors:\n  - {instance_type: '*', zone: us-east-1a, capacity_type: spot}\n"
        f"nodepools:{nodepool()}nodeclasses:{NODECLASS}workloads:"
        + deployment("pinned", 20, zone="us-east-1a")
        + deployment("free", 20)
    )
    result = run_scenario(outage)
    summary = result.summary
    assert summary["capacity_errors"] >= 1
    assert summary["pods_lost"] == 0
    world = result.world
    assert world is not None
    launched = list(world.recorder.instances.values())
    assert not any(r.zone == "us-east-1a" and r.capacity_type == "spot" for r in launched)
    assert any(r.capacity_type == "spot" for r in launched)
    assert all(p.node_name for p in world.cluster.memory.pods())
    # Spot failed in us-east-1a and the pass re-planned at once: on-demand there, in seconds.
    fallback = min(r.launched_at for r in launched if r.zone == "us-east-1a" and r.capacity_type == "on-demand")
    assert fallback - outage.start <= 12


def test_pods_a_budget_holds_until_the_spot_reclaim_are_counted_apart_from_the_lost(
    scenario: Callable[[str], Scenario], tmp_path: Path
) -> None:
    held = scenario(
        "name: held\nduration: 10m\nconsolidation: off\n"
        f"nodepools:{nodepool(capacity_types='spot')}nodeclasses:{NODECLASS}workloads:"
        + deployment("web", 6, cpu="2", memory="4Gi")
        + "pdbs:\n  - {apiVersion: policy/v1, kind: PodDisruptionBudget, metadata: {name: web},"
        " spec: {maxUnavailable: 0, selector: {matchLabels: {app: web}}}}\n"
        "interruptions:\n  - {at: 4m, count: 1, rebalance: false}\n"
    )
    result = run_scenario(held, tmp_path / "report")
    summary = result.summary
    world = result.world
    assert world is not None
    held_pods = world.recorder.held_by_pdb
    assert held_pods, "a budget that never allows an eviction holds the pods until the instance goes"
    assert summary["pods_held_by_pdb_at_interruption"] == len(held_pods)
    assert summary["pods_lost"] == 0
    assert summary["pdb_violations"] == 0
    # The drain went on until AWS took the instance, not 20 s before it.
    record = next(iter(world.recorder.interruptions.values()))
    assert record.reclaimed
    assert record.pods_at_reclaim == len(held_pods)
    report = (tmp_path / "report" / "report.md").read_text()
    assert "held on an interrupted node until it went" in report
    assert held_pods[0][1] in report
