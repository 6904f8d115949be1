"""DaemonSets and PodDisruptionBudgets: the workload objects scheduling and draining consult. Pure."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from nodewright.model.pod import Pod
from nodewright.model.selectors import LabelSelector


@dataclass(frozen=True, slots=True)
class DaemonSet:
    """A DaemonSet: its pod template decides the per-node overhead on nodes it would run on."""

    namespace: str
    name: str
    template: Pod

    @classmethod
    def parse(cls, manifest: Mapping[str, Any]) -> DaemonSet:
        """Build from a DaemonSet manifest; the template becomes a Pod owned by it."""
        meta = manifest.get("metadata") or {}
        namespace = str(meta.get("namespace") or "default")
        name = str(meta.get("name") or "")
        template = dict((manifest.get("spec") or {}).get("template") or {})
        template_meta = dict(template.get("metadata") or {})
        template_meta.update(
            namespace=namespace,
            name=f"{name}-template",
            ownerReferences=[{"kind": "DaemonSet", "name": name, "controller": True}],
        )
        template["metadata"] = template_meta
        return cls(namespace, name, Pod.parse(template))


@dataclass(frozen=True, slots=True)
class PodDisruptionBudget:
    """A PDB: how many of the pods it selects may be voluntarily disrupted at once."""

    namespace: str
    name: str
    selector: LabelSelector
    min_available: int | str | None = None
    max_unavailable: int | str | None = None
    # What the API server computed, when read from a live cluster; None when unknown.
    disruptions_allowed: int | None = None

    @classmethod
    def parse(cls, manifest: Mapping[str, Any]) -> PodDisruptionBudget:
        """Build from a PDB manifest or API JSON."""
        meta = manifest.get("metadata") or {}
        spec = manifest.get("spec") or {}
        status = manifest.get("status") or {}
        allowed = status.get("disruptionsAllowed")
        return cls(
            namespace=str(meta.get("namespace") or "default"),
            name=str(meta.get("name") or ""),
            # policy/v1: a null selector selects no pods, an empty one every pod of the namespace.
            selector=LabelSelector.nothing() if spec.get("selector") is None else LabelSelector.parse(spec["selector"]),
            min_available=spec.get("minAvailable"),
            max_unavailable=spec.get("maxUnavailable"),
            disruptions_allowed=None if allowed is None else int(allowed),
        )

    def selects(self, pod: Pod) -> bool:
        """True when this budget covers `pod`."""
        return pod.namespace == self.namespace and self.selector.matches(pod.labels)

    def allowed(self, healthy: int, expected: int) -> int:
        """Disruptions allowed now, given `healthy` running pods out of `expected` (as the
        disruption controller computes it; percentages round up for minAvailable and maxUnavailable).
        """
        if self.max_unavailable is not None:
            # The disruption controller wants max(0, expected - maxUnavailable) healthy pods.
            desired = max(0, expected - _scaled(self.max_unavailable, expected))
            return max(0, healthy - desired)
        if self.min_available is not None:
            return max(0, healthy - _scaled(self.min_available, expected))
        return max(0, healthy - expected)


def _scaled(value: int | str, total: int) -> int:
    if isinstance(value, str) and value.endswith("%"):
        return math.ceil(total * int(value[:-1]) / 100)
    return int(value)


def covering(budgets: Iterable[PodDisruptionBudget], pod: Pod) -> list[PodDisruptionBudget]:
    """The budgets that select `pod`."""
    return [b for b in budgets if b.selects(pod)]
