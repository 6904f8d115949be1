"""Faults as AWS and EKS produce them, one kind at a time, through `nodewright simulate`'s real path.

Each run is a short scenario (a Deployment scaled up, then down, and two spot interruptions) with
one kind of fault at a high rate while the cluster is busy. What is asserted: the fault was
injected and counted in summary.json's `faults` block with what it cost, and the cluster came
through it: no pod lost, no claim with two instances, no orphan instance or claim after the
faults stopped, nothing left pending.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from nodewright.simulator.runner import run_scenario
from nodewright.simulator.scenario import Scenario
from tests.simulator.conftest import NODECLASS, deployment, nodepool


def faulty(scenario: Callable[[str], Scenario], faults: str, *, extra: str = "", duration: str = "25m") -> Scenario:
    """A small busy cluster with `faults` (YAML list items) during its first 8 minutes."""
    return scenario(
        f"name: faulty\nduration: {duration}\nseed: 5\nconsolidation: off\n{extra}"
        f"nodepools:{nodepool()}nodeclasses:{NODECLASS}workloads:"
        + deployment("web", 0, schedule="    replicas: [{at: 0s, replicas: 24}, {at: 6m, replicas: 8}]\n")
        + "interruptions:\n  - {at: 3m, count: 2, within: 30s}\n"
        + "faults:\n"
        + faults
    )


def survived(summary: dict[str, Any]) -> None:
    """The goals with faults on: nothing lost, duplicated or orphaned, nothing left waiting."""
    assert summary["pods_lost"] == 0
    assert summary["pods_pending_at_end"] == 0
    assert summary["pdb_violations"] == 0
    audit = summary["faults"]["audit"]
    assert audit["duplicate_instances"] == {}
    assert audit["orphan_instances"] == []
    assert audit["orphan_claims"] == []
    assert "note" not in audit  # taken 15 minutes after the last fault


@pytest.mark.parametrize(
    ("fault", "cost"),
    [
        pytest.param("{kind: ec2-throttle, rate: 0.5, until: 8m}", "retries", id="ec2-throttle"),
        pytest.param("{kind: ec2-partial-fleet, rate: 0.5, until: 8m}", "", id="ec2-partial-fleet"),
        pytest.param("{kind: dynamodb-throttle, rate: 0.2, until: 8m}", "retries", id="dynamodb-throttle"),
        pytest.param("{kind: dynamodb-conditional, rate: 0.3, until: 8m}", "retries", id="dynamodb-conditional"),
        pytest.param(
            "{kind: crash, rate: 0.2, functions: [provisioner, consolidator], until: 8m}",
            "failed_invocations",
            id="crash",
        ),
        pytest.param("{kind: timeout, rate: 0.3, until: 8m}", "failed_invocations", id="timeout"),
        pytest.param("{kind: sqs-duplicate, rate: 0.6, until: 8m}", "", id="sqs-duplicate"),
        pytest.param("{kind: sqs-reorder, rate: 0.5, until: 8m}", "delay_seconds", id="sqs-reorder"),
        pytest.param("{kind: kube-5xx, rate: 0.2, until: 8m}", "", id="kube-5xx"),
        pytest.param("{kind: kube-429, rate: 0.2, until: 8m}", "", id="kube-429"),
        pytest.param("{kind: kube-timeout, rate: 0.2, until: 8m}", "", id="kube-timeout"),
    ],
)
def test_each_fault_kind_is_injected_counted_and_survived(
    scenario: Callable[[str], Scenario], fault: str, cost: str
) -> None:
    run = faulty(scenario, f"  - {fault}\n")
    summary = run_scenario(run).summary
    kind = run.faults[0].kind
    tally = summary["faults"]["by_kind"][kind]
    assert tally["injected"] > 0, tally
    if cost:
        assert tally[cost] > 0, tally
    if cost == "retries":
        assert tally["delay_seconds"] > 0, tally
    survived(summary)


def test_the_interruption_function_dying_mid_record_loses_no_pod(scenario: Callable[[str], Scenario]) -> None:
    # A record that dies after its drain's intent is picked up by the drain's continuation within
    # seconds; one that dies before it comes back at the deployed 20 s visibility timeout.
    run = faulty(scenario, "  - {kind: crash, rate: 0.2, functions: [interruption], until: 8m}\n")
    summary = run_scenario(run).summary
    assert summary["faults"]["by_kind"]["crash"]["injected"] > 0
    survived(summary)


def test_a_seed_replays_the_same_faults(scenario: Callable[[str], Scenario]) -> None:
    run = faulty(
        scenario,
        "  - {kind: ec2-throttle, rate: 0.3, until: 8m}\n  - {kind: crash, rate: 0.1, until: 8m}\n"
        "  - {kind: sqs-reorder, rate: 0.3, until: 8m}\n",
        duration="12m",
    )
    first, second = run_scenario(run).summary, run_scenario(run).summary
    assert first["faults"]["by_kind"] == second["faults"]["by_kind"]
    assert first["nodes_launched"] == second["nodes_launched"]


def test_kubernetes_faults_reach_the_real_adapter_over_http(scenario: Callable[[str], Scenario]) -> None:
    run = faulty(
        scenario,
        "  - {kind: kube-5xx, rate: 0.1, verbs: [list, watch, evict, patch], until: 8m}\n"
        "  - {kind: kube-timeout, rate: 0.05, verbs: [patch, evict], until: 8m}\n",
        extra="kube_api: http\n",
    )
    summary = run_scenario(run).summary
    assert summary["faults"]["by_kind"]["kube-5xx"]["injected"] > 0
    # The emulator answered them: the adapter's own counts include the failed requests.
    assert summary["kube_api"]["requests"] > 0
    survived(summary)
