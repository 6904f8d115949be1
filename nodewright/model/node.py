"""Kubernetes nodes as Nodewright sees them, parsed from API JSON. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from nodewright.model import labels as wk
from nodewright.model.errors import InvalidValue
from nodewright.model.pod import parse_timestamp
from nodewright.model.resources import EMPTY, Resources
from nodewright.model.taints import Taint

# Disrupted-taint values whose pods the provisioner leaves alone (see Node.draining).
_KEEPS_ITS_PODS_PLANNED = frozenset({wk.DISRUPTED_CORDON_ONLY, wk.DISRUPTED_CONSOLIDATION})
READY = "Ready"
# A Ready condition that changed this long after the node registered is not the registration's.
REGISTRATION_GRACE = 60.0


@dataclass(frozen=True, slots=True)
class NodeCondition:
    """One entry of a node's `status.conditions`: its type ("Ready", or a node monitoring agent's
    such as "KernelReady"), status ("True", "False" or "Unknown"), `since` (lastTransitionTime,
    epoch seconds; 0.0 when unknown) and reason. Node repair reads how long a status has held.
    """

    type: str
    status: str
    since: float = 0.0
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Node:
    """A node: its labels, taints, allocatable resources and lifecycle state."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    capacity: Resources = EMPTY
    allocatable: Resources = EMPTY
    provider_id: str = ""
    unschedulable: bool = False
    ready: bool = False
    created_at: float = 0.0
    deleting: bool = False
    # The conditions whose transition time is known. A Ready entry, when present, agrees with
    # `ready`; a node built without one has only `ready` (see `condition`).
    conditions: tuple[NodeCondition, ...] = ()
    # metadata.uid as the API server set it ("" for a node built in memory): Events about the
    # node carry it, because `kubectl describe node` selects Events by uid too.
    uid: str = ""

    def condition(self, kind: str) -> NodeCondition | None:
        """The condition of type `kind`; Ready is always known (from `ready`, time unknown when
        no Ready entry was recorded); other types None when the node does not report them.
        """
        for c in self.conditions:
            if c.type == kind:
                return c
        if kind == READY:
            return NodeCondition(READY, "True" if self.ready else "False")
        return None

    @property
    def failed(self) -> bool:
        """True when the node stopped being Ready after it came up: not Ready, and its Ready
        condition last changed more than `REGISTRATION_GRACE` after the node registered (a node
        still registering went NotReady at its creation). Its room is not capacity: pods are not
        placed there, whatever the node lifecycle's taints, which count only while a node starts.
        """
        ready = self.condition(READY)
        return not self.ready and ready is not None and ready.since > self.created_at + REGISTRATION_GRACE

    @property
    def instance_id(self) -> str:
        """The EC2 instance id from `aws:///us-east-1a/i-0abc...`, or ''."""
        tail = self.provider_id.rsplit("/", 1)[-1]
        return tail if tail.startswith("i-") else ""

    @property
    def nodepool(self) -> str:
        """The NodePool that launched this node ('' when not ours)."""
        return self.labels.get(wk.NW_NODEPOOL) or self.labels.get(wk.NODEPOOL) or ""

    @property
    def launched_by_nodewright(self) -> bool:
        """True when the node carries a label only Nodewright registers its nodes with
        (`nodewright.io/nodepool`, `nodewright.io/nodeclaim`). Karpenter's nodes carry only
        `karpenter.sh/nodepool`: side by side, Nodewright must not take them for its own.
        """
        return bool(self.labels.get(wk.NW_NODEPOOL) or self.labels.get(wk.NW_NODECLAIM))

    @property
    def nodeclaim(self) -> str:
        """The node claim this node registered for ('' when unknown)."""
        return self.labels.get(wk.NW_NODECLAIM, "")

    @property
    def leaving(self) -> bool:
        """True when the node is going away by any route: being deleted, or tainted disrupted
        (by an interruption, a consolidation command or a repair). Wider than `draining`.
        """
        return self.deleting or any(t.key == wk.DISRUPTED_TAINT_KEY for t in self.taints)

    @property
    def draining(self) -> bool:
        """True when the node is going away and its pods need capacity the provisioner must find:
        being deleted, or tainted disrupted by an interruption that asks for replacement.

        Not for a cordon-only taint (the node stays), nor for a consolidation command's taint: the
        consolidator planned where those pods go and launched the replacements itself before
        tainting; a provisioner planning them again launched a second set of nodes. Pods a
        consolidation drain evicts become ordinary pending pods.
        """
        return self.deleting or any(
            t.key == wk.DISRUPTED_TAINT_KEY and t.value not in _KEEPS_ITS_PODS_PLANNED for t in self.taints
        )

    @property
    def do_not_disrupt(self) -> bool:
        """True when the node is annotated do-not-disrupt."""
        return self.annotations.get(wk.DO_NOT_DISRUPT) == "true" or self.annotations.get(wk.NW_DO_NOT_DISRUPT) == "true"

    @classmethod
    def parse(cls, manifest: Mapping[str, Any], *, created_at: float = 0.0) -> Node:
        """Build from a node manifest or API JSON."""
        meta = manifest.get("metadata") or {}
        spec = manifest.get("spec") or {}
        status = manifest.get("status") or {}
        raw = [c for c in status.get("conditions") or () if isinstance(c, Mapping)]
        ready = any(c.get("type") == READY and c.get("status") == "True" for c in raw)
        return cls(
            name=str(meta.get("name") or ""),
            labels=dict(meta.get("labels") or {}),
            annotations=dict(meta.get("annotations") or {}),
            taints=tuple(Taint.parse(t) for t in spec.get("taints") or ()),
            capacity=Resources.parse(status.get("capacity"), where="status.capacity"),
            allocatable=Resources.parse(status.get("allocatable"), where="status.allocatable"),
            provider_id=str(spec.get("providerID") or ""),
            unschedulable=bool(spec.get("unschedulable")),
            ready=ready,
            created_at=created_at,
            deleting=bool(meta.get("deletionTimestamp")),
            conditions=_conditions(raw),
            uid=str(meta.get("uid") or ""),
        )


def _conditions(raw: list[Mapping[str, Any]]) -> tuple[NodeCondition, ...]:
    """The conditions as the model keeps them: Ready only with a lastTransitionTime (without
    one, `ready` says all there is), every other type as reported.
    """
    out: list[NodeCondition] = []
    for index, c in enumerate(raw):
        kind = str(c.get("type") or "")
        try:
            since = parse_timestamp(c.get("lastTransitionTime"))
        except (ValueError, TypeError) as error:
            raise InvalidValue(f"status.conditions[{index}] ({kind}).lastTransitionTime: {error}") from None
        if not kind or (kind == READY and not since):
            continue
        out.append(NodeCondition(kind, str(c.get("status") or "Unknown"), since, str(c.get("reason") or "")))
    return tuple(out)
