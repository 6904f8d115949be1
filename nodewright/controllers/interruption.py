"""The interruption controller: carries out what `nodewright.engine.interruption` decides.

Role: `InterruptionController.handle(message)` runs once per event (the handler deduplicates on
the EventBridge id). For each affected instance it finds the Node and the claim record, looks up
the NodePool's rebalance policy and terminationGracePeriod, asks `action_for` what to do, and:

- blocks the (spot, instance type, zone) offering for three minutes on a spot warning;
- cordons the node (`spec.unschedulable` + the `nodewright.io/disrupted:NoSchedule` taint); with
  a replacement wanted the taint's value is `replace`, which makes the provisioner count the
  node's pods as pending, and the provisioner is invoked at once (asynchronously);
- drains through the Eviction API one bounded step at a time (`Drainer`); what does not finish
  continues through a delayed message to the same queue (a Continuation), never a sleeping Lambda;
  ReplaceThenDrain first waits (by continuation) until the claims holding the pods are Ready;
- once drained (or at the deadline), terminates the instance and removes the Node and the claim,
  for every kind except the NTH-style rebalance policies (Cordon, CordonAndDrain), which leave
  the node in place. When the event said when AWS takes the instance (spot and capacity
  reservation warnings, scheduled changes) and pods a PodDisruptionBudget holds are still on it
  at the deadline, the drain goes on evicting what the budgets allow until that time instead:
  terminating at the deadline would only take those pods down sooner (the deadline is that time
  minus the margin; when terminationGracePeriod bounds it earlier, at most the margin past it);
- on `terminated`, removes the Node object and the claim record (in any order of arrival).

Before any of this, each instance of a message is verified (`controllers/verification.py`): a
stale message, one about an instance no claim record names, or one EC2 contradicts is dropped with
the reason; one EC2 cannot confirm gets the gentlest action of its kind (the same cordon,
replacement and drain, but no Node or claim deleted, no do-not-disrupt pod evicted, and no
termination while pods are left on the instance).

Intent before effects. A drain's record and the chain's next continuation are written before
any other effect of a fresh event (the Event, the offering block, the cordon, the provisioner
call, the evictions), and each continuation sends its successor before its own evictions
(`_next_step` decides from reads alone what the step does and when its successor is due). An
invocation that dies anywhere after that is picked up by the successor within seconds; only a
death before it waits for the queue's redelivery (the visibility timeout, 20 s as deployed). A
step that evicted pods leaves the termination to its successor, which finds the node empty and
ends the chain without a successor. `python -m bench.crash_points` kills the function at every
write and every pair of writes.

Continuations are authenticated by state: before sending one, the controller writes the record of
its drain chain to the state table (`DrainRecords.save_drain`), and a continuation acts only when
the record of its chain (instance, origin, start) exists and holds the same drain (node, kind,
deadline, replacement time). Anything else, a forged message above all, is logged
(`interruption-continuation-rejected`, with why) and dropped. The record is deleted after the
chain's last effect and expires by TTL if a chain dies.

Every step is idempotent: cordoning twice, evicting a gone pod, deleting a missing node or claim,
terminating a terminated instance are all no-ops, so a redelivered message is safe.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nodewright.controllers.drain import Drainer
from nodewright.controllers.kubeusage import publish_api_usage
from nodewright.controllers.provisionoptions import IN_FLIGHT
from nodewright.controllers.verification import MessageVerifier
from nodewright.engine.drain import plan_drain
from nodewright.engine.interruption import (
    CAPACITY_RESERVATION,
    CONTINUATION,
    REBALANCE,
    SCHEDULED_CHANGE,
    SPOT_INTERRUPTION,
    Continuation,
    MalformedEvent,
    Message,
    action_for,
    continuation_event,
    drainstep,
)
from nodewright.engine.interruption.actions import NO_DRAIN
from nodewright.engine.interruption.drainstep import (
    EVICT,
    EVICT_PAST_DEADLINE,
    EVICT_UNCONFIRMED,
    KEEP_DO_NOT_DISRUPT,
    STOP_UNCONFIRMED,
    TERMINATE,
    WAIT,
    DrainNext,
    forced,
    taken_at,
    waits_for_replacement,
)
from nodewright.engine.interruption.messages import STATE_CHANGE
from nodewright.model import labels as wk
from nodewright.model.event import (
    CAPACITY_RESERVATION_INTERRUPTED,
    INSTANCE_STOPPING,
    INSTANCE_TERMINATING,
    INSTANCE_UNHEALTHY,
    SPOT_INTERRUPTED,
    SPOT_REBALANCE,
    Event,
    interrupted,
)
from nodewright.model.node import Node
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.nodepool import NodePool
from nodewright.model.snapshot import reschedulable
from nodewright.model.standby import STANDBY_LABEL
from nodewright.model.taints import Taint
from nodewright.ports import (
    ClaimRecords,
    Clock,
    CloudProvider,
    Cluster,
    Configuration,
    Continuations,
    DrainRecord,
    DrainRecords,
    Observer,
    OfferingBlocks,
    ProvisionerTrigger,
)

# SQS caps DelaySeconds at 15 minutes.
MAX_DELAY = 900.0

# How long a drain record outlives the continuation it admits: that message waits at most
# MAX_DELAY, then is retried for a few visibility timeouts (about a minute and a half each).
DRAIN_RECORD_SECONDS = MAX_DELAY + 3600.0
# A continuation rewrites its chain's record only when less than this is left of it: enough for
# the next message's delay and its retries.
DRAIN_RECORD_REFRESH = MAX_DELAY + 600.0

# How long after a message the node watch is kept current (extended by every message).
FOLLOW_SECONDS = 30.0

# The taint a drain's pods are judged against, and a continuation's cordon when the chain's first
# invocation died before its own (every drain replaces the node).
_DRAIN_TAINT = Taint(wk.DISRUPTED_TAINT_KEY, "NoSchedule", wk.DISRUPTED_REPLACE)


@dataclass(frozen=True, slots=True)
class InterruptionOptions:
    """Timings, in seconds."""

    offering_block: float = 180.0
    # ReplaceThenDrain: when no claim holds the node's pods this long after the cordon, the
    # provisioner found room on existing nodes (or could not launch): drain without waiting more.
    replacement_grace: float = 30.0
    # How often a waiting ReplaceThenDrain looks at its replacement again.
    replacement_poll: float = 5.0


@dataclass
class Handled:
    """What handling one message did, per instance (JSON-ready: the idempotency record keeps it)."""

    kind: str
    instances: dict[str, dict[str, object]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        """A JSON-ready summary."""
        return {"kind": self.kind, "instances": self.instances}


class InterruptionController:
    """Handles parsed interruption messages against the ports it is given (module docstring)."""

    def __init__(
        self,
        *,
        cluster: Cluster,
        claim_records: ClaimRecords,
        drain_records: DrainRecords,
        offering_blocks: OfferingBlocks,
        cloud: CloudProvider,
        clock: Clock,
        config: Configuration,
        observer: Observer,
        continuations: Continuations,
        provisioner: ProvisionerTrigger,
        options: InterruptionOptions = InterruptionOptions(),
        default_policy: str = "ReplaceThenDrain",
    ) -> None:
        self.cluster = cluster
        # The state table's concerns it uses, each its own port (one DynamoDB table in AWS).
        self.claim_records = claim_records
        self.drain_records = drain_records
        self.offering_blocks = offering_blocks
        self.cloud = cloud
        self.clock = clock
        self.config = config
        self.observer = observer
        self.continuations = continuations
        self.provisioner = provisioner
        self.options = options
        self.default_policy = default_policy
        self.drainer = Drainer(cluster, observer)

    @property
    def verifier(self) -> MessageVerifier:
        """The verification step over this controller's current ports (it keeps no state)."""
        return MessageVerifier(
            cluster=self.cluster, claim_records=self.claim_records, cloud=self.cloud, observer=self.observer
        )

    def process(self, parsed: Message | MalformedEvent) -> dict[str, object]:
        """Handle one SQS body as the handler parsed it (`engine.interruption.receive`). A body
        that is not an event is logged and reported, never raised: retrying it could not help, so
        the record is acknowledged.
        """
        if isinstance(parsed, MalformedEvent):
            self.observer.metric("MalformedMessages", 1)
            self.observer.decision("interruption-malformed", error=str(parsed))
            return {"malformed": str(parsed)}
        message = parsed
        # Nodes are read from the adapter's watch while messages keep coming (a storm is many
        # messages a minute); pods are read per node, with a field selector.
        self.cluster.follow(FOLLOW_SECONDS)
        try:
            return self.handle(message).as_dict()
        finally:
            publish_api_usage(self.cluster, self.observer)

    def handle(self, message: Message) -> Handled:
        """Act on one message (see the module docstring); raises only when a call failed, so the
        record is retried (every step is idempotent).
        """
        handled = Handled(message.kind)
        now = self.clock.now()
        if message.kind != CONTINUATION:
            self.observer.metric("InterruptionsReceived", 1, kind=message.kind)
            if message.time:
                self.observer.metric("MessageAgeSeconds", max(0.0, now - message.time), "Seconds")
        if message.continuation is not None:
            cont = message.continuation
            handled.instances[cont.instance_id] = self._continue(message, cont)
            return handled
        for instance_id in message.instance_ids or self._reserved_instances(message):
            handled.instances[instance_id] = self._instance(message, instance_id, now)
        return handled

    def _reserved_instances(self, message: Message) -> tuple[str, ...]:
        """The instances of the nodes launched into the capacity reservation a message names (a
        capacity block's expiration warning names the block, not its instances).
        """
        if not message.reservation_id:
            return ()
        nodes = self.cluster.snapshot().nodes
        return tuple(
            sorted(
                n.instance_id
                for n in nodes
                if n.instance_id and n.labels.get(wk.CAPACITY_RESERVATION_ID) == message.reservation_id
            )
        )

    # -- a fresh event ---------------------------------------------------------------------------

    def _instance(self, message: Message, instance_id: str, started: float) -> dict[str, object]:
        # Verified first (controllers/verification.py): fresh, Nodewright's by its claim record,
        # and what EC2 can confirm confirmed; the node and claim come from there, not from labels.
        checked = self.verifier.check(message, instance_id, started)
        node, claim = checked.node, checked.claim
        record: dict[str, object] = {"node": node.name if node else "", "nodeclaim": claim.name if claim else ""}
        if checked.verdict.dropped or claim is None:
            self.verifier.report_drop(message, instance_id, checked)
            record["action"] = f"ignored: {checked.verdict.reason}"
            self.observer.decision("interruption", event=message.kind, instance_id=instance_id, **record)
            return record
        if message.kind == STATE_CHANGE and message.state in ("stopping", "stopped") and STANDBY_LABEL in claim.labels:
            # The provisioner stopped its own standby instance (controllers/standby.py): no interruption.
            record["action"] = "ignored: a standby instance, stopped by the provisioner"
            self.observer.decision("interruption", event=message.kind, instance_id=instance_id, **record)
            return record
        pool = self._pool(claim.nodepool)
        policy = pool.rebalance_policy if pool else self.default_policy
        grace = pool.termination_grace_period if pool else None
        action = self.verifier.bound(action_for(message, policy, now=started, grace=grace), checked)
        record.update(policy=policy, reason=action.reason, verified=checked.verdict.reason)
        cont: Continuation | None = None
        next_step: DrainNext | None = None
        if node is not None and action.drain != NO_DRAIN:
            cont = Continuation(
                node=node.name,
                instance_id=instance_id,
                drain=action.drain,
                deadline=action.deadline or 0.0,
                started=started,
                origin=message.kind,
                replace_by=action.replace_by,
                verified=action.verified,
            )
            # Intent before effects: the drain record and the chain's next continuation exist
            # before the cordon, the provisioner call and the evictions, so an invocation that
            # dies anywhere after them is picked up by that continuation within seconds, not by
            # the queue's redelivery a visibility timeout later.
            next_step = self._next_step(cont)
            if next_step.delay is not None:
                self._carry(message.id, cont, next_step.delay)
        if node is not None:
            self.cluster.record(_interruption_event(node.name, message, action.reason), started)
        steps: list[str] = []
        if action.block_offering:
            self._block(node, claim, steps, reserved=message.kind == CAPACITY_RESERVATION)
        if action.delete:
            if node is not None:
                self.cluster.delete_node(node.name)
            if claim is not None:
                self.claim_records.delete_claim(claim.name)
            steps.append("removed node and claim")
        if node is None and claim is not None and action.replace:
            # Launched but not registered yet: its pods wait for a node that will not come.
            self._retire(instance_id, None, claim)
            self.provisioner.request(f"{message.kind} on unregistered {instance_id}")
            steps.append("terminated the unregistered instance; provisioner invoked")
        if node is not None and action.cordon:
            value = wk.DISRUPTED_REPLACE if action.replace else wk.DISRUPTED_CORDON_ONLY
            self.cluster.cordon(node.name, Taint(wk.DISRUPTED_TAINT_KEY, "NoSchedule", value))
            self.observer.metric("NodesCordoned", 1)
            record["cordon_seconds"] = round(self.clock.now() - started, 3)
            steps.append("cordoned")
        if node is not None and action.replace:
            self.provisioner.request(f"{message.kind}: replace {node.name}")
            record["replacement_request_seconds"] = round(self.clock.now() - started, 3)
            steps.append("provisioner invoked")
        if cont is not None and next_step is not None:
            record.update(self._drain(cont, policy, next_step))
        record["action"] = ", ".join(steps) or action.reason
        self.observer.decision("interruption", event=message.kind, instance_id=instance_id, **record)
        return record

    # -- drains, continued -----------------------------------------------------------------------

    def _continue(self, message: Message, cont: Continuation) -> dict[str, object]:
        refused, recorded_until = self._refusal(cont)
        if refused:
            self.observer.metric("ContinuationsRejected", 1)
            self.observer.decision(
                "interruption-continuation-rejected", instance_id=cont.instance_id, node=cont.node, reason=refused
            )
            return {"node": cont.node, "action": f"dropped: {refused}"}
        node = self.cluster.get_node(cont.node)
        if node is None:
            record: dict[str, object] = {"node": cont.node, "action": "node gone: drain over"}
            self.drain_records.delete_drain(_chain(cont))
        else:
            pool = self._pool(node.nodepool)
            policy = pool.rebalance_policy if pool else self.default_policy
            next_step = self._next_step(cont)
            if next_step.delay is not None:
                # Before any effect, as on a fresh event.
                self._carry(message.id, cont, next_step.delay, recorded_until=recorded_until)
            if not node.unschedulable:
                # The invocation that started the chain died before its cordon.
                self.cluster.cordon(node.name, _DRAIN_TAINT)
                self.observer.metric("NodesCordoned", 1)
            record = {"node": cont.node, **self._drain(cont, policy, next_step)}
        self.observer.decision("interruption", event=CONTINUATION, instance_id=cont.instance_id, **record)
        return record

    def _next_step(self, cont: Continuation) -> DrainNext:
        """What the drain `cont` carries does next (`engine.interruption.drainstep.next_step`),
        from reads alone: the replacement's readiness first when it waits for one, then the pods.
        """
        now = self.clock.now()
        if waits_for_replacement(cont, now) and not self._replaced(cont, now):
            return DrainNext(WAIT, self.options.replacement_poll)
        return drainstep.next_step(
            cont, plan_drain(self.cluster.pods_on(cont.node), _DRAIN_TAINT, forced=forced(cont)), now
        )

    def _drain(self, cont: Continuation, policy: str, next_step: DrainNext) -> dict[str, object]:
        """The drain step `next_step` chose for `cont`; its successor was sent before (`_carry`)."""
        now = self.clock.now()
        if next_step.what == WAIT:
            return {"drain": "waiting for replacement capacity"}
        force = forced(cont)
        by = f"{cont.origin} of instance {cont.instance_id}"
        if next_step.what in (EVICT, EVICT_PAST_DEADLINE, EVICT_UNCONFIRMED):
            step = self.drainer.step(cont.node, _DRAIN_TAINT, forced=force, attempt=cont.attempt, by=by, now=now)
            record: dict[str, object] = {
                "evicted": step.evicted,
                "blocked_by_pdb": sorted(step.blocked),
                "kept": step.kept,
            }
            if next_step.what == EVICT_UNCONFIRMED:
                record["drain"] = f"unconfirmed: evicting what budgets allow, continues in {next_step.delay:g} s"
            elif next_step.what == EVICT_PAST_DEADLINE:
                record["drain"] = (
                    f"past its deadline: evicting what budgets allow until the interruption ({taken_at(cont):.0f})"
                )
            else:
                # Even when this step emptied the node, its successor (already sent) finishes it.
                record["drain"] = f"continues in {next_step.delay:g} s"
            return record
        if next_step.what == STOP_UNCONFIRMED:
            self.drain_records.delete_drain(_chain(cont))
            return {"kept": dict(next_step.kept), "drain": "unconfirmed: stopped, the node stays cordoned"}
        kept = dict(next_step.kept)
        record = {"kept": kept, "drain": "done" if next_step.drained else "deadline reached"}
        if not next_step.drained:
            # The deadline: what the budgets allow still leaves before the instance goes.
            step = self.drainer.step(cont.node, _DRAIN_TAINT, forced=force, attempt=cont.attempt, by=by, now=now)
            record.update(evicted=step.evicted, blocked_by_pdb=sorted(step.blocked), kept=step.kept)
            kept = step.kept
        record["drain_seconds"] = round(now - cont.started, 3)
        self.observer.metric("DrainSeconds", now - cont.started, "Seconds")
        end = drainstep.ending(cont, policy, kept)
        if end == KEEP_DO_NOT_DISRUPT:
            record["terminated"] = ""
        elif end == TERMINATE:
            node = self.cluster.get_node(cont.node)
            self._retire(cont.instance_id, node, self._claim_of(cont.instance_id, node))
            record["terminated"] = cont.instance_id
        # Last: a crash before this line redelivers a continuation that the record still admits.
        self.drain_records.delete_drain(_chain(cont))
        return record

    def _refusal(self, cont: Continuation) -> tuple[str, float]:
        """Why `cont` may not act ("" when its drain record admits it), and until when its
        record holds.
        """
        recorded = self.drain_records.drain_record(_chain(cont), self.clock.now())
        if recorded is None:
            return "no drain record for this chain: not sent by this function, or the drain is over", 0.0
        if _drain_record(cont, recorded.expires) != recorded:
            return "does not match its drain record: not sent by this function", 0.0
        return "", recorded.expires

    def _replaced(self, cont: Continuation, now: float) -> bool:
        """True when the drain may start: the claims holding the node's pods have Ready nodes, or
        no claim took them within the grace, or the wait is over.
        """
        if cont.replace_by is not None and now >= cont.replace_by:
            return True
        pods = {p.key for p in self.cluster.pods_on(cont.node) if reschedulable(p)}
        if not pods:
            return True
        # A replacement is a claim made after the cordon, or one still in flight that a pass put
        # these pods on. The node's own claim, and ready claims whose planned pods kube-scheduler
        # put elsewhere, list these pods too but bring nothing new.
        holders = [
            c
            for c in self.claim_records.claims()
            if pods.intersection(c.pods)
            and c.instance_id != cont.instance_id
            and c.node_name != cont.node
            and (c.created_at >= cont.started or c.state in IN_FLIGHT)
        ]
        if not holders:
            return now - cont.started >= self.options.replacement_grace
        for claim in holders:
            node = self.cluster.node_by_instance(claim.instance_id) if claim.instance_id else None
            if node is None or not node.ready:
                return False
        return True

    def _carry(self, event_id: str, cont: Continuation, delay: float, *, recorded_until: float = 0.0) -> None:
        """Send the chain's next continuation, due in `delay` seconds; the drain record that admits
        it is written first unless it holds (`recorded_until`) long enough already, so a step of a
        chain under way has one write before its effects, the message.
        """
        nxt = Continuation(
            node=cont.node,
            instance_id=cont.instance_id,
            drain=cont.drain,
            deadline=cont.deadline,
            started=cont.started,
            origin=cont.origin,
            replace_by=cont.replace_by,
            attempt=cont.attempt + 1,
            verified=cont.verified,
        )
        # A deterministic id: a redelivered message sends the same continuation, which the
        # idempotency layer then drops, so one drain never forks into two chains. The instance is
        # part of it: one Health event drains several nodes, and their chains must not collide.
        root = event_id.split("#", 1)[0]
        event_id = f"{root}#{cont.instance_id}#{nxt.attempt}"
        now = self.clock.now()
        # Written before the message exists, so the message is never ahead of what admits it.
        if recorded_until < now + DRAIN_RECORD_REFRESH:
            self.drain_records.save_drain(_drain_record(nxt, now + DRAIN_RECORD_SECONDS))
        event = continuation_event(nxt, event_id=event_id, now=now)
        self.continuations.send(event, min(MAX_DELAY, max(0.0, delay)))

    # -- helpers ---------------------------------------------------------------------------------

    def _retire(self, instance_id: str, node: Node | None, claim: NodeClaim | None) -> None:
        """Terminate the instance, then remove the Node and the claim record."""
        self.cloud.terminate([instance_id])
        if node is not None:
            self.cluster.delete_node(node.name)
        if claim is not None:
            self.claim_records.delete_claim(claim.name)
        self.observer.decision("interruption-terminated", instance_id=instance_id, node=node.name if node else "")

    def _block(self, node: Node | None, claim: NodeClaim | None, steps: list[str], *, reserved: bool = False) -> None:
        """Block the node's offering in the capacity-error cache: its spot pool, or (`reserved`)
        the capacity reservation it was launched into; a node not launched into one has none.
        """
        instance_type = (claim.instance_type if claim else "") or (
            node.labels.get(wk.INSTANCE_TYPE, "") if node else ""
        )
        zone = (claim.zone if claim else "") or (node.labels.get(wk.ZONE, "") if node else "")
        capacity_type = (claim.capacity_type if claim else "") or (
            node.labels.get(wk.CAPACITY_TYPE, "") if node else ""
        )
        if reserved and capacity_type != "reserved":
            return
        if instance_type and zone:
            offering = ("reserved" if reserved else "spot", instance_type, zone)
            self.offering_blocks.block_offerings([offering], self.clock.now() + self.options.offering_block)
            steps.append(f"blocked {'/'.join(offering)}")

    def _claim_of(self, instance_id: str, node: Node | None) -> NodeClaim | None:
        for claim in self.claim_records.claims():
            if claim.instance_id == instance_id or (node is not None and claim.name == node.nodeclaim):
                return claim
        return None

    def _pool(self, name: str) -> NodePool | None:
        if not name:
            return None
        pools, _ = self.config.load()
        return next((p for p in pools if p.name == name), None)


