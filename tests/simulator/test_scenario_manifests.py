"""Every object the shipped scenarios create survives the trip through API server JSON.

Real: the simulator running each examples/scenarios/*.yaml (its first minutes: the workloads
created, pods pending and marked Unschedulable, nodes launched, registered with their labels
and taints, pods bound, daemon pods placed). Observed: every version of every node, pod,
daemonset and PDB the cluster stored, through its `listeners` hook (a subclass the world is
built with: the world offers no seam for a listener before it runs), each turned into a manifest
(`nodewright.model.manifests`), sent through JSON and read back by the parsers the Kubernetes
adapter uses.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

import nodewright.simulator.world as world_module
from nodewright.adapters.kube.cluster import parse_timestamp
from nodewright.inmemory.clusterdevices import DeviceObject
from nodewright.model.manifests import daemonset_manifest, node_manifest, pdb_manifest, pod_manifest
from nodewright.model.node import Node
from nodewright.model.pod import Pod
from nodewright.model.workloads import DaemonSet, PodDisruptionBudget
from nodewright.ports import Clock
from nodewright.simulator.runner import run_scenario
from nodewright.simulator.scenario import load_scenario
from nodewright.simulator.standins.kube import SimulatedCluster

SCENARIOS = sorted((Path(__file__).parents[2] / "examples" / "scenarios").glob("*.yaml"))
# Long enough for scale-up's burst (at 30 s) to launch nodes that boot (35 s) and take pods.
MINUTES = 2.0


def over_http(manifest: dict[str, Any]) -> dict[str, Any]:
    decoded: dict[str, Any] = json.loads(json.dumps(manifest))
    return decoded


def read_back(obj: object) -> object:
    if isinstance(obj, Pod):
        return Pod.parse(over_http(pod_manifest(obj)))
    if isinstance(obj, Node):
        manifest = over_http(node_manifest(obj))
        return Node.parse(manifest, created_at=parse_timestamp(manifest["metadata"].get("creationTimestamp")))
    if isinstance(obj, DaemonSet):
        return DaemonSet.parse(over_http(daemonset_manifest(obj)))
    if isinstance(obj, PodDisruptionBudget):
        return PodDisruptionBudget.parse(over_http(pdb_manifest(obj, obj.disruptions_allowed)))
    if isinstance(obj, DeviceObject):  # DRA objects are kept as their manifests
        return replace(obj, manifest=over_http(dict(obj.manifest)))
    raise TypeError(obj)


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_every_object_a_scenario_creates_reads_back_equal_from_its_manifest(path: Path) -> None:
    stored: list[object] = []

    class Recorded(SimulatedCluster):
        def __init__(self, clock: Clock) -> None:
            super().__init__(clock)
            # Events are not scenario objects (they have no manifest of the model to read back).
            self.listeners.append(lambda kind, event, obj, revision: kind == "event" or stored.append(obj))

    scenario = load_scenario(path)
    scenario = replace(scenario, duration=min(scenario.duration, MINUTES * 60))
    with mock.patch.object(world_module, "SimulatedCluster", Recorded):
        run_scenario(scenario, None, plots=False)

    pods = [o for o in stored if isinstance(o, Pod)]
    nodes = [o for o in stored if isinstance(o, Node)]
    assert pods
    assert nodes
    assert any(p.unschedulable for p in pods)
    assert any(p.node_name and p.phase == "Running" for p in pods)
    assert all(n.created_at for n in nodes)
    unequal = [(obj, again) for obj in stored if (again := read_back(obj)) != obj]
    assert unequal == []
