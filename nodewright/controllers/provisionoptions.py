"""What the provisioner is given and what it reports.

Role: the provisioner's (`nodewright.controllers.provisioning`) configuration ports
(`Configuration`, `Catalog`, and `StaticConfiguration` for fixed documents), its timings
(`ProvisionerOptions`), the reports of a pass and of an invocation, and the helpers other
controllers share with it: `pool_capacities` (each NodePool with its catalog and NodeOverlays,
what the provisioner, consolidation and `plan` decide with) and `claim_name`.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from nodewright.controllers.configstatus import ConfigStatus
from nodewright.engine.overlay import apply_overlays
from nodewright.engine.scheduling import (
    PoolCapacity,
)
from nodewright.model.capacitybuffer import CapacityBuffer, PodTemplate
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodeoverlay import NodeOverlay
from nodewright.model.nodepool import NodePool
from nodewright.ports import Catalog, Observer

LEASE = "provisioner"
# Claims whose pods wait for their node; "starting": a standby instance started for them.
IN_FLIGHT = ("pending", "launched", "starting")


@dataclass(frozen=True, slots=True)
class StaticConfiguration:
    """A Configuration that always returns the same documents (tests, the simulator, the CLI)."""

    nodepools: tuple[NodePool, ...]
    nodeclasses: Mapping[str, EC2NodeClass] = field(default_factory=dict)
    nodeoverlays: tuple[NodeOverlay, ...] = ()
    capacitybuffers: tuple[CapacityBuffer, ...] = ()
    podtemplates: tuple[PodTemplate, ...] = ()

    def load(self) -> tuple[list[NodePool], dict[str, EC2NodeClass]]:
        """The fixed documents."""
        return list(self.nodepools), dict(self.nodeclasses)

    def overlays(self) -> list[NodeOverlay]:
        """The fixed NodeOverlays."""
        return list(self.nodeoverlays)

    def buffers(self) -> tuple[tuple[CapacityBuffer, ...], tuple[PodTemplate, ...]]:
        """The fixed CapacityBuffers and PodTemplates."""
        return self.capacitybuffers, self.podtemplates


@dataclass(frozen=True, slots=True)
class ProvisionerOptions:
    """Timings of the loop and of housekeeping, in seconds (Karpenter's values by default)."""

    # While a batch is open its growth is checked this often; with nothing pending the loop only
    # wakes on a change (or polls this often when its `sleep` cannot be woken).
    poll: float = 1.0
    batch_idle: float = 1.0
    batch_max: float = 10.0
    # Once a batch is `batch_idle` old, a poll adding fewer pods than this share of it starts the
    # pass: pods trickling in rather than a burst still arriving (0: wait for an idle gap or
    # batch_max, as Karpenter does). A steady stream passes at about 3 s, a burst keeps waiting.
    batch_growth: float = 0.5
    deadline_margin: float = 10.0
    # A pass's solves (the re-plans after capacity errors included) plan nothing more after this
    # many seconds: what they planned is launched, the pods not reached yet are solved in the next
    # pass at once, tenants taking fair turns (engine/scheduling/budget.py). Well inside the 68 s
    # function timeout, so no input can make every pass time out and launch nothing.
    solve_budget: float = 8.0
    lease_ttl: float = 90.0
    # How often a run whose lease another invocation holds tries again (until its own deadline).
    lease_poll: float = 2.0
    registration_timeout: float = 15 * 60.0
    orphan_grace: float = 30.0
    resume_grace: float = 60.0
    capacity_error_ttl: float = 180.0
    max_replans: int = 3
    # Pods no NodePool can take now wait this long before a pass tries them again, so they
    # neither trigger a pass every second nor flood the log with the same reason.
    unschedulable_retry: float = 30.0
    # Pods a pass put on a registered node are kube-scheduler's to bind; they wait this long before
    # they start a pass again. Pods of a node being drained stay "pending" (they need a new home)
    # for the whole drain, which a PodDisruptionBudget can stretch to minutes: without the wait,
    # every second of it re-solved them to the same answer.
    placed_retry: float = 10.0
    # Economy: end the invocation once no pod has waited for this long (None: wait for pods until
    # the deadline). Lambda bills the waiting; a pod arriving after the early end waits for the
    # next scheduled invocation (up to a minute) instead of about a second.
    idle_exit: float | None = None
    # How often static NodePools and CapacityBuffers are checked again with no pending pods (each
    # pass checks them too): a burst kube-scheduler binds into buffer room starts no pass.
    static_poll: float = 15.0
    # A pod's nomination (to a claim or a node) is reported as a Kubernetes Event once the pod has
    # waited this long (0: every nomination, as Karpenter does). Read by watch, a function sends so
    # few requests that an Event per launched pod would be most of them (bench.api_load: 0.067 ->
    # 0.233 requests/s); a pod that waited is the one someone runs `kubectl describe` on.
    nominate_after: float = 30.0


@dataclass
class PassReport:
    """What one provisioning pass did."""

    pending: int = 0
    launched: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    unschedulable: dict[str, str] = field(default_factory=dict)
    # Pods the pass put on registered nodes (kube-scheduler binds them; nothing was launched).
    placed: list[str] = field(default_factory=list)
    # Pods the pass did not reach before its solve budget: the next pass solves them at once.
    deferred: list[str] = field(default_factory=list)
    solve_seconds: float = 0.0


@dataclass
class RunReport:
    """What one invocation did (returned by the handler, so it shows in the Lambda console)."""

    lease: bool = True
    passes: int = 0
    launched: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    housekeeping: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        """A JSON-ready summary."""
        return {
            "lease": self.lease,
            "passes": self.passes,
            "launched": self.launched,
            "failed": self.failed,
            "housekeeping": self.housekeeping,
        }


def pool_capacities(
    nodepools: Sequence[NodePool],
    nodeclasses: Mapping[str, EC2NodeClass],
    catalog: Catalog,
    overlays: Sequence[NodeOverlay] = (),
    observer: Observer | None = None,
    *,
    status: ConfigStatus | None = None,
) -> tuple[PoolCapacity, ...]:
    """Each NodePool with the instance types its EC2NodeClass's catalog offers, NodeOverlays
    applied (effective prices, extra capacity): what the provisioner, consolidation and `plan`
    decide with. An overlay refused for a same-weight conflict is reported to `observer`, and
    each overlay's verdict written to its status through `status` (when overlays come from CRDs).
    """
    pools = tuple(
        PoolCapacity(pool, tuple(catalog.instance_types(nodeclasses.get(pool.node_class_ref.name))))
        for pool in nodepools
    )
    overlaid = apply_overlays(pools, overlays)
    if observer is not None:
        for name, why in sorted(overlaid.conflicts.items()):
            observer.decision("nodeoverlay-refused", overlay=name, reason=why)
    if status is not None:
        status.overlays(overlays, overlaid.conflicts)
    return overlaid.pools


def claim_name(nodepool: str, suffix: str | None = None) -> str:
    """A claim name: the NodePool's name and a unique suffix (also the instance's Name tag)."""
    return f"{nodepool[:40]}-{suffix or uuid.uuid4().hex[:10]}"