def _interruption_event(node: str, message: Message, why: str) -> Event:
    """The node's Event for a message about its instance: the reason Karpenter's AWS provider
    gives it (a capacity reservation's is Nodewright's own), and what Nodewright does about it.
    """
    if message.kind == SPOT_INTERRUPTION:
        reason, note = SPOT_INTERRUPTED, "Spot interruption warning was triggered"
    elif message.kind == REBALANCE:
        reason, note = SPOT_REBALANCE, "Spot rebalance recommendation was triggered"
    elif message.kind == SCHEDULED_CHANGE:
        reason, note = INSTANCE_UNHEALTHY, f"An AWS Health event was triggered for the instance ({message.code})"
    elif message.kind == CAPACITY_RESERVATION:
        reason, note = CAPACITY_RESERVATION_INTERRUPTED, "Capacity reservation interruption warning was triggered"
    elif message.state in ("stopping", "stopped"):
        reason, note = INSTANCE_STOPPING, "Instance is stopping"
    else:
        reason, note = INSTANCE_TERMINATING, "Instance is terminating"
    return interrupted(node, reason, f"{note}: {why}", "Interrupt")


def _chain(cont: Continuation) -> str:
    """The key of the drain chain `cont` belongs to."""
    return _drain_record(cont, 0.0).chain


def _drain_record(cont: Continuation, expires: float) -> DrainRecord:
    """The state-table record that admits `cont` (every field but the attempt counter)."""
    return DrainRecord(
        instance_id=cont.instance_id,
        node=cont.node,
        drain=cont.drain,
        deadline=cont.deadline,
        started=cont.started,
        origin=cont.origin,
        replace_by=cont.replace_by,
        expires=expires,
        verified=cont.verified,
    )
