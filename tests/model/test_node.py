"""Which nodes' pods the provisioner must find new capacity for (`Node.draining`, `ClusterSnapshot.pending`)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from nodewright.model import labels as wk
from nodewright.model.snapshot import ClusterSnapshot
from nodewright.model.taints import Taint
from tests.builders import node, pod


@pytest.mark.parametrize(
    ("taint_value", "deleting", "draining"),
    [
        (None, False, False),
        (None, True, True),  # being deleted
        (wk.DISRUPTED_REPLACE, False, True),  # an interruption asked for replacement capacity
        (wk.DISRUPTED_CORDON_ONLY, False, False),  # rebalance policy Cordon: the node stays
        (wk.DISRUPTED_CONSOLIDATION, False, False),  # the consolidator launched the replacements
    ],
)
def test_a_nodes_pods_are_pending_only_when_nobody_else_plans_their_capacity(
    taint_value: str | None, deleting: bool, draining: bool
) -> None:
    taints = () if taint_value is None else (Taint(wk.DISRUPTED_TAINT_KEY, "NoSchedule", taint_value),)
    n = replace(node("n1", taints=taints), deleting=deleting)
    bound = pod("web-1", node_name="n1")
    assert n.draining is draining
    assert ClusterSnapshot(nodes=(n,), pods=(bound,)).pending() == ([bound] if draining else [])
