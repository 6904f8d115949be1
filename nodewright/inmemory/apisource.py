"""What the API emulator serves: the cluster it reads, follows and writes through.

Role: `ServedCluster` is the seam between the emulator (`apiserver.py`, `apifeed.py`,
`apiwrites.py`) and the cluster it serves. `InMemoryCluster` is one; the simulator's
`SimulatedCluster` is another (an `InMemoryCluster` it holds, with its audits and faults around the
writes), so the writes a function sends over HTTP meet the same audits as direct calls.

Contract: the methods keep `InMemoryCluster`'s (see it); `listeners` are called synchronously on
every change of a stored object, which is how the emulator's copy stays equal to the cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from nodewright.inmemory.clusterdevices import ClusterDevices
from nodewright.inmemory.clusterstore import Listener
from nodewright.model.event import ObjectRef, StoredEvent
from nodewright.model.node import Node
from nodewright.model.pod import Pod
from nodewright.model.snapshot import ClusterSnapshot
from nodewright.model.taints import Taint
from nodewright.model.workloads import PodDisruptionBudget
from nodewright.ports import Clock, Eviction


class ServedCluster(Protocol):
    """The cluster as the API emulator uses it (each method as `InMemoryCluster`'s)."""

    @property
    def clock(self) -> Clock:
        """Where the objects' timestamps come from."""
        ...

    @property
    def listeners(self) -> list[Listener]:
        """Called on every change of a stored object; the emulator appends its feed."""
        ...

    @property
    def devices(self) -> ClusterDevices:
        """The DRA DeviceClasses, ResourceClaims and ResourceClaimTemplates held."""
        ...

    def snapshot_unrecorded(self) -> ClusterSnapshot:
        """Every object as it is now, without recording a port call."""
        ...

    def events(self, regarding: ObjectRef | None = None) -> list[StoredEvent]:
        """The Events held."""
        ...

    def budget_allowed(self, pdb: PodDisruptionBudget) -> int:
        """The disruptions `pdb` allows now."""
        ...

    def bind(self, pod: Pod | str, node: str, *, running: bool = True) -> Pod:
        """Bind a pod to a node (a binding POST)."""
        ...

    def remove_pod(self, pod: Pod | str) -> bool:
        """Delete a pod; False when there is none."""
        ...

    def annotate_pod(self, pod: Pod | str, annotations: Mapping[str, str | None]) -> bool:
        """Set or remove (None) a pod's annotations; False when there is no such pod."""
        ...

    def cordon(self, name: str, taint: Taint | None = None) -> None:
        """Mark a node unschedulable (the port's write)."""
        ...

    def uncordon(self, name: str, taint_key: str | None = None) -> None:
        """Undo `cordon` (the port's write)."""
        ...

    def taint(self, name: str, taint: Taint) -> None:
        """Add a taint alone."""
        ...

    def untaint(self, name: str, key: str, effect: str | None = None) -> None:
        """Remove a taint alone."""
        ...

    def replace_node(self, node: Node) -> None:
        """Store a node's new labels and annotations."""
        ...

    def set_node_condition(self, name: str, kind: str, status: str, reason: str = "") -> None:
        """A node status condition, as the kubelet writes it."""
        ...

    def delete_node(self, name: str) -> None:
        """Delete a node and its pods (the port's write)."""
        ...

    def evict(self, pod: Pod) -> Eviction:
        """The eviction subresource (the port's write)."""
        ...

    def create_event(self, stored: StoredEvent) -> bool:
        """Store an Event a client created; False when one of its name exists."""
        ...

    def patch_event_series(self, namespace: str, name: str, count: int, last: float) -> StoredEvent | None:
        """Advance an Event's series; None when there is no such Event."""
        ...
