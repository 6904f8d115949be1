"""Report DaemonSet pods that no longer fit their node (`engine/daemonfit.py` decides).

The consolidator calls `report_overflows` on each pass that computes: for NodePools annotated
`nodewright.io/daemonset-overflow: Report` or `Replace`, a `daemonset-overflow` decision record and
a Warning Event on the node (the cluster's event correlator folds repeats into a count).
"""

from __future__ import annotations

from nodewright.engine.daemonfit import overflow_events, overflows
from nodewright.engine.disruption.types import DisruptionInput
from nodewright.ports import Cluster, Observer


def report_overflows(inp: DisruptionInput, observer: Observer, cluster: Cluster) -> None:
    """Record and announce the overflowing nodes of NodePools that report or replace them."""
    pools = [pc.nodepool for pc in inp.pools if pc.nodepool.daemon_overflow != "Ignore"]
    if not pools:
        return
    found = overflows(inp.snapshot, pools)
    for overflow in found.values():
        observer.decision("daemonset-overflow", node=overflow.node, pods=list(overflow.pods), policy=overflow.policy)
    for event in overflow_events(found):
        cluster.record(event, inp.now)
