"""Taints and tolerations, with Kubernetes' matching rules. Pure.

A toleration with an empty key and operator Exists tolerates every taint; an empty effect matches
every effect. PreferNoSchedule taints never block placement.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from nodewright.model.errors import InvalidValue

EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
BLOCKING = frozenset({"NoSchedule", "NoExecute"})


@dataclass(frozen=True, slots=True)
class Taint:
    """A node taint: pods that do not tolerate it are kept off (NoSchedule) or evicted (NoExecute)."""

    key: str
    effect: str
    value: str = ""

    @classmethod
    def parse(cls, manifest: Mapping[str, Any]) -> Taint:
        """Build from a Kubernetes taint manifest; raise InvalidValue on a bad effect or key."""
        key = manifest.get("key")
        if not isinstance(key, str) or not key:
            raise InvalidValue("key: a taint needs a non-empty key")
        effect = manifest.get("effect")
        if effect not in EFFECTS:
            raise InvalidValue(f"effect: {effect!r} is not one of {', '.join(EFFECTS)}")
        return cls(key, str(effect), str(manifest.get("value") or ""))

    def to_manifest(self) -> dict[str, str]:
        """The Kubernetes form."""
        out = {"key": self.key, "effect": self.effect}
        if self.value:
            out["value"] = self.value
        return out

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"


@dataclass(frozen=True, slots=True)
class Toleration:
    """A pod toleration (operator Equal or Exists; empty key with Exists matches all keys)."""

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None

    @classmethod
    def parse(cls, manifest: Mapping[str, Any]) -> Toleration:
        """Build from a Kubernetes toleration manifest; raise InvalidValue on a bad operator."""
        operator = manifest.get("operator") or "Equal"
        if operator not in ("Equal", "Exists"):
            raise InvalidValue(f"operator: {operator!r} is not one of Equal, Exists")
        effect = manifest.get("effect") or ""
        if effect and effect not in EFFECTS:
            raise InvalidValue(f"effect: {effect!r} is not one of {', '.join(EFFECTS)}")
        key = str(manifest.get("key") or "")
        if not key and operator != "Exists":
            raise InvalidValue("key: an empty key needs operator Exists")
        seconds = manifest.get("tolerationSeconds")
        return cls(key, operator, str(manifest.get("value") or ""), effect, None if seconds is None else int(seconds))

    def tolerates(self, taint: Taint) -> bool:
        """True when this toleration matches `taint` (Kubernetes' ToleratesTaint)."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return self.value == taint.value


def untolerated(tolerations: Iterable[Toleration], taints: Iterable[Taint]) -> list[Taint]:
    """The blocking taints (NoSchedule, NoExecute) that no toleration matches."""
    tols = tuple(tolerations)
    return [t for t in taints if t.effect in BLOCKING and not any(tol.tolerates(t) for tol in tols)]


def tolerates_all(tolerations: Iterable[Toleration], taints: Iterable[Taint]) -> bool:
    """True when every blocking taint is tolerated."""
    return not untolerated(tolerations, taints)
