"""The seams between Nodewright's controllers and the outside world, as Protocols.

Controllers depend on these; `nodewright.adapters` implements them for AWS and Kubernetes, and
`nodewright.inmemory` implements them in memory for tests and the simulator. Each method states its
error contract: callers rely on it, so implementations must keep it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from nodewright.model.capacitybuffer import CapacityBuffer, PodTemplate
from nodewright.model.command import CommandRecord
from nodewright.model.event import Event
from nodewright.model.instance import Instance, InstanceFacts, InstanceStatus
from nodewright.model.instancetype import InstanceType, OfferingKey
from nodewright.model.node import Node
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodeoverlay import NodeOverlay
from nodewright.model.nodepool import NodePool
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


@dataclass(frozen=True, slots=True)
class ApiUsage:
    """What one kind of Kubernetes request cost: `requests` sent and `bytes` received, for a
    `verb` (list, watch, get, patch, delete, create) on a `resource` (pods, nodes, pods/eviction...).
    """

    verb: str
    resource: str
    requests: int
    bytes: int


class EventRecorder(Protocol):
    """Where controllers report what they did or could not do to an object, as Kubernetes Events
    (`kubectl describe pod`, `kubectl get events`): one call per occurrence, a one-liner at the
    call site (`cluster.record(Event(...), now)`).
    """

    def record(self, event: Event, now: float) -> None:
        """Report one occurrence at `now`. Repeats fold into an Event series and writes are
        rate-limited (`nodewright.model.event.EventCorrelator`), so a caller never throttles
        itself. Never raises for an API failure: an Event is best effort, the decision log is
        the record.
        """
        ...


class Cluster(EventRecorder, Protocol):
    """The Kubernetes API as the controllers use it.

    Reads come from a view the implementation keeps current (the real adapter: one LIST per kind,
    then WATCH), so `snapshot`, `pending` and `version` cost no request once it is synced.
    """

    def follow(self, seconds: float) -> None:
        """Keep the view current for the next `seconds` (an invocation's remaining time): the real
        adapter starts or extends its watches; an in-memory cluster has nothing to do.
        """
        ...

    def snapshot(self) -> ClusterSnapshot:
        """Nodes first, then pods, daemonsets and PDBs (the conservative read order)."""
        ...

    def pending(self) -> list[Pod]:
        """`snapshot().pending()`, sorted by key, without building a snapshot."""
        ...

    def version(self) -> int:
        """A number that changes whenever `pending()` may have changed (a pod became or stopped
        being pending, a node started or stopped draining, a node came or went). Never blocks.
        """
        ...

    def usage(self) -> list[ApiUsage]:
        """The API requests sent and bytes received since the last call, by verb and resource."""
        ...

    def get_node(self, name: str) -> Node | None:
        """The node, or None when it does not exist."""
        ...

    def node_by_instance(self, instance_id: str) -> Node | None:
        """The node whose providerID names this EC2 instance, or None."""
        ...

    def pods_on(self, node: str) -> list[Pod]:
        """The non-finished pods bound to `node` (terminating ones included)."""
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

    def label_node(self, name: str, labels: Mapping[str, str | None]) -> None:
        """Set the node's labels to the given values, removing those given None. Idempotent (a
        node that already has them is not written); a missing node is a no-op.
        """
        ...

    def annotate_pod(self, pod: Pod, annotations: Mapping[str, str | None]) -> bool:
        """Set the pod's annotations to the given values, removing those given None, with one
        merge patch. False when the pod is gone (nothing written); idempotent.
        """
        ...


@dataclass(frozen=True, slots=True)
class LaunchRequest:
    """Everything needed to launch the node of one claim.

    `options` are the claim's instance types, cheapest first (at most 60); the claim's
    requirements say which zones and capacity types are allowed; `blocked` offerings are skipped.
    """

    claim: NodeClaim
    nodepool: NodePool
    nodeclass: EC2NodeClass
    options: tuple[InstanceType, ...]
    blocked: frozenset[OfferingKey] = frozenset()


class InsufficientCapacity(Exception):
    """No offering of the request could be fulfilled now; `offerings` are those that failed
    (InsufficientInstanceCapacity, UnfulfillableCapacity, MaxSpotInstanceCountExceeded, a subnet
    out of addresses...). Callers block them for a while and retry the pods elsewhere.
    """

    def __init__(self, offerings: Iterable[OfferingKey], reason: str) -> None:
        self.offerings = tuple(offerings)
        self.reason = reason
        super().__init__(f"{reason}: {', '.join('/'.join(o) for o in self.offerings) or 'no offering'}")


class LaunchError(Exception):
    """A launch failed for a reason other than capacity (bad configuration, permissions...)."""


class CloudProvider(Protocol):
    """EC2 as the controllers use it."""

    def launch(self, request: LaunchRequest) -> Instance:
        """Launch one instance for the claim (CreateFleet, type instant).

        Idempotent per claim: the ClientToken derives from the claim's name, so retrying after a
        crash returns the instance already launched instead of a second one. Raises
        InsufficientCapacity when no allowed offering could be fulfilled, LaunchError otherwise.
        """
        ...

    def instances(self) -> list[Instance]:
        """Instances tagged for this cluster that are not terminated."""
        ...

    def terminate(self, instance_ids: Sequence[str]) -> None:
        """Terminate instances; ids already gone count as terminated."""
        ...

    def stop(self, instance_ids: Sequence[str]) -> None:
        """Stop standby instances (their EBS volumes stay); stopping a stopped one is a no-op, ids
        EC2 does not know are skipped. Other errors are raised.
        """
        ...

    def start(self, instance_id: str, offering: OfferingKey) -> None:
        """Start a stopped standby instance in its own type and zone (`offering`); a no-op on a
        running one. Raises InsufficientCapacity naming `offering` when EC2 has no capacity for it,
        LaunchError otherwise.
        """
        ...

    def instance_statuses(self, instance_ids: Sequence[str]) -> list[InstanceStatus]:
        """The instances among `instance_ids` whose EC2 status checks are impaired (node repair's
        input); healthy, not running and unknown ids are left out. Errors are raised.
        """
        ...

    def instance_facts(self, instance_ids: Sequence[str], *, spot_status: bool = False) -> dict[str, InstanceFacts]:
        """What EC2 says about each of `instance_ids` (by id, tags not asked), every id a key: an
        id EC2 does not know maps to facts with `known` False; with `spot_status`, each spot
        instance's request status too (one more call). Errors are raised.
        """
        ...


@dataclass(frozen=True, slots=True)
class DrainRecord:
    """A drain in progress, as the interruption function recorded it before sending its continuation.

    The state table is what makes a continuation message trustworthy: anyone allowed to send to
    the queue can write a message, only the function can write this record. A continuation acts
    only when its fields equal the record's (all but the attempt counter, which only paces the
    backoff). `expires` (epoch seconds) is when the record stops counting even if nothing deleted
    it: past every continuation the drain could still send.

    One record per drain chain, not per instance: a rebalance recommendation and a spot warning
    for the same instance each run their own chain, and neither may silence the other.
    """

    instance_id: str
    node: str
    drain: str
    deadline: float
    started: float
    origin: str
    replace_by: float | None
    expires: float
    # False for a drain started by a message EC2 did not confirm (Continuation.verified).
    verified: bool = True

    @property
    def chain(self) -> str:
        """The chain's key: the instance, the kind of event that started the drain, and when."""
        return f"{self.instance_id}/{self.origin}/{self.started!r}"


