"""The simulated kube-scheduler counts topology spread as kube-scheduler does.

Real: `KubeScheduler` over `SimulatedCluster` (the in-memory API server) and the engine's solver.
Observed: where the pod is bound.
"""

from __future__ import annotations

from dataclasses import replace

from nodewright.inmemory.clock import VirtualClock
from nodewright.model import labels as wk
from nodewright.model.pod import SpreadConstraint
from nodewright.model.selectors import LabelSelector
from nodewright.simulator.standins.kube import KubeScheduler, SimulatedCluster
from tests.builders import ZONES, node, pod

SPREAD = SpreadConstraint(1, wk.ZONE, "DoNotSchedule", LabelSelector((("app", "mem"),)))


def _mem(name: str) -> object:
    return pod(name, cpu="500m", labels={"app": "mem"}, spread=(SPREAD,))


def test_pods_on_a_cordoned_node_still_count_in_their_zone() -> None:
    """Zone a holds two pods on a cordoned node (a drain is emptying it), zone b one, zone c
    none. kube-scheduler counts the cordoned node's pods (nodeTaintsPolicy Ignore), so the new pod
    may go to c (skew to the minimum 0 stays within 1) but not to a; leaving the cordoned node out
    made zone a look empty and put the pod there.
    """
    cluster = SimulatedCluster(VirtualClock(1_800_000_000.0))
    a, b, c = ZONES
    cluster.memory.add_node(replace(node("draining", cpu="4", labels={wk.ZONE: a}), unschedulable=True))
    cluster.memory.add_node(node("roomy-a", cpu="4", labels={wk.ZONE: a}))
    cluster.memory.add_node(node("roomy-b", cpu="4", labels={wk.ZONE: b}))
    cluster.memory.add_node(node("roomy-c", cpu="4", labels={wk.ZONE: c}))
    for name, where in (("mem-0", "draining"), ("mem-1", "draining"), ("mem-2", "roomy-b")):
        cluster.bind(cluster.memory.add_pod(_mem(name)), where)  # type: ignore[arg-type]
    new = cluster.memory.add_pod(_mem("mem-new"))  # type: ignore[arg-type]

    assert KubeScheduler(cluster).schedule([new.key]) == 1
    bound = cluster.memory.get_pod(new.key)
    assert bound is not None
    assert bound.node_name == "roomy-c"


def test_a_cordoned_or_not_ready_node_takes_no_pod() -> None:
    cluster = SimulatedCluster(VirtualClock(1_800_000_000.0))
    cluster.memory.add_node(replace(node("cordoned", cpu="4", labels={wk.ZONE: ZONES[0]}), unschedulable=True))
    cluster.memory.add_node(node("booting", cpu="4", labels={wk.ZONE: ZONES[1]}, ready=False))
    waiting = cluster.memory.add_pod(pod("web", cpu="500m"))
    assert KubeScheduler(cluster).schedule([waiting.key]) == 0
    still = cluster.memory.get_pod(waiting.key)
    assert still is not None
    assert not still.node_name
    assert still.unschedulable
