"""A fake EC2 that really behaves: the `nodewright.ports.CloudProvider` of tests and `simulate`.

Role: implement `CloudProvider` with the behaviour of the EC2 adapter that controllers rely on,
in the manner of Karpenter's fake cloud provider: it chooses offerings as CreateFleet would,
records every call, has error knobs, and can be reset.

Launch (one CreateFleet `instant` call per claim):
  1. Idempotent per claim name, as the adapter's ClientToken makes it: a second launch of a
     claim returns the instance the first one made (in whatever state it is now), launching
     nothing. Concurrent launches of one claim make one instance.
  2. Allowed offerings: every available offering of `request.options` whose instance type is
     compatible with the claim's requirements and whose zone and capacity type they allow
     (`topology.kubernetes.io/zone`, `karpenter.sh/capacity-type`), minus `request.blocked`.
     Spot offerings pricier than the cheapest allowed on-demand one are dropped, as Karpenter
     does before CreateFleet.
  3. One fleet is one capacity type: the highest in priority reserved > spot > on-demand among
     the allowed offerings. Its offerings are tried cheapest first (ties: instance type name,
     then zone), which is what `lowest-price` does and what `price-capacity-optimized` does when
     capacity is plentiful.
  4. Offerings marked with `insufficient(...)` fail, and the fleet falls back to its next
     override, as CreateFleet does. When every offering of the fleet failed, launch raises
     InsufficientCapacity listing them. It does not fall through to the next capacity type:
     CreateFleet does not either, and the caller's part is to block those offerings and launch
     again (that second launch then picks on-demand when spot is exhausted). No allowed
     offering at all raises InsufficientCapacity with none listed.
  5. The new instance gets id `i-<n>` (n counts from 1), state "pending" (as CreateFleet
     answers; `set_state` moves it on), `launched_at` from the injected clock, the claim and
     NodePool names (its tags), and the offering's price. Then `on_launch(instance)` runs,
     outside the fake's lock, so a simulator can add a node.

`instances()` lists instances that are not terminated, oldest first (launch order on ties).
`terminate()` marks them terminated (they stay visible through `instance(id)`); unknown or gone
ids are fine.

What is observed: `calls`, every port call in order (failed ones too), with the LaunchRequest
or the instance ids. Knobs: `insufficient`/`restore_capacity`, `fail_next`, `add_instance` (an
instance launched outside this fake, e.g. an orphan of a crashed run), `set_state` (AWS
stopping or terminating an instance, unrecorded), `impair` (an EC2 status check failing, which
`instance_statuses` reports for live instances), `mark_spot` (a spot request marked for
interruption, which `instance_facts` reports). `reset()` forgets everything.

Thread-safe: one lock around every port method, for tests that race controllers.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from nodewright.inmemory.clock import VirtualClock
from nodewright.model.instance import Instance, InstanceFacts, InstanceStatus
from nodewright.model.instancetype import OfferingKey
from nodewright.ports import InsufficientCapacity, LaunchError, LaunchRequest

if TYPE_CHECKING:
    from nodewright.ports import Clock, CloudProvider

# The CloudProvider port methods: the only ones recorded in `calls` and open to `fail_next`.
PORT_METHODS = ("launch", "instances", "terminate", "stop", "start", "instance_statuses", "instance_facts")

# Lower launches first (Karpenter's order: reserved capacity is paid for already, spot is cheap).
CAPACITY_PRIORITY = {"reserved": 0, "spot": 1, "on-demand": 2}

ANY = "*"
INSUFFICIENT_REASON = "InsufficientInstanceCapacity"
NO_OFFERING_REASON = "no allowed offering"


class SimulatedCloudError(Exception):
    """The error `fail_next` raises by default for `instances` and `terminate` (an EC2 API failure)."""


@dataclass(frozen=True, slots=True)
class CloudCall:
    """One port call: its method and what it was about (the launch request, or instance ids)."""

    method: str
    request: LaunchRequest | None = None
    instance_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class _Candidate:
    price: float
    instance_type: str
    zone: str
    capacity_type: str

    @property
    def offering(self) -> OfferingKey:
        return (self.capacity_type, self.instance_type, self.zone)


class FakeCloudProvider:
    """An in-memory `nodewright.ports.CloudProvider`; see the module docstring for its behaviour."""

    def __init__(self, clock: Clock | None = None, *, on_launch: Callable[[Instance], None] | None = None) -> None:
        self.clock: Clock = clock if clock is not None else VirtualClock()
        self.on_launch = on_launch
        self.calls: list[CloudCall] = []
        self._lock = threading.RLock()
        self._instances: dict[str, Instance] = {}
        self._by_claim: dict[str, str] = {}
        self._insufficient: set[OfferingKey] = set()
        self._failures: dict[str, list[BaseException]] = {}
        self._ids = itertools.count(1)
        self._impaired: dict[str, InstanceStatus] = {}
        self._spot_status: dict[str, str] = {}

    # ------------------------------------------------------------------ port methods

    def launch(self, request: LaunchRequest) -> Instance:
        """Launch (or, for a claim launched before, return) the claim's instance; see the module
        docstring. Raises InsufficientCapacity when no allowed offering could be fulfilled, and
        whatever `fail_next` injected (LaunchError by default).
        """
        with self._lock:
            self._enter(CloudCall("launch", request=request))
            existing = self._by_claim.get(request.claim.name)
            if existing is not None:
                return self._instances[existing]
            candidates = _fleet(request)
            if not candidates:
                raise InsufficientCapacity((), NO_OFFERING_REASON)
            failed: list[OfferingKey] = []
            for candidate in candidates:
                if self._is_insufficient(candidate.offering):
                    failed.append(candidate.offering)
                    continue
                instance = Instance(
                    instance_id=self._next_id(),
                    instance_type=candidate.instance_type,
                    zone=candidate.zone,
                    capacity_type=candidate.capacity_type,
                    state="pending",
                    launched_at=self.clock.now(),
                    nodeclaim=request.claim.name,
                    nodepool=request.nodepool.name,
                    price=candidate.price,
                )
                self._instances[instance.instance_id] = instance
                self._by_claim[request.claim.name] = instance.instance_id
                break
            else:
                raise InsufficientCapacity(failed, INSUFFICIENT_REASON)
        # Outside the lock: the hook may call back into this fake or take its own locks.
        if self.on_launch is not None:
            self.on_launch(instance)
        return instance

    def instances(self) -> list[Instance]:
        """Instances that are not terminated, oldest first (launch order on ties)."""
        with self._lock:
            self._enter(CloudCall("instances"))
            return sorted((i for i in self._instances.values() if i.state != "terminated"), key=lambda i: i.launched_at)

    def terminate(self, instance_ids: Sequence[str]) -> None:
        """Mark instances terminated; unknown and already terminated ids are fine."""
        with self._lock:
            self._enter(CloudCall("terminate", instance_ids=tuple(instance_ids)))
            for instance_id in instance_ids:
                instance = self._instances.get(instance_id)
                if instance is not None:
                    self._instances[instance_id] = replace(instance, state="terminated")

    def stop(self, instance_ids: Sequence[str]) -> None:
        """Stop live instances (as EC2 settles a stop: at once); unknown, stopped and terminated
        ids are left as they are.
        """
        with self._lock:
            self._enter(CloudCall("stop", instance_ids=tuple(instance_ids)))
            for instance_id in instance_ids:
                instance = self._instances.get(instance_id)
                if instance is not None and instance.state in ("pending", "running"):
                    self._instances[instance_id] = replace(instance, state="stopped")

    def start(self, instance_id: str, offering: OfferingKey) -> None:
        """Start a stopped instance (running at once); InsufficientCapacity naming `offering` while
        `insufficient` covers it; LaunchError for an id that is unknown or terminated.
        """
        with self._lock:
            self._enter(CloudCall("start", instance_ids=(instance_id,)))
            instance = self._instances.get(instance_id)
            if instance is None or not instance.live:
                raise LaunchError(f"StartInstances {instance_id}: no such live instance")
            if instance.state in ("pending", "running"):
                return
            if self._is_insufficient(offering):
                raise InsufficientCapacity([offering], INSUFFICIENT_REASON)
            self._instances[instance_id] = replace(instance, state="running")

    def instance_statuses(self, instance_ids: Sequence[str]) -> list[InstanceStatus]:
        """The impaired statuses `impair` set, for the live instances among `instance_ids`."""
        with self._lock:
            self._enter(CloudCall("instance_statuses", instance_ids=tuple(instance_ids)))
            live = {i for i in instance_ids if i in self._instances and self._instances[i].live}
            return [s for i, s in sorted(self._impaired.items()) if i in live]

    def instance_facts(self, instance_ids: Sequence[str], *, spot_status: bool = False) -> dict[str, InstanceFacts]:
        """What this fake knows of each id: its state, and with `spot_status` for a spot instance
        its request's status (`fulfilled` until `mark_spot`); unknown ids are not `known`.
        """
        with self._lock:
            self._enter(CloudCall("instance_facts", instance_ids=tuple(instance_ids)))
            out: dict[str, InstanceFacts] = {}
            for instance_id in instance_ids:
                instance = self._instances.get(instance_id)
                if instance is None:
                    out[instance_id] = InstanceFacts(instance_id, known=False)
                    continue
                spot = instance.capacity_type == "spot"
                status = self._spot_status.get(instance_id, "fulfilled") if spot and spot_status else ""
                out[instance_id] = InstanceFacts(instance_id, True, instance.state, spot, status)
            return out

    # ------------------------------------------------------------------ knobs

    def impair(self, instance_id: str, checks: Sequence[str] = ("system",), since: float | None = None) -> None:
        """Make the instance's status `checks` impaired since `since` (now by default); no checks
        heals it.
        """
        with self._lock:
            if checks:
                when = self.clock.now() if since is None else since
                self._impaired[instance_id] = InstanceStatus(instance_id, tuple(checks), when)
            else:
                self._impaired.pop(instance_id, None)

    def insufficient(self, capacity_type: str, instance_type: str = ANY, zone: str = ANY) -> None:
        """Make an offering fail with InsufficientInstanceCapacity until `restore_capacity` or
        `reset`; "*" for the instance type or zone matches all (e.g. `insufficient("spot")`).
        """
        with self._lock:
            self._insufficient.add((capacity_type, instance_type, zone))

    def restore_capacity(self, capacity_type: str, instance_type: str = ANY, zone: str = ANY) -> None:
        """Undo one `insufficient(...)` given with the same arguments."""
        with self._lock:
            self._insufficient.discard((capacity_type, instance_type, zone))

    def fail_next(self, method: str, error: BaseException | None = None, *, times: int = 1) -> None:
        """Make the next `times` calls of port method `method` raise `error` without any effect
        (recorded in `calls` all the same). The default is LaunchError for `launch` and
        SimulatedCloudError otherwise. Failures queue up behind earlier ones.
        """
        if method not in PORT_METHODS:
            raise ValueError(f"{method!r} is not one of the CloudProvider port methods {PORT_METHODS}")
        if times < 1:
            raise ValueError(f"times must be at least 1, got {times}")
        if error is None:
            kind = LaunchError if method == "launch" else SimulatedCloudError
            error = kind(f"injected failure in {method}")
        with self._lock:
            self._failures.setdefault(method, []).extend([error] * times)

    def add_instance(self, instance: Instance) -> Instance:
        """Put an instance in the fleet as if launched elsewhere (e.g. by a run that crashed
        before recording its claim). Not recorded in `calls`; `on_launch` is not called.
        Raises ValueError when the id is taken.
        """
        with self._lock:
            if instance.instance_id in self._instances:
                raise ValueError(f"instance {instance.instance_id} already exists")
            self._instances[instance.instance_id] = instance
            if instance.nodeclaim and instance.nodeclaim not in self._by_claim:
                self._by_claim[instance.nodeclaim] = instance.instance_id
            return instance

    def set_state(self, instance_id: str, state: str) -> Instance:
        """Change an instance's state as AWS would (a spot reclaim, a stop); KeyError if unknown."""
        with self._lock:
            instance = replace(self._instances[instance_id], state=state)
            self._instances[instance_id] = instance
            return instance

    def mark_spot(self, instance_id: str, status: str = "marked-for-termination") -> None:
        """Set a spot instance's request status, as EC2 does when it sends the two-minute warning."""
        with self._lock:
            self._spot_status[instance_id] = status

    def reset(self) -> None:
        """Forget everything: instances, idempotency records, ids, calls, knobs."""
        with self._lock:
            self.calls.clear()
            self._instances.clear()
            self._by_claim.clear()
            self._insufficient.clear()
            self._failures.clear()
            self._impaired.clear()
            self._spot_status.clear()
            self._ids = itertools.count(1)

    # ------------------------------------------------------------------ observation

    def instance(self, instance_id: str) -> Instance | None:
        """Any instance this fake knows, terminated ones included, or None."""
        with self._lock:
            return self._instances.get(instance_id)

    def calls_to(self, method: str) -> list[CloudCall]:
        """The recorded calls of one port method, in order."""
        with self._lock:
            return [c for c in self.calls if c.method == method]

    @property
    def launched(self) -> list[Instance]:
        """Every instance this fake launched or was given, terminated ones included, in order."""
        with self._lock:
            return list(self._instances.values())

    # ------------------------------------------------------------------ internals

    def _enter(self, call: CloudCall) -> None:
        self.calls.append(call)
        queued = self._failures.get(call.method)
        if queued:
            error = queued.pop(0)
            if not queued:
                del self._failures[call.method]
            raise error

    def _is_insufficient(self, offering: OfferingKey) -> bool:
        capacity_type, instance_type, zone = offering
        return any((capacity_type, it, z) in self._insufficient for it in (instance_type, ANY) for z in (zone, ANY))

    def _next_id(self) -> str:
        while True:
            instance_id = f"i-{next(self._ids)}"
            if instance_id not in self._instances:
                return instance_id


