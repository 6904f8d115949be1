"""The provisioner's housekeeping: claim records, instances and Node objects brought back in line.

Role: `Housekeeping.reconcile`, run by the provisioner (`nodewright.controllers.provisioning`), whose component it is,
at the start of each invocation, finishes what earlier invocations left: it completes claims
whose launch succeeded but whose record was not updated, gives up claims that never launched,
marks claims registered and initialized as their nodes come up, terminates claims whose node
never registered, removes orphan instances and Node objects whose instance is gone, and demotes
the nodes of capacity reservations that ended (below). Each step is idempotent: a crash in the
middle is finished by the next run.

Destructive steps act on evidence, not on tags or labels anyone can write (design rule 12):
- a claim's instance counts as gone only when EC2, asked by id (`CloudProvider.instance_facts`),
  does not know it or says it is shutting down or terminated: an instance whose cluster tag was
  removed drops out of the tagged listing but is still running, and its claim and Node stay;
- an orphan (a live instance with the cluster tag whose claim is not in the state table) is
  terminated only when it carries a claim name as the functions issue them (`<nodepool>-<10 hex>`,
  the nodepool tag agreeing, that NodePool configured) and, when EC2 reports an instance profile,
  one that Nodewright's claimed instances run with (`orphan_evidence` says what is missing);
- a Node is deleted as stale only when its providerID names an instance a claim record named and
  EC2 confirms that instance gone; a `nodewright.io/nodepool` label alone is no evidence.

Ended reservations (Karpenter's capacity type controller): an ODCR that expires or is cancelled
leaves its instances running as plain on-demand ones. A node labelled `karpenter.sh/capacity-type:
reserved` whose `karpenter.k8s.aws/capacity-reservation-id` EC2 no longer has active
(`ReservationEnds.ended`) gets its claim record saved as on-demand at its type's on-demand price
(so consolidation prices and replaces it as on-demand), then its labels patched to on-demand
without the reservation labels. The claim goes first: a crash between the two leaves the node
labelled reserved, which the next run finds again. A node not yet registered has no labels to
read; it is demoted once it registers. When EC2 cannot be asked, nothing is demoted (a warning).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence

from nodewright.controllers.launching import launched_claim
from nodewright.controllers.provisionoptions import ProvisionerOptions
from nodewright.engine.reservations import ENDED_LABELS, demoted, reserved_node_reservation
from nodewright.engine.scheduling.inputs import nodes_by_claim
from nodewright.model.instance import Instance
from nodewright.model.instancetype import InstanceType
from nodewright.model.node import Node
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.snapshot import ClusterSnapshot
from nodewright.model.standby import STARTING
from nodewright.ports import (
    Catalog,
    ClaimRecords,
    Clock,
    CloudProvider,
    Cluster,
    Configuration,
    Observer,
    ReservationEnds,
)

log = logging.getLogger(__name__)

# A claim name as `provisionoptions.claim_name` issues it: the NodePool's name (40 characters at
# most), a dash, 10 hex digits.
ISSUED_CLAIM_NAME = re.compile(r"(?P<nodepool>.{1,40})-[0-9a-f]{10}")
GONE_STATES = ("shutting-down", "terminated")


class Housekeeping:
    """The claim lifecycle's reconciliation (module docstring), against the ports it is given."""

    def __init__(
        self,
        *,
        cluster: Cluster,
        cloud: CloudProvider,
        store: ClaimRecords,
        clock: Clock,
        config: Configuration,
        catalog: Catalog,
        observer: Observer,
        options: ProvisionerOptions = ProvisionerOptions(),  # noqa: B008 (frozen: a shared default is safe)
        reservations: ReservationEnds | None = None,
    ) -> None:
        self.cluster = cluster
        self.cloud = cloud
        self.store = store
        self.clock = clock
        self.config = config
        self.catalog = catalog
        self.observer = observer
        self.options = options
        # Asked which capacity reservations ended, to demote their nodes (None: never asked).
        self.reservations = reservations

    def reconcile(self, snapshot: ClusterSnapshot) -> dict[str, int]:
        """Bring claim records, instances and Node objects back in line (see the module docstring)."""
        now = self.clock.now()
        opts = self.options
        counts = {
            "resumed": 0,
            "abandoned": 0,
            "registered": 0,
            "initialized": 0,
            "timed_out": 0,
            "orphans": 0,
            "gone": 0,
            "stale_nodes": 0,
            "reservation_ended": 0,
        }
        instances = self.cloud.instances()
        by_claim = {i.nodeclaim: i for i in instances if i.nodeclaim}
        nodes = nodes_by_claim(snapshot.nodes)
        claims = self.store.claims()
        gone = self._confirmed_gone(claims, instances)
        for record in claims:
            claim = record  # replaced below as the claim moves through its states
            instance = by_claim.get(claim.name)
            if claim.state == "pending":
                if instance is not None:  # launched, but the record was not completed
                    self.store.save_claim(launched_claim(claim, instance, now))
                    counts["resumed"] += 1
                elif now - claim.created_at > opts.resume_grace:
                    self.store.delete_claim(claim.name)
                    counts["abandoned"] += 1
                continue
            if instance is None or not instance.live:
                if claim.instance_id and claim.instance_id not in gone:
                    continue  # EC2 says it still runs (its tags changed): keep the claim and its Node
                self.store.delete_claim(claim.name)
                counts["gone"] += 1
                self.observer.decision("claim-gone", nodeclaim=claim.name, instance_id=claim.instance_id)
                self.observer.metric("NodesTerminated", 1, nodepool=claim.nodepool)
                continue
            node = nodes.get(claim.name) or nodes.get(claim.provider_id)
            if claim.state == "launched":
                if node is not None:
                    claim = claim.with_changes(state="registered", node_name=node.name, registered_at=now)
                    self.store.save_claim(claim)
                    counts["registered"] += 1
                elif now - claim.launched_at > opts.registration_timeout:
                    self.cloud.terminate([claim.instance_id])
                    self.store.delete_claim(claim.name)
                    counts["timed_out"] += 1
                    self.observer.metric("LaunchFailures", 1, reason="RegistrationTimeout")
                    self.observer.decision("registration-timeout", nodeclaim=claim.name, instance_id=claim.instance_id)
                    continue
            if claim.state == STARTING:  # a standby instance started for pods (`controllers.standby`)
                if node is not None and node.ready:
                    self.store.save_claim(claim.with_changes(state="initialized", initialized_at=now))
                    counts["initialized"] += 1
                elif now - claim.registered_at > opts.registration_timeout:
                    self.cloud.terminate([claim.instance_id])
                    self.store.delete_claim(claim.name)
                    counts["timed_out"] += 1
                    self.observer.decision("standby-start-timeout", nodeclaim=claim.name, instance_id=claim.instance_id)
                continue
            if claim.state == "registered" and node is not None and _initialized(node, claim):
                self.store.save_claim(claim.with_changes(state="initialized", initialized_at=now))
                counts["initialized"] += 1
        known = {c.name for c in claims}
        candidates = [
            i for i in instances if i.live and i.nodeclaim not in known and now - i.launched_at > opts.orphan_grace
        ]
        orphans = self._orphans(candidates, instances, claims)
        if orphans:
            self.cloud.terminate(orphans)
            counts["orphans"] = len(orphans)
            self.observer.decision("orphans-terminated", instance_ids=orphans)
        for node in snapshot.nodes:
            # Only Nodes of instances a claim named and EC2 confirms gone (module docstring).
            if node.instance_id and node.instance_id in gone:
                self.cluster.delete_node(node.name)
                counts["stale_nodes"] += 1
                self.observer.decision("stale-node-deleted", node=node.name, instance_id=node.instance_id)
        counts["reservation_ended"] = self._reservations_ended(snapshot.nodes, {c.name: c for c in claims})
        return counts

    def _confirmed_gone(self, claims: Sequence[NodeClaim], instances: Sequence[Instance]) -> frozenset[str]:
        """The instance ids of claims that the tagged listing no longer shows live and that EC2,
        asked by id, confirms gone. Nothing is confirmed when EC2 cannot be asked.
        """
        listed = {i.instance_id for i in instances if i.live}
        missing = sorted({c.instance_id for c in claims if c.instance_id} - listed)
        if not missing:
            return frozenset()
        try:
            facts = self.cloud.instance_facts(missing)
        except Exception as error:
            log.warning("EC2 not asked about %d instances, none counted gone: %s", len(missing), error)
            return frozenset()
        return frozenset(i for i, f in facts.items() if not f.known or f.state in GONE_STATES)

    def _orphans(
        self, candidates: Sequence[Instance], instances: Sequence[Instance], claims: Sequence[NodeClaim]
    ) -> list[str]:
        """The `candidates` with the evidence of a Nodewright launch (module docstring); the others
        are reported once per pass and left alone.
        """
        pools = {p.name[:40] for p in self.config.load()[0]}
        claimed = {c.instance_id for c in claims}
        profiles = {i.instance_profile for i in instances if i.instance_id in claimed}
        out: list[str] = []
        for instance in candidates:
            missing = orphan_evidence(instance, pools, profiles)
            if missing:
                self.observer.decision("orphan-left-alone", instance_id=instance.instance_id, missing=missing)
                self.observer.metric("OrphansLeftAlone", 1)
            else:
                out.append(instance.instance_id)
        return out

    def _reservations_ended(self, nodes: Sequence[Node], claims: Mapping[str, NodeClaim]) -> int:
        """Demote the nodes (and their claims) whose capacity reservation ended (module
        docstring); how many nodes were relabelled.
        """
        held = {n.name: reserved_node_reservation(n.labels) for n in nodes if n.launched_by_nodewright}
        held = {name: rid for name, rid in held.items() if rid}
        if not held or self.reservations is None:
            return 0
        try:
            ended = self.reservations.ended(held.values())
        except Exception as error:
            log.warning("capacity reservations not read, no node demoted: %s", error)
            return 0
        relabelled = 0
        for node in nodes:
            reservation = held.get(node.name, "")
            if reservation not in ended:
                continue
            claim = claims.get(node.nodeclaim)
            if claim is not None and claim.capacity_type == "reserved":
                claim = demoted(claim, self._instance_type(claim))
                self.store.save_claim(claim)
            self.cluster.label_node(node.name, ENDED_LABELS)
            relabelled += 1
            self.observer.decision(
                "reservation-ended",
                node=node.name,
                nodeclaim=node.nodeclaim,
                reservation_id=reservation,
                price=claim.price if claim is not None else None,
            )
        return relabelled

    def _instance_type(self, claim: NodeClaim) -> InstanceType | None:
        """The catalog's entry for the claim's instance type (its NodeClass's view), or None."""
        nodeclass = self.config.load()[1].get(claim.node_class)
        return next((t for t in self.catalog.instance_types(nodeclass) if t.name == claim.instance_type), None)


def orphan_evidence(instance: Instance, pools: frozenset[str] | set[str], profiles: set[str]) -> str:
    """What is missing for `instance` to count as one the functions launched ("" when nothing):
    a claim name as they issue them whose NodePool prefix agrees with the nodepool tag and names a
    configured NodePool (`pools`, names cut to 40), and an instance profile among `profiles` (those
    of Nodewright's claimed instances) when EC2 reports one and any claimed instance is known.
    """
    match = ISSUED_CLAIM_NAME.fullmatch(instance.nodeclaim)
    if match is None:
        return f"nodeclaim tag {instance.nodeclaim!r} is not a claim name the functions issue"
    if match["nodepool"] != instance.nodepool[:40] or match["nodepool"] not in pools:
        return f"nodeclaim tag {instance.nodeclaim!r} does not name a configured NodePool's claim"
    if profiles and instance.instance_profile not in profiles:
        return f"instance profile {instance.instance_profile!r} is not the one Nodewright's nodes run with"
    return ""


def _initialized(node: Node, claim: NodeClaim) -> bool:
    """Ready, and every startup taint the claim declared is gone."""
    startup = {(t.key, t.effect) for t in claim.startup_taints}
    return node.ready and not any((t.key, t.effect) in startup for t in node.taints)