class ClaimRecords(Protocol):
    """The node claims' records in the state table: what was asked of EC2 and how far it got."""

    def create_claim(self, claim: NodeClaim) -> bool:
        """Record a claim before its launch; False (and no change) when one of that name exists."""
        ...

    def save_claim(self, claim: NodeClaim) -> None:
        """Overwrite a claim's record (after launch, registration, initialization)."""
        ...

    def claims(self) -> list[NodeClaim]:
        """Every recorded claim."""
        ...

    def delete_claim(self, name: str) -> None:
        """Remove a claim's record; a missing one counts as removed."""
        ...


class Leases(Protocol):
    """Named leases in the state table, so two invocations of one function never act at once."""

    def acquire_lease(self, name: str, holder: str, now: float, ttl: float) -> bool:
        """Take or renew the lease `name` for `holder` until now + ttl; False while another
        holder's lease has not expired (a conditional write, so two callers cannot both win).
        """
        ...

    def release_lease(self, name: str, holder: str) -> None:
        """Give the lease up if `holder` still has it."""
        ...


class OfferingBlocks(Protocol):
    """The capacity-error cache: offerings that failed to launch, skipped until a time."""

    def block_offerings(self, offerings: Iterable[OfferingKey], until: float) -> None:
        """Remember that these offerings failed, until `until`."""
        ...

    def blocked_offerings(self, now: float) -> frozenset[OfferingKey]:
        """Offerings still blocked at `now`."""
        ...


