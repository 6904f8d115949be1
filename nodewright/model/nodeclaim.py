"""Node claims: a request for one node, recorded before it is launched and tracked until it is gone.

Pure data. The provisioner writes a claim before CreateFleet (intent before effect), completes it
with the instance it got, and marks it registered and initialized as the node comes up.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from nodewright.model.requirements import Requirements
from nodewright.model.resources import EMPTY, Resources
from nodewright.model.taints import Taint

# "standby" and "starting": a standby instance stopped, and started again (`model.standby`).
STATES = ("pending", "launched", "registered", "initialized", "standby", "starting", "deleting")


@dataclass(frozen=True, slots=True)
class NodeClaim:
    """One node Nodewright decided to launch, and what became of it."""

    name: str
    nodepool: str
    node_class: str = "default"
    requirements: Requirements = field(default_factory=Requirements)
    instance_type_options: tuple[str, ...] = ()
    requests: Resources = EMPTY
    pods: tuple[str, ...] = ()
    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    startup_taints: tuple[Taint, ...] = ()
    state: str = "pending"
    instance_type: str = ""
    capacity_type: str = ""
    zone: str = ""
    price: float = 0.0
    instance_id: str = ""
    provider_id: str = ""
    node_name: str = ""
    created_at: float = 0.0
    launched_at: float = 0.0
    registered_at: float = 0.0
    initialized_at: float = 0.0
    reason: str = ""
    # Drift detection: the hash of the NodePool template the claim was made from, and the AMI
    # the instance booted (both empty when unknown, e.g. records written by older versions).
    template_hash: str = ""
    image_id: str = ""

    def with_changes(self, **changes: Any) -> NodeClaim:
        """A copy with some fields changed."""
        return replace(self, **changes)

    def launch_order(self) -> tuple[float, float, tuple[str, ...], str, str, str]:
        """The key in-flight claims are tried in: creation and launch time, then the pods the claim
        holds, its type and zone, and the name last (only identical twins reach it).

        A claim's name ends in a random suffix, so ordering by name would make the same input plan
        differently in two processes (Karpenter's NodeClaim names are random too, and its order
        among peers with them).
        """
        return (self.created_at, self.launched_at, self.pods, self.instance_type, self.zone, self.name)
