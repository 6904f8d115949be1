"""`engine.scheduling.inputs`: which claims are in flight, which pods are planned, bound, held,
and what NodePool usage counts, for the provisioner's question, the existing-nodes one and the
disruption simulation's."""

from __future__ import annotations

import pytest

from nodewright.engine.scheduling import PoolCapacity
from nodewright.engine.scheduling.inputs import (
    existing_nodes_input,
    in_flight,
    provisioning_input,
    remaining_cluster,
    rescheduling_input,
)
from nodewright.model import labels as wk
from nodewright.model.node import Node
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.nodepool import NodePool
from nodewright.model.pod import Pod
from nodewright.model.resources import Resources
from nodewright.model.snapshot import ClusterSnapshot
from nodewright.model.taints import Taint

POOL = PoolCapacity(NodePool("default"), ())


def node(name: str, *, claim: str = "", provider: str = "", deleting: bool = False, tainted: bool = False) -> Node:
    labels = {wk.NW_NODEPOOL: "default", **({wk.NW_NODECLAIM: claim} if claim else {})}
    taints = (Taint(wk.DISRUPTED_TAINT_KEY, "NoSchedule", "x"),) if tainted else ()
    capacity = Resources.of(cpu="2", memory="4Gi", pods=10)
    return Node(
        name,
        labels=labels,
        taints=taints,
        capacity=capacity,
        allocatable=capacity,
        provider_id=provider,
        ready=True,
        deleting=deleting,
    )


def pod(name: str, on: str = "") -> Pod:
    return Pod(namespace="default", name=name, node_name=on, requests=Resources.of(cpu="100m", pods=1))


def claim(
    name: str, *, state: str = "launched", node_name: str = "", provider: str = "", pods: tuple[str, ...] = ()
) -> NodeClaim:
    return NodeClaim(name, "default", state=state, node_name=node_name, provider_id=provider, pods=pods)


# (case, nodes, claims, in flight)
IN_FLIGHT = [
    ("launched, no node yet", (), (claim("c1"),), ("c1",)),
    ("not launched yet", (), (claim("c1", state="pending"),), ()),
    ("initialized", (), (claim("c1", state="initialized"),), ()),
    ("its node registered under its node name", (node("n1"),), (claim("c1", node_name="n1"),), ()),
    ("its node joined with its claim label", (node("n1", claim="c1"),), (claim("c1"),), ()),
    (
        "its node joined with its providerID",
        (node("n1", provider="aws:///i-1"),),
        (claim("c1", provider="aws:///i-1"),),
        (),
    ),
    ("another claim's node joined", (node("n1", claim="c2"),), (claim("c1"),), ("c1",)),
]


@pytest.mark.parametrize(("case", "nodes", "claims", "expected"), IN_FLIGHT, ids=[c[0] for c in IN_FLIGHT])
def test_in_flight(
    case: str, nodes: tuple[Node, ...], claims: tuple[NodeClaim, ...], expected: tuple[str, ...]
) -> None:
    assert tuple(c.name for c in in_flight(nodes, claims)) == expected


# (case, nodes, pods, pending keys, claims, planned keys, bound (key, node) pairs)
PROVISIONING = [
    (
        "pending pods are planned, bound pods count where they are",
        (node("n1"),),
        (pod("a"), pod("b", on="n1")),
        ("default/a",),
        (),
        ("default/a",),
        (("default/b", "n1"),),
    ),
    (
        "a draining node's pod is planned anew, not counted on its node",
        (node("n1", deleting=True),),
        (pod("a", on="n1"),),
        ("default/a",),
        (),
        ("default/a",),
        (),
    ),
    (
        "a pod an in-flight claim holds is bound to it, not planned again",
        (),
        (pod("a"), pod("b")),
        ("default/a", "default/b"),
        (claim("c1", pods=("default/a",)),),
        ("default/b",),
        (("default/a", "c1"),),
    ),
    (
        "a held pod left out of this plan still counts on its claim",
        (),
        (pod("a"),),
        (),
        (claim("c1", pods=("default/a",)),),
        (),
        (("default/a", "c1"),),
    ),
    (
        "a replacement holds a pod still on its tainted candidate: counted on the claim only",
        (node("old", tainted=True),),
        (pod("a", on="old"),),
        (),
        (claim("c1", pods=("default/a",)),),
        (),
        (("default/a", "c1"),),
    ),
    (
        "a held pod running on a node that stays counts there, not on the claim",
        (node("n1"),),
        (pod("a", on="n1"),),
        (),
        (claim("c1", pods=("default/a",)),),
        (),
        (("default/a", "n1"),),
    ),
    (
        "a claim whose node joined holds nothing: its pods are planned",
        (node("n1", claim="c1"),),
        (pod("a"),),
        ("default/a",),
        (claim("c1", pods=("default/a",)),),
        ("default/a",),
        (),
    ),
]


