"""`engine.deletioncost.steering`: which pod annotations a pass writes, in which order.

Pure: snapshots built by hand. Observed: the list of changes.
"""

from __future__ import annotations

from dataclasses import replace

from nodewright.engine.deletioncost import DELETION_COST, FLOOR, STEERED, steering
from nodewright.model import labels as wk
from nodewright.model.snapshot import ClusterSnapshot
from nodewright.model.taints import Taint
from tests.builders import node, pod

OURS = {wk.NW_NODEPOOL: "default"}


def _bound(name: str, where: str, **fields: object) -> object:
    return replace(pod(name), node_name=where, phase="Running", **fields)  # type: ignore[arg-type]


def test_the_emptiest_serving_nodes_come_first_a_tenth_of_the_pods_and_the_limit_cuts_the_rest() -> None:
    snapshot = ClusterSnapshot(
        nodes=(
            node("full", labels=OURS),
            node("thin", labels=OURS),
            node("going", labels=OURS, taints=(Taint(wk.DISRUPTED_TAINT_KEY, "NoSchedule", "consolidation"),)),
            node("theirs"),  # not launched by Nodewright: its pods are never steered
        ),
        pods=(
            _bound("f1", "full"),
            _bound("f2", "full"),
            _bound("t1", "thin"),
            _bound("g1", "going"),
            _bound("x1", "theirs"),
            _bound("s1", "full", owner_kind="StatefulSet"),  # counts on its node, but is never steered
        ),  # type: ignore[arg-type]
    )

    # A tenth of the serving nodes' 3 ReplicaSet pods: the emptiest node only (at least one).
    # A draining node's pods are leaving anyway: never written.
    changes = steering(snapshot, {"default"}, limit=10)
    assert [(c.pod.name, c.cost) for c in changes] == [("t1", 1 - FLOOR)]
    assert changes[0].annotations == {DELETION_COST: str(1 - FLOOR), STEERED: str(1 - FLOOR)}

    # Every node steered: full's pods too (the StatefulSet's counts on its node), cut at the limit.
    changes = steering(snapshot, {"default"}, limit=2, share=1.0)
    assert [(c.pod.name, c.cost) for c in changes] == [("t1", 1 - FLOOR), ("f1", 3 - FLOOR)]


def test_a_pod_already_right_or_set_by_someone_else_is_left_and_a_stale_one_is_cleared() -> None:
    right = {DELETION_COST: str(1 - FLOOR), STEERED: str(1 - FLOOR)}
    snapshot = ClusterSnapshot(
        nodes=(node("a", labels=OURS), node("b", labels={wk.NW_NODEPOOL: "static"})),
        pods=(
            _bound("ok", "a", annotations=right),
            _bound("user", "b", annotations={DELETION_COST: "100"}),
            _bound("stale", "b", annotations={DELETION_COST: "-5", STEERED: "-5"}),
        ),  # type: ignore[arg-type]
    )

    changes = steering(snapshot, {"default"}, limit=10)

    assert [(c.pod.name, c.cost) for c in changes] == [("stale", None)]
    assert changes[0].annotations == {DELETION_COST: None, STEERED: None}
