"""Which pods a ReplicaSet deletes when it scales down, ranked as kube-controller-manager ranks them.

The ReplicaSet controller (`pkg/controller/replicaset`, `getPodsToDelete` and
`controller.ActivePodsWithRanks` in `pkg/controller/controller_utils.go`) sorts its pods and deletes
the first ones. The order, with both feature gates it consults on by default since 1.22
(`PodDeletionCost`, `LogarithmicScaleDown`):

1. unassigned before assigned;
2. `Pending` before running;
3. (not ready before ready: the simulator's bound pods are ready);
4. a lower `controller.kubernetes.io/pod-deletion-cost` first (a malformed value counts as 0);
5. pods on a node with more of the workload's pods first ("doubled up": this is what spreads a
   scale-down over the nodes instead of emptying one);
6. younger first, compared by the power-of-two bucket of their age in nanoseconds;
7. (more restarts first: the simulator's containers do not restart);
8. within a bucket, by UID, which is random: here a hash of the pod's name, so runs repeat.

Ready time is taken as the pod's creation time (the simulator does not keep when a pod became
ready); pods that waited long for a node are so counted a bucket older than kube would count them.
StatefulSets are not ranked: they delete their highest ordinal, as `Deployments` does.
"""

from __future__ import annotations

import math
import zlib
from collections import Counter
from collections.abc import Sequence

from nodewright.model import labels as wk
from nodewright.model.pod import Pod


def deletion_cost(pod: Pod) -> int:
    """The pod's `pod-deletion-cost` annotation as the controller reads it (an int32; else 0)."""
    text = pod.annotations.get(wk.POD_DELETION_COST)
    if text is None:
        return 0
    try:
        value = int(text)
    except ValueError:
        return 0
    return value if -(2**31) <= value < 2**31 else 0


def _age_bucket(pod: Pod, now: float) -> int:
    """log2 of the pod's age in nanoseconds, as `logarithmicRankDiff` buckets it (-1: not yet aged)."""
    age = (now - pod.created_at) * 1e9
    return int(math.log2(age)) if age > 0 else -1


def victims(pods: Sequence[Pod], count: int, now: float) -> list[Pod]:
    """The `count` pods of one ReplicaSet (its live pods, `pods`) that it deletes first at `now`."""
    if count <= 0:
        return []
    on_node = Counter(p.node_name for p in pods if p.node_name)

    def rank(pod: Pod) -> tuple[bool, bool, int, int, int, int]:
        return (
            bool(pod.node_name),
            pod.phase != "Pending",
            deletion_cost(pod),
            -on_node[pod.node_name] if pod.node_name else 0,
            _age_bucket(pod, now),
            zlib.crc32(pod.key.encode()),
        )

    return sorted(pods, key=rank)[:count]