def _fleet(request: LaunchRequest) -> list[_Candidate]:
    """The offerings one CreateFleet call for this request would carry, in the order tried."""
    requirements = request.claim.requirements
    allowed: list[_Candidate] = []
    for instance_type in request.options:
        # Keys only one side names are left to the other (e.g. a NodePool's custom labels).
        if not requirements.intersects(instance_type.requirements):
            continue
        for o in instance_type.available_offerings():
            candidate = _Candidate(o.price, instance_type.name, o.zone, o.capacity_type)
            if candidate.offering in request.blocked:
                continue
            if not o.allowed_by(requirements):  # zone, capacity type, reservation labels
                continue
            allowed.append(candidate)
    on_demand = [c.price for c in allowed if c.capacity_type == "on-demand"]
    if on_demand:
        cheapest = min(on_demand)
        allowed = [c for c in allowed if c.capacity_type != "spot" or c.price <= cheapest]
    if not allowed:
        return []
    # Unknown capacity types go last, after on-demand.
    capacity_type = min(
        (c.capacity_type for c in allowed), key=lambda ct: (CAPACITY_PRIORITY.get(ct, len(CAPACITY_PRIORITY)), ct)
    )
    return sorted(
        (c for c in allowed if c.capacity_type == capacity_type), key=lambda c: (c.price, c.instance_type, c.zone)
    )


if TYPE_CHECKING:
    # Static proof that the fake satisfies the port (checked by mypy --strict, never run).
    _cloud: CloudProvider = FakeCloudProvider()


__all__ = [
    "ANY",
    "CAPACITY_PRIORITY",
    "INSUFFICIENT_REASON",
    "NO_OFFERING_REASON",
    "PORT_METHODS",
    "CloudCall",
    "FakeCloudProvider",
    "SimulatedCloudError",
]
