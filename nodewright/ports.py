"""The seams between Nodewright's controllers and the outside world, as Protocols.

Controllers depend on these; `nodewright.adapters` implements them for AWS and Kubernetes, and
`nodewright.sim` implements them in memory for tests and the simulator. Each method states its
error contract: callers rely on it, so implementations must keep it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from nodewright.model.node import Node
from nodewright.model.pod import Pod
from nodewright.model.snapshot import ClusterSnapshot
from nodewright.model.taints import Taint


class Clock(Protocol):
    """Where time comes from: the wall clock in Lambda, a virtual clock in tests and simulation."""

    def now(self) -> float:
        """Seconds since the epoch."""
        ...


@dataclass(frozen=True, slots=True)
class Eviction:
    """The outcome of one eviction request.

    `outcome` is "evicted" (accepted), "blocked" (HTTP 429: a PDB refuses it now; retry later)
    or "gone" (404/409: the pod no longer exists or is already terminating; count it as done).
    """

    pod: str
    outcome: str
    message: str = ""


class Cluster(Protocol):
    """The Kubernetes API as the controllers use it."""

    def snapshot(self) -> ClusterSnapshot:
        """Nodes first, then pods, daemonsets and PDBs (the conservative read order)."""
        ...

    def get_node(self, name: str) -> Node | None:
        """The node, or None when it does not exist."""
        ...

    def cordon(self, name: str, taint: Taint | None = None) -> None:
        """Mark the node unschedulable and add `taint` if given. Idempotent; a missing node is a no-op."""
        ...

    def uncordon(self, name: str, taint_key: str | None = None) -> None:
        """Undo `cordon`, removing taints with `taint_key`. Idempotent; a missing node is a no-op."""
        ...

    def evict(self, pod: Pod) -> Eviction:
        """Ask the Eviction API to evict `pod`; never raises for 429/404/409 (see Eviction)."""
        ...

    def delete_node(self, name: str) -> None:
        """Delete the Node object. A node that is already gone counts as deleted."""
        ...