@pytest.mark.parametrize(
    ("case", "nodes", "pods", "pending", "claims", "planned", "bound"), PROVISIONING, ids=[c[0] for c in PROVISIONING]
)
def test_provisioning_input(
    case: str,
    nodes: tuple[Node, ...],
    pods: tuple[Pod, ...],
    pending: tuple[str, ...],
    claims: tuple[NodeClaim, ...],
    planned: tuple[str, ...],
    bound: tuple[tuple[str, str], ...],
) -> None:
    snapshot = ClusterSnapshot(nodes=nodes, pods=pods)
    inp = provisioning_input(
        snapshot, pending=[p for p in pods if p.key in pending], pools=(POOL,), claims=claims, now=5.0
    )
    assert tuple(p.key for p in inp.pods) == planned
    assert tuple((p.key, p.node_name) for p in inp.bound_pods) == bound
    assert inp.nodes == nodes
    assert inp.pools == (POOL,)
    assert inp.now == 5.0


def test_provisioning_input_counts_usage_and_blocked_offerings() -> None:
    """Usage counts the nodes (a joined claim once); the blocked offerings pass through."""
    snapshot = ClusterSnapshot(nodes=(node("n1", claim="c1"),))
    blocked = frozenset({("spot", "m5.large", "us-east-1a")})
    inp = provisioning_input(snapshot, pending=(), pools=(POOL,), claims=(claim("c1"),), blocked=blocked)
    assert inp.blocked == blocked
    assert inp.inflight == ()
    assert inp.used["default"].get("cpu") == 2000


def test_existing_nodes_input_opens_no_claim() -> None:
    inp = existing_nodes_input([pod("a")], [node("n1")], [pod("b", on="n1")], now=3.0)
    assert inp.pools == ()
    assert [p.key for p in inp.pods] == ["default/a"]
    assert [p.key for p in inp.bound_pods] == ["default/b"]
    assert inp.now == 3.0


# (case, nodes, pods, gone, remaining nodes, remaining bound pods)
REMAINING = [
    ("nothing leaves", (node("n1"),), (pod("a", on="n1"), pod("b")), (), ("n1",), ("default/a",)),
    (
        "a leaving node goes with its pods; a pending pod is not bound anywhere",
        (node("n1"), node("n2")),
        (pod("a", on="n1"), pod("b", on="n2"), pod("c")),
        ("n1",),
        ("n2",),
        ("default/b",),
    ),
    (
        "the nodes of a command in progress leave too",
        (node("n1"), node("n2"), node("n3")),
        (pod("a", on="n1"), pod("b", on="n2"), pod("c", on="n3")),
        ("n1", "n3"),
        ("n2",),
        ("default/b",),
    ),
    ("a name no node has changes nothing", (node("n1"),), (pod("a", on="n1"),), ("n9",), ("n1",), ("default/a",)),
]


@pytest.mark.parametrize(
    ("case", "nodes", "pods", "gone", "remaining", "bound"), REMAINING, ids=[c[0] for c in REMAINING]
)
def test_remaining_cluster(
    case: str,
    nodes: tuple[Node, ...],
    pods: tuple[Pod, ...],
    gone: tuple[str, ...],
    remaining: tuple[str, ...],
    bound: tuple[str, ...],
) -> None:
    left, on_them = remaining_cluster(ClusterSnapshot(nodes=nodes, pods=pods), gone)
    assert tuple(n.name for n in left) == remaining
    assert tuple(p.key for p in on_them) == bound


def test_rescheduling_input_places_the_leaving_pods_on_what_remains_with_the_passs_usage() -> None:
    """The leaving nodes' pods are the pods to place, on the nodes given, with no claim in flight;
    usage, DaemonSets, blocked offerings and time are the pass's, passed through unchanged.
    """
    snapshot = ClusterSnapshot(nodes=(node("old"), node("n1")), pods=(pod("a", on="old"), pod("b", on="n1")))
    nodes, bound = remaining_cluster(snapshot, {"old"})
    used = {"default": Resources.of(cpu="4")}
    blocked = frozenset({("spot", "m5.large", "us-east-1a")})
    inp = rescheduling_input(
        [pod("a", on="old")], nodes=nodes, bound_pods=bound, pools=(POOL,), used=used, blocked=blocked, now=7.0
    )
    assert [p.key for p in inp.pods] == ["default/a"]
    assert [n.name for n in inp.nodes] == ["n1"]
    assert [(p.key, p.node_name) for p in inp.bound_pods] == [("default/b", "n1")]
    assert inp.inflight == ()
    assert inp.pools == (POOL,)
    assert inp.used == used
    assert inp.blocked == blocked
    assert inp.now == 7.0
