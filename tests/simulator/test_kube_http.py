"""The shipped scale-up and spot-storm scenarios with `kube_api: http`: every function reads and
writes the cluster through the real Kubernetes adapter over local HTTP (nodewright.simulator.standins.kubehttp).

Real: the handlers, the controllers, moto, the kubernetes client, HTTP on 127.0.0.1, the
adapters' watch threads, the API emulator over the simulated cluster. Observed: the summary of
each run against the same scenario run in memory (the adapter must decide the same; the in-memory
run is the session's `shipped_run`), and the
`kube_api` block: what the functions cost the API server.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from nodewright.simulator.runner import RunResult, run_scenario
from nodewright.simulator.scenario import load_scenario

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "scenarios"
SAME = (
    "pods_lost",
    "pdb_violations",
    "do_not_disrupt_violations",
    "nodes_launched",
    "cost_usd",
    "pending_seconds",
    "pending_to_launch_seconds",
)
KINDS = ("nodes", "pods", "daemonsets", "poddisruptionbudgets")


@pytest.mark.parametrize("name", ["scale-up", "spot-storm"])
def test_a_scenario_over_http_decides_as_in_memory_and_lists_each_kind_once_per_function(
    name: str, shipped_run: Callable[..., RunResult]
) -> None:
    scenario = load_scenario(EXAMPLES / f"{name}.yaml")
    in_memory = shipped_run(name).summary
    over_http = run_scenario(replace(scenario, kube_api="http"), plots=False).summary

    assert {k: over_http[k] for k in SAME} == {k: in_memory[k] for k in SAME}
    assert over_http["pods_lost"] == 0
    assert "kube_api" not in in_memory
    calls = over_http["kube_api"]["by_call"]
    functions = 3 if name == "spot-storm" else 2  # the interruption function watches nodes only
    assert calls["list nodes"]["requests"] == functions
    for kind in ("daemonsets", "poddisruptionbudgets"):
        assert calls[f"list {kind}"]["requests"] == 2
        assert calls[f"watch {kind}"]["requests"] <= 2 * 2
    # Pods are listed in pages of 500, once per function that watches them; the interruption
    # function reads the pods of the node it drains with a field-selected list, a few per node.
    drains = over_http["interruption"]["instances"] if name == "spot-storm" else 0
    assert calls["list pods"]["requests"] <= 2 * 3 + 15 * drains
    mirror = {f"{verb} nodeclaims" for verb in ("list", "get", "create", "patch", "delete")}
    assert set(calls) <= {f"{verb} {kind}" for verb in ("list", "watch") for kind in KINDS} | mirror | {
        "create pods/eviction",
        "get nodes",
        "patch nodes",
        "patch pods",  # the consolidator's deletion costs (controllers.steering)
        "delete nodes",
        "create events",
        "patch events",
    }
    # The NodeClaim mirror writes each claim's transitions (created, registered, initialized, its
    # verdicts, deleted), each as one server-side apply (it creates or updates, no read first): a
    # few requests per node launched (scale-up 98 for 24, spot-storm 178 for 38), counted apart
    # from reading the cluster.
    mirrored = sum(calls[call]["requests"] for call in mirror & set(calls))
    assert 0 < mirrored <= 5 * over_http["nodes_launched"]
    assert "get nodeclaims" not in calls
    assert "create nodeclaims" not in calls
    api = over_http["kube_api"]
    assert api["requests_per_minute"] * (1 - mirrored / api["requests"]) < 20