class CommandRecords(Protocol):
    """The disruption commands in progress, as the consolidator recorded them before acting."""

    def save_command(self, record: CommandRecord) -> None:
        """Write a disruption command's record (create or overwrite)."""
        ...

    def commands(self) -> list[CommandRecord]:
        """Every disruption command in progress, oldest first."""
        ...

    def delete_command(self, command_id: str) -> None:
        """Remove a command's record; a missing one counts as removed."""
        ...


class DrainRecords(Protocol):
    """The interruption function's drain chains in progress (see `DrainRecord`)."""

    def save_drain(self, record: DrainRecord) -> None:
        """Write the record of the drain chain `record.chain` (create or overwrite)."""
        ...

    def drain_record(self, chain: str, now: float) -> DrainRecord | None:
        """The record of this drain chain, or None when there is none or it expired (expires <= now)."""
        ...

    def delete_drain(self, chain: str) -> None:
        """Remove the record of this drain chain; a missing one counts as removed."""
        ...


class LaunchRecords(ClaimRecords, OfferingBlocks, Protocol):
    """What a launch reads and writes: the claim recorded before CreateFleet and completed after,
    and the offerings a capacity error blocked.
    """


class StateStore(ClaimRecords, Leases, OfferingBlocks, CommandRecords, DrainRecords, Protocol):
    """Nodewright's whole durable state (one DynamoDB table in AWS), every concern above.

    What the adapters implement and the assembly hands out, one store for each port; a controller
    takes the narrow ports of the concerns it uses, each its own constructor argument.
    """


class Configuration(Protocol):
    """Where NodePools and EC2NodeClasses come from (the config table, CRDs, or fixed values)."""

    def load(self) -> tuple[list[NodePool], dict[str, EC2NodeClass]]:
        """The valid NodePools and the EC2NodeClasses by name."""
        ...

    def overlays(self) -> list[NodeOverlay]:
        """The valid NodeOverlays, as of the last `load()` (read with it, not again)."""
        ...

    def buffers(self) -> tuple[tuple[CapacityBuffer, ...], tuple[PodTemplate, ...]]:
        """The CapacityBuffers and the PodTemplates they may name, as of the last `load()`."""
        ...


class Catalog(Protocol):
    """Instance types with offerings and prices, as a NodeClass's kubelet settings shape them."""

    def instance_types(self, nodeclass: EC2NodeClass | None) -> Sequence[InstanceType]:
        """The types to plan with for NodePools of this NodeClass."""
        ...


class ReservationEnds(Protocol):
    """Which capacity reservations no longer hold their instances (EC2's view)."""

    def ended(self, reservation_ids: Iterable[str]) -> frozenset[str]:
        """Of `reservation_ids`, those expired, cancelled or unknown to EC2; raises when EC2
        cannot be asked.
        """
        ...


