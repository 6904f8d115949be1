"""The world's change feed: one typed stream of what happened, which the world's components
subscribe to instead of calling each other.

Two sources publish on it: `ClusterChanges.read`, which turns the in-memory cluster's change log
into typed changes (after every step of the event loop), and the kubelet (`kubelet.py`), which
reports what EC2 did (instances launched and terminated, a CreateFleet answered) and the Nodes it
registered. A component subscribes in its constructor to the kinds it needs; handlers run in the
order they subscribed, synchronously, in the publisher's thread.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from nodewright.inmemory import cluster as kinds
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodepool import NodePool
from nodewright.simulator.report.metrics import InstanceRecord
from nodewright.simulator.standins.ec2 import FleetCall
from nodewright.simulator.standins.kube import SimulatedCluster

# -- the cluster's changes (`ClusterChanges`) ----------------------------------------------------


@dataclass(frozen=True)
class PodCreated:
    """An unbound (pending) pod was created; `replaces_from` is the node of the pod it replaces
    (its owner recreated one just deleted or evicted from that node), else None.
    """

    at: float
    pod: str
    replaces_from: str | None


@dataclass(frozen=True)
class PodBound:
    """The kube-scheduler bound a pod to a node."""

    at: float
    pod: str


@dataclass(frozen=True)
class PodGone:
    """A pod was deleted or evicted; `node` is where it ran ("" when unbound)."""

    at: float
    pod: str
    node: str


@dataclass(frozen=True)
class NodeGone:
    """A Node was removed; `pods` are the workload pods it still held (lost with it)."""

    at: float
    node: str
    pods: tuple[str, ...]


@dataclass(frozen=True)
class NodeCordoned:
    """A Node was cordoned."""

    at: float
    node: str


@dataclass(frozen=True)
class EvictionRefused:
    """A PodDisruptionBudget refused a pod's eviction."""

    at: float
    pod: str


@dataclass(frozen=True)
class ClusterChanged:
    """Any other change of the cluster (a Node added, labelled, a pod updated, ...)."""

    at: float


# -- what EC2 and the kubelet did (`kubelet.Kubelet`) ---------------------------------------------


@dataclass(frozen=True)
class NodeRegistered:
    """A launched instance's Node registered (Ready)."""

    at: float
    node: str


@dataclass(frozen=True)
class InstanceLaunched:
    """EC2 started an instance for `pool` (None: no NodePool of the scenario); already recorded."""

    record: InstanceRecord
    pool: NodePool | None
    nodeclass: EC2NodeClass | None


@dataclass(frozen=True)
class FleetAnswered:
    """A CreateFleet call was answered (after the launch of each of its instances)."""

    call: FleetCall


@dataclass(frozen=True)
class InstancesTerminating:
    """Instances are about to be terminated, their Nodes still holding their pods; `reason` is
    EC2's own (a spot reclaim, a capacity block's end), None when a caller terminates them.
    """

    instance_ids: tuple[str, ...]
    reason: str | None


Change = (
    PodCreated
    | PodBound
    | PodGone
    | NodeGone
    | NodeCordoned
    | EvictionRefused
    | ClusterChanged
    | NodeRegistered
    | InstanceLaunched
    | FleetAnswered
    | InstancesTerminating
)
C = TypeVar("C", bound=Change)


class ChangeFeed:
    """Subscriptions by kind of change, and publishing to them in subscription order."""

    def __init__(self) -> None:
        self._handlers: defaultdict[type[Any], list[Callable[[Any], None]]] = defaultdict(list)

    def subscribe(self, kind: type[C], handler: Callable[[C], None]) -> None:
        """Call `handler` with every change of `kind` published from now on."""
        self._handlers[kind].append(handler)

    def publish(self, change: Change) -> None:
        """Hand `change` to every subscriber of its kind."""
        for handler in self._handlers.get(type(change), ()):
            handler(change)


_POD_GONE = (kinds.POD_DELETED, kinds.POD_EVICTED)


class ClusterChanges:
    """Reads the in-memory cluster's change log into the feed, each entry once."""

    def __init__(self, cluster: SimulatedCluster, feed: ChangeFeed) -> None:
        self._cluster = cluster
        self._feed = feed
        self._seen = 0  # log entries already read

    def read(self) -> None:
        """Publish the entries logged since the last read."""
        changes = self._cluster.memory.changes
        if self._seen == len(changes):
            return
        publish = self._feed.publish
        gone: tuple[float, str] | None = None  # the pod deleted just before, for its replacement
        for change in changes[self._seen :]:
            kind = change.kind
            if kind == kinds.POD_CREATED:
                if not change.node:
                    # The owner's replacement of a pod evicted or deleted from a node at this instant.
                    replaces = gone[1] if gone is not None and gone[0] == change.at else None
                    publish(PodCreated(change.at, change.name, replaces))
                gone = None
                continue
            gone = None
            if kind == kinds.POD_BOUND:
                publish(PodBound(change.at, change.name))
            elif kind in _POD_GONE:
                if change.node:
                    gone = (change.at, change.node)
                publish(PodGone(change.at, change.name, change.node))
            elif kind == kinds.NODE_DELETED:
                publish(NodeGone(change.at, change.name, tuple(change.pods)))
            elif kind == kinds.NODE_CORDONED:
                publish(NodeCordoned(change.at, change.name))
            elif kind == kinds.EVICTION_BLOCKED:
                publish(EvictionRefused(change.at, change.name))
            else:
                publish(ClusterChanged(change.at))
        self._seen = len(changes)
