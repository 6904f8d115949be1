"""Kubernetes Events as Nodewright reports them, and the correlator that folds repeats into series.

Pure data and a pure, caller-owned state machine (no clock, no I/O): time is passed in.

An `Event` is one occurrence a controller reports ("this pod was nominated to that claim"). What
reaches the API server is decided by `EventCorrelator.observe`, which follows the events.k8s.io/v1
model of an `EventSeries` and keeps the Event API a small share of what a function asks of the
API server:

  * Occurrences with the same key (the object, type, reason, action and note) are one series.
    The first is a `create` of a new Event. A repeat within the reason's `window` seconds of the
    series' last occurrence only counts (`series.count`, `lastObservedTime` in memory); the count
    is sent as a `patch` when the last write of that series is at least `refresh` seconds old
    (by default the reason's window: 2 minutes for most, 5 for FailedScheduling, 15 for
    Unconsolidatable), so a pod seen pending on every pass costs one create and then one patch
    per window, not one request per pass. The count the API server shows is behind by at most
    that much. A repeat after the window starts a new series (a new Event), as client-go's event
    broadcaster does once a series is finished.
  * Writes are rate-limited per object (a token bucket: `object_burst` writes, then one per
    `object_refill` seconds, as client-go's spam filter per source and object) and per
    invocation (`invocation_budget` writes between two `begin()` calls). A write refused by a
    limit is dropped and counted in `dropped`; a dropped create leaves no series, so the next
    occurrence tries again; a dropped patch keeps its count for the next one.

Reasons are Karpenter's (sigs.k8s.io/karpenter pkg/events, the AWS provider's interruption
events) where one exists, so alerts and habits built on them carry over. One function per kind
of Event (`pod_nominated`, `pod_failed_to_schedule`, `pod_evicted`, `disruption_*`,
`disruption_rejected`, `interrupted`) builds it, so each controller's call site is one line.
`StoredEvent` is an Event as the API server holds it, in both API versions' JSON.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from types import MappingProxyType
from typing import Any

from nodewright.model.blocker import Blocker
from nodewright.model.errors import InvalidValue
from nodewright.model.pod import parse_timestamp

NORMAL = "Normal"
WARNING = "Warning"

# The reporting controller of every Event Nodewright writes (events.k8s.io/v1 reportingController).
REPORTING_CONTROLLER = "nodewright"

# Pods (Karpenter's provisioner and terminator).
NOMINATED = "Nominated"
FAILED_SCHEDULING = "FailedScheduling"
EVICTED = "Evicted"
# Nodes being disrupted (Karpenter's disruption controller).
DISRUPTION_LAUNCHING = "DisruptionLaunching"
DISRUPTION_WAITING_READINESS = "DisruptionWaitingReadiness"
DISRUPTION_TERMINATING = "DisruptionTerminating"
DISRUPTION_BLOCKED = "DisruptionBlocked"
UNCONSOLIDATABLE = "Unconsolidatable"
# Interruption (Karpenter's AWS provider), and one of Nodewright's own for capacity reservations.
SPOT_INTERRUPTED = "SpotInterrupted"
SPOT_REBALANCE = "SpotRebalanceRecommendation"
INSTANCE_STOPPING = "InstanceStopping"
INSTANCE_TERMINATING = "InstanceTerminating"
INSTANCE_UNHEALTHY = "InstanceUnhealthy"
CAPACITY_RESERVATION_INTERRUPTED = "CapacityReservationInterrupted"

# Seconds a repeat still belongs to its series, by reason (Karpenter's dedupe timeouts: 2 minutes
# by default, 5 for FailedScheduling, 15 for Unconsolidatable).
DEFAULT_WINDOW = 120.0
WINDOWS: Mapping[str, float] = MappingProxyType(
    {FAILED_SCHEDULING: 300.0, UNCONSOLIDATABLE: 900.0, DISRUPTION_BLOCKED: 300.0}
)

# The API server refuses a note over 1 KiB (events.k8s.io/v1 validation).
MAX_NOTE = 1024

CREATE = "create"
PATCH = "patch"
# Series and rate-limit buckets a correlator keeps before it first sweeps out finished ones.
_SWEEP_AT = 4096


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """The object an Event regards (events.k8s.io/v1 `regarding`; core/v1 `involvedObject`)."""

    kind: str
    name: str
    namespace: str = ""
    uid: str = ""
    api_version: str = "v1"

    @classmethod
    def pod(cls, key: str, uid: str = "") -> ObjectRef:
        """A pod by its key `namespace/name`; InvalidValue when the key has no namespace."""
        namespace, sep, name = key.partition("/")
        if not sep or not namespace or not name:
            raise InvalidValue(f"pod key {key!r}: expected namespace/name")
        return cls("Pod", name, namespace, uid)

    @classmethod
    def node(cls, name: str) -> ObjectRef:
        """A Node (cluster-scoped)."""
        return cls("Node", name)

    @classmethod
    def nodepool(cls, name: str) -> ObjectRef:
        """A NodePool (cluster-scoped, Nodewright's CRD group)."""
        return cls("NodePool", name, api_version="nodewright.io/v1")

    def to_manifest(self) -> dict[str, str]:
        """The reference as the API serves it (empty fields left out)."""
        out = {"kind": self.kind, "name": self.name, "apiVersion": self.api_version}
        if self.namespace:
            out["namespace"] = self.namespace
        if self.uid:
            out["uid"] = self.uid
        return out

    @classmethod
    def parse(cls, data: object, where: str) -> ObjectRef:
        """Read `to_manifest`'s form; InvalidValue naming `where` when kind or name is missing."""
        if not isinstance(data, dict) or not data.get("kind") or not data.get("name"):
            raise InvalidValue(f"{where}: an object reference needs kind and name, got {data!r}")
        return cls(
            kind=str(data["kind"]),
            name=str(data["name"]),
            namespace=str(data.get("namespace") or ""),
            uid=str(data.get("uid") or ""),
            api_version=str(data.get("apiVersion") or "v1"),
        )


@dataclass(frozen=True, slots=True)
class Event:
    """One occurrence a controller reports: about `regarding`, of `type` (Normal or Warning),
    with Karpenter's `reason`, a human `note` and the `action` taken or failed (events.k8s.io/v1).
    """

    regarding: ObjectRef
    type: str
    reason: str
    note: str
    action: str

    def __post_init__(self) -> None:
        if self.type not in (NORMAL, WARNING):
            raise InvalidValue(f"event {self.reason!r} about {self.regarding.name!r}: type must be Normal or Warning")
        if len(self.note) > MAX_NOTE:
            object.__setattr__(self, "note", self.note[: MAX_NOTE - 3] + "...")

    @property
    def key(self) -> tuple[str, ...]:
        """What makes two occurrences one series."""
        r = self.regarding
        return (r.kind, r.namespace, r.name, r.uid, self.type, self.reason, self.action, self.note)


# The Events controllers report, one function per kind, so each call site is one line. Notes follow
# Karpenter's wording where it has the Event.


def pod_nominated(pod: str, nodeclaim: str = "", node: str = "", uid: str = "") -> Event:
    """The provisioner put the pod on a claim (and its node, once registered), or on a node."""
    where = ", ".join(
        part for part in (f"nodeclaim/{nodeclaim}" if nodeclaim else "", f"node/{node}" if node else "") if part
    )
    return Event(ObjectRef.pod(pod, uid), NORMAL, NOMINATED, f"Pod should schedule on: {where}", "Nominate")


def pod_failed_to_schedule(pod: str, why: str) -> Event:
    """No NodePool can take the pod; `why` holds the solver's reason per NodePool."""
    return Event(ObjectRef.pod(pod), WARNING, FAILED_SCHEDULING, f"Failed to schedule pod, {why}", "Provision")


def pod_evicted(pod: str, by: str, uid: str = "") -> Event:
    """The pod was evicted through the Eviction API by the drain of `by` (a command, a warning)."""
    return Event(ObjectRef.pod(pod, uid), NORMAL, EVICTED, f"Evicted pod: {by}", "Evict")


def node_event(node: str, reason: str, note: str, action: str, kind: str = NORMAL) -> Event:
    """An Event about a Node (disruption, interruption): the reason constants above."""
    return Event(ObjectRef.node(node), kind, reason, note, action)


def disruption_launching(node: str, why: str) -> Event:
    """Replacements of the node are being launched (DisruptionLaunching)."""
    return node_event(node, DISRUPTION_LAUNCHING, f"Launching NodeClaim: {why}", "Launch")


def disruption_waiting_readiness(node: str) -> Event:
    """The node's replacements are not Ready yet (DisruptionWaitingReadiness)."""
    return node_event(node, DISRUPTION_WAITING_READINESS, "Waiting on readiness to continue disruption", "Wait")


def disruption_terminating(node: str, why: str) -> Event:
    """The node is being drained and terminated (DisruptionTerminating)."""
    return node_event(node, DISRUPTION_TERMINATING, f"Disrupting Node: {why}", "Delete")


def disruption_blocked(node: str, why: str) -> Event:
    """A disruption of the node cannot go on now: `why` names the PDB, pod or budget."""
    return node_event(node, DISRUPTION_BLOCKED, why, "Disrupt")


def unconsolidatable(node: str, why: str) -> Event:
    """The node is not a consolidation candidate, and why."""
    return node_event(node, UNCONSOLIDATABLE, why, "Consolidate")


# Reasons about nodes that are not (or not yet, or no longer) the consolidator's to judge: no Event.
_NOT_JUDGED = (
    "not managed by Nodewright",
    "already ",
    "not initialized",
    "not ready",
    "the interruption function",
    "left for a later pass",  # another command was chosen this pass: nothing to explain yet
    # No method considered it (WhenEmpty and not empty, nothing expired or drifted): the steady
    # state of a busy node, which Karpenter does not report either; a search's verdict is reported.
    "no method found a command",
    # Not yet: consolidateAfter has not passed, or a pass just nominated it (the seconds in these
    # change every pass, so each would be a new Event).
    "its pods last changed",
    "a provisioning pass nominated it",
)

# The NodePool's own policy leaves the node out (WhenEmpty and not empty): configuration, not a block.
_BY_POLICY = ("consolidates only empty nodes",)


def disruption_rejected(node: str, why: str, blocker: Blocker | None = None) -> Event | None:
    """The Event for a node a disruption pass left alone, from the pass's result: DisruptionBlocked
    when the engine names a `blocker` (a do-not-disrupt pod or annotation, a PodDisruptionBudget,
    the NodePool's budgets, a stalled drain: `DisruptionResult.blockers`), Unconsolidatable
    otherwise, with the reason text `why` as the note; None for a node that is not the
    consolidator's to judge (another autoscaler's, not initialized or ready, already being
    disrupted or deleted, cordoned by the interruption function), only waits for a later pass,
    is left out by its NodePool's policy or by no method (a busy node under WhenEmpty), or is not
    due yet (consolidateAfter, a fresh nomination).
    """
    if why.startswith(_NOT_JUDGED) or any(fragment in why for fragment in _BY_POLICY):
        return None
    if blocker is not None:
        return disruption_blocked(node, why)
    return unconsolidatable(node, why)


def interrupted(node: str, reason: str, note: str, action: str) -> Event:
    """An interruption message about the node's instance (SpotInterrupted, InstanceStopping:
    Warning; SpotRebalanceRecommendation: Normal, as Karpenter's AWS provider types them).
    """
    return node_event(node, reason, note, action, NORMAL if reason == SPOT_REBALANCE else WARNING)


@dataclass(frozen=True, slots=True)
class EventWrite:
    """One Event API request the correlator decided: `verb` create (a new Event object `name`,
    first seen at `first`) or patch (its series: `count` occurrences, the last at `last`).
    """

    verb: str
    name: str
    namespace: str
    event: Event
    first: float
    count: int
    last: float


@dataclass(slots=True)
class _Series:
    name: str
    namespace: str
    first: float
    last: float
    count: int
    written_count: int
    written_at: float


@dataclass(slots=True)
class _Bucket:
    tokens: float
    at: float


@dataclass(slots=True)
class EventCorrelator:
    """Folds occurrences into series and rate-limits writes (see the module docstring).

    The caller owns it (one per adapter or in-memory cluster), calls `begin()` at the start of an
    invocation and `observe(event, now)` per occurrence, and sends the write it returns, if any.
    """

    # Seconds between two patches of one series; None: the reason's window.
    refresh: float | None = None
    object_burst: int = 25
    object_refill: float = 300.0
    invocation_budget: int = 100
    # Where Events of cluster-scoped objects are written (kube-apiserver uses "default").
    default_namespace: str = "default"
    dropped: int = 0
    folded: int = 0
    _series: dict[tuple[str, ...], _Series] = field(default_factory=dict)
    _buckets: dict[tuple[str, str, str], _Bucket] = field(default_factory=dict)
    _spent: int = 0
    _series_limit: int = _SWEEP_AT
    _buckets_limit: int = _SWEEP_AT

    def begin(self) -> None:
        """A new invocation: its budget of writes starts full."""
        self._spent = 0

    def observe(self, event: Event, now: float) -> EventWrite | None:
        """The write this occurrence needs now, or None (folded into its series, or dropped)."""
        self._expire(now)
        key = event.key
        series = self._series.get(key)
        if series is not None and now - series.last <= window(event.reason):
            series.count += 1
            series.last = now
            if now - series.written_at < (window(event.reason) if self.refresh is None else self.refresh):
                self.folded += 1
                return None
            if not self._allowed(event.regarding, now):
                return None
            series.written_count, series.written_at = series.count, now
            return EventWrite(PATCH, series.name, series.namespace, event, series.first, series.count, now)
        if not self._allowed(event.regarding, now):
            return None
        namespace = event.regarding.namespace or self.default_namespace
        name = event_name(event, now)
        self._series[key] = _Series(name, namespace, now, now, 1, 1, now)
        return EventWrite(CREATE, name, namespace, event, now, 1, now)

    def forget(self, event: Event) -> None:
        """Drop the series of `event` (its Event object is gone): the next occurrence creates one."""
        self._series.pop(event.key, None)

    def _allowed(self, ref: ObjectRef, now: float) -> bool:
        if self._spent >= self.invocation_budget:
            self.dropped += 1
            return False
        bucket = self._buckets.setdefault((ref.kind, ref.namespace, ref.name), _Bucket(self.object_burst, now))
        bucket.tokens = min(float(self.object_burst), bucket.tokens + (now - bucket.at) / self.object_refill)
        bucket.at = now
        if bucket.tokens < 1:
            self.dropped += 1
            return False
        bucket.tokens -= 1
        self._spent += 1
        return True

    def _expire(self, now: float) -> None:
        # Forget finished series and full buckets, so a long-lived container's memory stays bounded.
        # Swept when a map doubled since its last sweep: amortised O(1) per occurrence even when
        # thousands of series are live at once (10,000 pods failing to schedule).
        if len(self._series) > self._series_limit:
            self._series = {k: s for k, s in self._series.items() if now - s.last <= window(k[5])}
            self._series_limit = max(_SWEEP_AT, 2 * len(self._series))
        if len(self._buckets) > self._buckets_limit:
            self._buckets = {
                k: b
                for k, b in self._buckets.items()
                if b.tokens + (now - b.at) / self.object_refill < self.object_burst
            }
            self._buckets_limit = max(_SWEEP_AT, 2 * len(self._buckets))


def window(reason: str) -> float:
    """Seconds a repeat of `reason` still joins its series."""
    return WINDOWS.get(reason, DEFAULT_WINDOW)


def event_name(event: Event, now: float) -> str:
    """A new Event object's name: the regarded object's name, then when and a digest of the key
    (two series of one object started at the same instant get different names).
    """
    digest = hashlib.sha256("\x00".join(event.key).encode()).hexdigest()[:8]
    return f"{event.regarding.name}.{round(now * 1e6):x}{digest}"[:253]


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """An Event object as the API server holds it (events.k8s.io/v1): what a `create` wrote,
    with the series a later `patch` set (`count` 1 and `last` == `first` while it has none).
    """

    name: str
    namespace: str
    event: Event
    first: float
    count: int = 1
    last: float = 0.0
    reporting_controller: str = REPORTING_CONTROLLER
    reporting_instance: str = ""

    @classmethod
    def written(cls, write: EventWrite, reporting_instance: str) -> StoredEvent:
        """What `write` (a create, or a patch applied to a fresh copy) leaves stored."""
        return cls(
            write.name,
            write.namespace,
            write.event,
            write.first,
            write.count,
            write.last,
            REPORTING_CONTROLLER,
            reporting_instance,
        )

    def to_manifest(self) -> dict[str, Any]:
        """The events.k8s.io/v1 Event (what `kubectl get events.v1.events.k8s.io -o yaml` shows)."""
        manifest: dict[str, Any] = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "eventTime": micro_time(self.first),
            "reportingController": self.reporting_controller,
            "reportingInstance": self.reporting_instance,
            "action": self.event.action,
            "reason": self.event.reason,
            "regarding": self.event.regarding.to_manifest(),
            "note": self.event.note,
            "type": self.event.type,
        }
        if self.count > 1:
            manifest["series"] = {"count": self.count, "lastObservedTime": micro_time(self.last)}
        return manifest

    def to_core_manifest(self) -> dict[str, Any]:
        """The same Event read through core/v1 (what `kubectl describe` lists), converted as the
        API server converts between the two versions.
        """
        manifest: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "involvedObject": self.event.regarding.to_manifest(),
            "reason": self.event.reason,
            "message": self.event.note,
            "type": self.event.type,
            "action": self.event.action,
            "eventTime": micro_time(self.first),
            "reportingComponent": self.reporting_controller,
            "reportingInstance": self.reporting_instance,
        }
        if self.count > 1:
            manifest["series"] = {"count": self.count, "lastObservedTime": micro_time(self.last)}
        return manifest

    @classmethod
    def parse(cls, data: Mapping[str, Any], where: str) -> StoredEvent:
        """Read an events.k8s.io/v1 Event body; InvalidValue naming `where` and the field when a
        required field is missing or malformed (as the API server's validation would answer 422).
        """
        metadata = data.get("metadata") or {}
        name = str(metadata.get("name") or "")
        if not name:
            raise InvalidValue(f"{where}: metadata.name is required")
        for required in ("eventTime", "reportingController", "reportingInstance", "action", "reason", "type"):
            if not data.get(required):
                raise InvalidValue(f"{where}: {required} is required")
        try:
            first = parse_timestamp(data["eventTime"])
            series = data.get("series") or {}
            count = int(series.get("count") or 1)
            last = parse_timestamp(series.get("lastObservedTime")) or first
            event = Event(
                ObjectRef.parse(data.get("regarding"), f"{where}: regarding"),
                str(data["type"]),
                str(data["reason"]),
                str(data.get("note") or ""),
                str(data["action"]),
            )
        except (ValueError, TypeError) as error:
            raise InvalidValue(f"{where}: {error}") from None
        return cls(
            name,
            str(metadata.get("namespace") or ""),
            event,
            first,
            count,
            last,
            str(data["reportingController"]),
            str(data["reportingInstance"]),
        )


def series_patch(write: EventWrite) -> dict[str, Any]:
    """The merge patch that moves a stored Event's series to `write`'s count and time."""
    return {"series": {"count": write.count, "lastObservedTime": micro_time(write.last)}}


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def micro_time(seconds: float) -> str:
    """A metav1.MicroTime: RFC 3339 in UTC, always with six fraction digits."""
    moment = _EPOCH + timedelta(microseconds=round(seconds * 1_000_000))
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