class StatusWrites(Protocol):
    """Writes an object's status subresource (`nodewright.adapters.kube.configstatus`)."""

    def put_status(
        self, kind: str, api_version: str, namespace: str | None, name: str, status: Mapping[str, Any]
    ) -> bool:
        """Merge `status` into the object's status; False when the cluster holds no such object."""
        ...


class ImageIds(Protocol):
    """The AMI ids each EC2NodeClass resolves to now, by NodeClass name: what a node booted from
    another image has drifted from (and a standby instance is replaced for). A NodeClass left out
    is unknown, never a reason to replace; lookups are cached by the adapter, so a pass may ask.
    """

    def __call__(self) -> Mapping[str, frozenset[str]]:
        """The resolved ids; never raises for a NodeClass that does not resolve (it is left out)."""
        ...


class NodeProfiles(Protocol):
    """The instance profiles Nodewright created for the cluster's node roles (uninstall removes them)."""

    def remove(self) -> list[str]:
        """Delete them (roles taken out first); the names deleted. Safe to call twice."""
        ...


class FunctionSwitch(Protocol):
    """Stops the installation's functions; returns what it stopped (names, for the report)."""

    def stop(self) -> list[str]:
        """Stop every function and schedule; safe to call twice."""
        ...


class Observer(Protocol):
    """Where decisions and metrics go: Powertools JSON logs and EMF metrics in Lambda, a list in tests.

    `decision` is one structured record per decision (what was decided and why, with the pods,
    NodePool, options, offering, price...); `metric` is one data point of a named metric.
    """

    def decision(self, kind: str, **fields: object) -> None:
        """Record one decision."""
        ...

    def metric(self, name: str, value: float, unit: str = "Count", **dimensions: str) -> None:
        """Record one data point."""
        ...


class Continuations(Protocol):
    """Work carried to a later invocation: a delayed message to the interruption queue (SQS)."""

    def send(self, event: Mapping[str, Any], delay: float) -> None:
        """Deliver `event` (an EventBridge-shaped dict) to the queue after `delay` seconds (at most 900)."""
        ...


class ProvisionerTrigger(Protocol):
    """Starts a provisioner run now, without waiting for it (an asynchronous Lambda invoke)."""

    def request(self, reason: str) -> None:
        """Ask for a provisioning pass; failures are raised so the caller can retry the message."""
        ...


class ClaimObjects(Protocol):
    """`nodewright.io/v1 NodeClaim` objects in the cluster: the state table's claims mirrored for
    `kubectl get nodeclaims`. The state table stays the source of truth; these are only written.
    """

    def claim_objects(self) -> dict[str, dict[str, Any]] | None:
        """Every NodeClaim object by name (one LIST), or None when the CRD is not installed (404)."""
        ...

    def patch_claim_object(self, name: str, patch: Mapping[str, Any]) -> dict[str, Any] | None:
        """Merge-patch an existing object and return what the server stored; None (nothing
        created) when there is no such object.
        """
        ...

    def apply_claim_object(self, manifest: Mapping[str, Any]) -> dict[str, Any]:
        """Server-side apply `manifest` as the claims' writer (field manager, forced) and return
        what the server stored: one request that creates the object or updates it. Conditions
        are a map keyed by type, so those another writer set and `manifest` leaves out (the
        consolidator's verdicts) are kept. Idempotent: applying the same manifest twice changes
        nothing.
        """
        ...

    def delete_claim_object(self, name: str) -> None:
        """Delete the object; one already gone counts as deleted."""
        ...

    def put_nodepool_status(self, name: str, status: Mapping[str, Any]) -> bool:
        """Merge `status` into the `nodewright.io/v1` NodePool `name`'s status subresource; False when
        there is no such NodePool (it comes from the config table, or from Karpenter's group).
        """
        ...
