"""The provisioner's housekeeping: claim records, instances and Node objects brought back in line.

Role: `Housekeeping.reconcile`, run by the provisioner (`nodewright.controllers.provisioning`)
at the start of each invocation, finishes what earlier invocations left: it completes claims
whose launch succeeded but whose record was not updated, gives up claims that never launched,
marks claims registered and initialized as their nodes come up, terminates claims whose node
never registered, removes orphan instances and Node objects whose instance is gone, and demotes
the nodes of capacity reservations that ended (below). Each step is idempotent: a crash in the
middle is finished by the next run.

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
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from nodewright.controllers.launching import (
    Launching,
    _launched,
    _nodes_by_claim,
)
from nodewright.engine.reservations import ENDED_LABELS, demoted, reserved_node_reservation
from nodewright.model.instancetype import InstanceType
from nodewright.model.node import Node
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.snapshot import ClusterSnapshot

log = logging.getLogger(__name__)


class ReservationEnds(Protocol):
    """Which capacity reservations no longer hold their instances (EC2's view)."""

    def ended(self, reservation_ids: Iterable[str]) -> frozenset[str]:
        """Of `reservation_ids`, those expired, cancelled or unknown to EC2; raises when EC2
        cannot be asked.
        """
        ...


class Housekeeping(Launching):
    """The claim lifecycle's reconciliation (module docstring)."""

    # The capacity reservations adapter, when the provisioner was given one.
    reservations: ReservationEnds | None = None

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
        nodes = _nodes_by_claim(snapshot.nodes)
        live_ids = {i.instance_id for i in instances if i.live}
        claims = self.store.claims()
        for record in claims:
            claim = record  # replaced below as the claim moves through its states
            instance = by_claim.get(claim.name)
            if claim.state == "pending":
                if instance is not None:  # launched, but the record was not completed
                    self.store.save_claim(_launched(claim, instance, now))
                    counts["resumed"] += 1
                elif now - claim.created_at > opts.resume_grace:
                    self.store.delete_claim(claim.name)
                    counts["abandoned"] += 1
                continue
            if instance is None or not instance.live:
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
            if claim.state == "registered" and node is not None and _initialized(node, claim):
                self.store.save_claim(claim.with_changes(state="initialized", initialized_at=now))
                counts["initialized"] += 1
        known = {c.name for c in claims}
        orphans = [
            i.instance_id
            for i in instances
            if i.live and i.nodeclaim not in known and now - i.launched_at > opts.orphan_grace
        ]
        if orphans:
            self.cloud.terminate(orphans)
            counts["orphans"] = len(orphans)
            self.observer.decision("orphans-terminated", instance_ids=orphans)
        for node in snapshot.nodes:
            # Only nodes Nodewright launched: another autoscaler's instances are not in `live_ids`.
            if node.launched_by_nodewright and node.instance_id and node.instance_id not in live_ids:
                self.cluster.delete_node(node.name)
                counts["stale_nodes"] += 1
                self.observer.decision("stale-node-deleted", node=node.name, instance_id=node.instance_id)
        counts["reservation_ended"] = self._reservations_ended(snapshot.nodes, {c.name: c for c in claims})
        return counts

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


def _initialized(node: Node, claim: NodeClaim) -> bool:
    """Ready, and every startup taint the claim declared is gone."""
    startup = {(t.key, t.effect) for t in claim.startup_taints}
    return node.ready and not any((t.key, t.effect) in startup for t in node.taints)
