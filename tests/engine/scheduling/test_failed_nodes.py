"""A node that stopped being Ready after it came up (broken, awaiting repair) is no capacity: pods
are not planned onto it, even when the node lifecycle's NotReady/unreachable taints (which the
solver ignores on a node still starting) are all that marks it; a node still registering is.

Faked: nothing; the real `solve()` on the scheduling scenario's catalog. Observed: placements.
"""

from __future__ import annotations

import pytest

from nodewright.model import labels as wk
from nodewright.model.node import NodeCondition
from nodewright.model.taints import Taint
from tests.builders import ZONES, node, pod
from tests.engine.scheduling.expect import expect_on_claims, expect_on_node
from tests.engine.scheduling.scenario import run

BORN = 1_800_000_000.0
UNREACHABLE = Taint("node.kubernetes.io/unreachable", "NoExecute")


@pytest.mark.parametrize(
    ("ready", "since", "placed_there"),
    [
        (False, BORN + 3600, False),  # was up for an hour, then its kubelet went silent
        (False, BORN + 5, True),  # still registering: NotReady since its creation
        (False, 0.0, True),  # no transition time known: treated as starting
        (True, BORN + 3600, True),  # Ready again
    ],
    ids=["broken-after-an-hour", "registering", "time-unknown", "recovered"],
)
def test_a_broken_node_takes_no_pods_a_starting_one_does(ready: bool, since: float, placed_there: bool) -> None:
    status = "True" if ready else "Unknown"
    conditions = (NodeCondition("Ready", status, since),) if since else ()
    candidate = node(
        "n1",
        cpu="4",
        memory="16Gi",
        labels={wk.ZONE: ZONES[0]},
        ready=ready,
        created_at=BORN,
        taints=[] if ready else [UNREACHABLE],
        conditions=conditions,
    )
    result = run([pod("a")], nodes=(candidate,))
    if placed_there:
        expect_on_node(result, ["a"], "n1")
    else:
        expect_on_claims(result, ["a"])
