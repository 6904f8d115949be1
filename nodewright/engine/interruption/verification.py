"""Whether an interruption message is a fact: freshness, ownership and EC2's word, decided. Pure.

Anyone allowed to send to the interruption queue can write a message of any kind, so a message is
a claim, not a fact (design rule 12). Before the controller acts on one for an instance, it asks
this module three questions, in order, and acts on the answer:

1. Is it fresh? (`staleness`) A message older than the queue keeps one (`QUEUE_RETENTION`), or
   dated in the future beyond clock skew, is dropped. A spot or capacity-reservation warning past
   the time it announced is dropped too: what it warned of has happened, and acting on it now
   could only take pods down early (a real one has been followed by its state change).
2. Is the instance Nodewright's? Only the state table says: a claim record naming the instance id
   (`owned_node` checks that a Node is the claim's: its providerID names that instance and, once
   the claim recorded its node, the names agree). Tags and labels are not asked: anyone who can
   tag an instance or label a Node would otherwise steer the functions.
3. Does EC2 agree? (`verdict`, from `InstanceFacts`, read by `nodewright.controllers.verification`
   through `CloudProvider.instance_facts`)

| kind                         | confirmed when EC2 says                 | dropped when EC2 says               |
|------------------------------|-----------------------------------------|-------------------------------------|
| state change `terminated`    | terminated / shutting-down / unknown id | any other state                     |
| state change stopping...     | stopping, stopped, shutting-down, ...   | pending or running                  |
| spot warning                 | spot request `marked-for-*`             | not a spot instance; already gone   |
| rebalance, capacity warnings, Health | (nothing EC2 exposes is read)   | already gone                        |

A confirmed message gets the action its kind calls for (`action_for`). A message EC2 cannot
confirm (facts unknown, no spot request, status not marked) gets the gentlest action of its kind
(`gentle`): the same cordon, replacement request and drain within PodDisruptionBudgets, so a real
event loses no time, but nothing irreversible on its word alone: no Node or claim deleted, no
do-not-disrupt pod evicted, and the instance terminated only once its drain emptied it, never
with pods on it, whatever the announced time (`UNVERIFIED_DRAIN_LIMIT` bounds how long such a
drain goes on). What is dropped is dropped with the reason (`Verdict.reason`) for the decision
record and a metric.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from nodewright.engine.interruption.actions import SPOT_NOTICE, STOPPING_STATES, TERMINATED, Action
from nodewright.engine.interruption.messages import (
    CAPACITY_RESERVATION,
    CONTINUATION,
    SPOT_INTERRUPTION,
    STATE_CHANGE,
    Message,
)
from nodewright.model.instance import InstanceFacts
from nodewright.model.node import Node
from nodewright.model.nodeclaim import NodeClaim

# How long the interruption queue keeps a message (infra.config.QUEUE_RETENTION_SECONDS; a test
# holds the two equal): no message older than this can have come through the queue's own path.
QUEUE_RETENTION = 300.0
# How far in the future an event's time may be (clocks differ a little; EventBridge's does not
# run minutes ahead).
CLOCK_SKEW = 60.0
# How long a drain on an unconfirmed message goes on past its deadline (or its start, when it has
# none) before it stops, leaving the node cordoned: a forged warning must not run a chain forever.
UNVERIFIED_DRAIN_LIMIT = 3600.0
# Spot request status codes that say EC2 is taking the instance (EC2 User Guide, "Spot request
# status": marked-for-termination, -stop, -hibernation; and what follows them).
SPOT_MARKED = (
    "marked-for-termination",
    "marked-for-stop",
    "marked-for-hibernation",
    "instance-terminated-by-price",
    "instance-terminated-no-capacity",
    "instance-terminated-capacity-oversubscribed",
    "instance-terminated-launch-group-constraint",
    "instance-stopped-by-price",
    "instance-stopped-no-capacity",
    "instance-stopped-capacity-oversubscribed",
    "instance-hibernated-no-capacity",
)
# EC2 states in which an instance still runs the node.
UP_STATES = ("pending", "running")
GONE_STATES = ("shutting-down", TERMINATED)

ACT = "act"
GENTLE = "gentle"
DROP = "drop"


@dataclass(frozen=True, slots=True)
class Verdict:
    """What to do with a message for one instance: ACT (its kind's action), GENTLE (`gentle`'s)
    or DROP (nothing); `reason` says why, for the decision record.
    """

    outcome: str
    reason: str

    @property
    def dropped(self) -> bool:
        """True when nothing may be done."""
        return self.outcome == DROP


def staleness(message: Message, now: float, *, retention: float = QUEUE_RETENTION, skew: float = CLOCK_SKEW) -> str:
    """Why `message` is too old (or too new) to act on at `now`; "" when it is fresh.

    Continuations are left to their drain record (they carry a drain, not news).
    """
    if message.kind == CONTINUATION:
        return ""
    if not message.time:
        return "the event has no time: its freshness cannot be told"
    age = now - message.time
    if age > retention:
        return f"sent {age:.0f} s ago, longer than the queue keeps a message ({retention:.0f} s)"
    if age < -skew:
        return f"dated {-age:.0f} s in the future"
    if message.kind in (SPOT_INTERRUPTION, CAPACITY_RESERVATION):
        at = message.action_time or message.time + SPOT_NOTICE
        if now >= at:
            return f"its notice ran out {now - at:.0f} s ago: the interruption it announced is past"
    return ""


def owned_node(node: Node | None, claim: NodeClaim) -> Node | None:
    """`node` when it is the Node of `claim`'s instance, else None: its providerID must name the
    claim's instance, and once the claim has recorded its node, the names must agree (a Node
    anyone created with that providerID is not the claim's).
    """
    if node is None or not claim.instance_id or node.instance_id != claim.instance_id:
        return None
    if claim.node_name and claim.node_name != node.name:
        return None
    return node


def verdict(message: Message, facts: InstanceFacts | None) -> Verdict:
    """The verdict on `message` for one owned instance given what EC2 said (`facts`; None when EC2
    could not be asked): see the module docstring's table.
    """
    kind = message.kind
    if kind == CONTINUATION:
        return Verdict(ACT, "admitted by its drain record")
    if facts is None:
        return Verdict(GENTLE, "EC2 could not be asked: unconfirmed")
    state = facts.state if facts.known else TERMINATED
    if kind == STATE_CHANGE:
        said = message.state
        if said == TERMINATED:
            if state in GONE_STATES:
                return Verdict(ACT, f"EC2 confirms the instance is {state if facts.known else 'gone'}")
            return Verdict(DROP, f"the message says terminated, EC2 says {state}")
        if said in STOPPING_STATES:
            if state in UP_STATES:
                return Verdict(DROP, f"the message says {said}, EC2 says {state}")
            return Verdict(ACT, f"EC2 confirms the instance is {state if facts.known else 'gone'}")
        return Verdict(ACT, f"state {said or '?'} needs nothing")
    if state not in UP_STATES and state not in STOPPING_STATES:
        return Verdict(DROP, f"EC2 says the instance is {state if facts.known else 'gone'} already")
    if kind == SPOT_INTERRUPTION:
        if not facts.spot:
            return Verdict(DROP, "a spot warning for an instance EC2 says is not spot")
        if facts.spot_status in SPOT_MARKED:
            return Verdict(ACT, f"EC2 confirms: spot request {facts.spot_status}")
        why = f"spot request {facts.spot_status}" if facts.spot_status else "EC2 shows no spot request"
        return Verdict(GENTLE, f"unconfirmed ({why})")
    return Verdict(GENTLE, "unconfirmed (EC2 exposes nothing that confirms this kind)")


def gentle(action: Action) -> Action:
    """The gentlest form of `action` (module docstring): same cordon, replacement and drain, no
    deletion, and a drain that never terminates an instance with pods left on it.
    """
    if not action.acts:
        return action
    return replace(action, delete=False, verified=False)


def unverified_drain_over(
    deadline: float, started: float, now: float, *, limit: float = UNVERIFIED_DRAIN_LIMIT
) -> bool:
    """True when an unconfirmed drain that has not emptied its node should stop trying (the node
    stays cordoned, the instance running): `limit` seconds past its deadline, or past its start
    when it has no deadline.
    """
    return now >= (deadline or started) + limit
