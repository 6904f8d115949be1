"""The lookups behind an interruption message's verification: the state table, the Node, EC2.

Role: `MessageVerifier.check(message, instance_id, now)` answers, for one instance a message
names, the three questions of `nodewright.engine.interruption.verification` (fresh? ours? does
EC2 agree?) and returns a `Checked`: the instance's claim record and Node (only when they are
Nodewright's by the state table) and the verdict. It reads, never writes: the interruption
controller acts on the verdict (`bound` turns an unconfirmed message's action into the gentlest
one) and reports what it dropped (`report_drop`).

Reads, in order, stopping at the first that settles it: none for a stale message; the state
table's claims (one Query) for ownership; the claim's Node (from the watch); EC2 for an owned
instance only (`CloudProvider.instance_facts`: DescribeInstances by id, and the spot request of a
spot instance). When EC2 cannot be asked, the message is unconfirmed, not trusted: the gentlest
action is safe either way, and a retry would only delay a real event's cordon.

Metrics: `MessagesDropped` (stale or contradicted: the decision record says which; a forged or replayed message
shows here, and an alarm watches it), `ForeignInstanceMessages` (the rules see every instance of
the account: another autoscaler's events are normal), `UnconfirmedMessages` (acted on gently).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from nodewright.engine.interruption import Action, Message
from nodewright.engine.interruption.verification import (
    DROP,
    GENTLE,
    Verdict,
    gentle,
    owned_node,
    staleness,
    verdict,
)
from nodewright.model.instance import InstanceFacts
from nodewright.model.node import Node
from nodewright.model.nodeclaim import NodeClaim
from nodewright.ports import ClaimRecords, CloudProvider, Cluster, Observer

log = logging.getLogger(__name__)

STALE = "stale"
FOREIGN = "foreign"
CONTRADICTED = "contradicted"


@dataclass(frozen=True, slots=True)
class Checked:
    """One instance of a message, verified: its claim record and Node (None when not
    Nodewright's, or gone), the verdict, and `why` a drop happened (STALE, FOREIGN, CONTRADICTED;
    "" when not dropped).
    """

    claim: NodeClaim | None
    node: Node | None
    verdict: Verdict
    why: str = ""


class MessageVerifier:
    """Verifies interruption messages against the state table, the cluster and EC2 (module docstring)."""

    def __init__(
        self, *, cluster: Cluster, claim_records: ClaimRecords, cloud: CloudProvider, observer: Observer
    ) -> None:
        self.cluster = cluster
        self.claim_records = claim_records
        self.cloud = cloud
        self.observer = observer

    def check(self, message: Message, instance_id: str, now: float) -> Checked:
        """The verdict on `message` for `instance_id` at `now`, with the claim and Node it is about."""
        stale = staleness(message, now)
        if stale:
            return Checked(None, None, Verdict(DROP, f"stale: {stale}"), STALE)
        claim = next((c for c in self.claim_records.claims() if c.instance_id and c.instance_id == instance_id), None)
        if claim is None:
            foreign = Verdict(DROP, "not a Nodewright instance (no claim record), or already gone")
            return Checked(None, None, foreign, FOREIGN)
        # The claim's own Node first: another Node may carry a providerID naming this instance.
        candidate = self.cluster.get_node(claim.node_name) if claim.node_name else None
        node = owned_node(candidate, claim) or owned_node(self.cluster.node_by_instance(instance_id), claim)
        found = verdict(message, self._facts(instance_id))
        return Checked(claim, node, found, CONTRADICTED if found.dropped else "")

    def bound(self, action: Action, checked: Checked) -> Action:
        """`action` as far as `checked` allows: the gentlest form of it for an unconfirmed message."""
        if checked.verdict.outcome != GENTLE or not action.acts:
            return action
        self.observer.metric("UnconfirmedMessages", 1)
        return gentle(action)

    def report_drop(self, message: Message, instance_id: str, checked: Checked) -> None:
        """Count a dropped message (the decision record is the controller's)."""
        if checked.why == FOREIGN:
            self.observer.metric("ForeignInstanceMessages", 1)
        else:
            self.observer.metric("MessagesDropped", 1)

    def _facts(self, instance_id: str) -> InstanceFacts | None:
        try:
            return self.cloud.instance_facts([instance_id], spot_status=True).get(instance_id)
        except Exception as error:  # unconfirmed, not trusted: see the module docstring
            log.warning("EC2 not asked about %s, the message stays unconfirmed: %s", instance_id, error)
            return None
