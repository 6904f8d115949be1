"""Node selector requirements and their algebra: intersection and compatibility.

Role: the one representation of "which label values may a node have" shared by NodePools,
instance types, node claims, pod nodeSelector and node affinity. Pure.

Theory of operation (as in Karpenter): a Requirement is a set of allowed values for one label
key, stored either as the values themselves (`complement=False`) or as the values excluded from
"everything" (`complement=True`), plus optional integer bounds.

    In [a b]      -> {a, b}                 DoesNotExist -> {} (no value; the label is absent)
    NotIn [a]     -> everything but {a}     Exists       -> everything
    Gt 4 / Gte 5  -> everything > 4         Lt 8 / Lte 7 -> everything < 8

Intersection is set intersection on that representation. Two requirement sets are compatible
when, for every key they share, some value survives the intersection, except that two
requirements both satisfied by the label's absence (NotIn, DoesNotExist) are compatible too. A key
only the incoming side names must be well known (the instance type decides it) or allow absence.
"""

from __future__ import annotations

import sys
from collections.abc import ItemsView, Iterable, Iterator, KeysView, Mapping, ValuesView
from dataclasses import dataclass
from typing import Any, TypeVar, overload

from nodewright.model.errors import InvalidValue
from nodewright.model.labels import WELL_KNOWN, canonical

OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte")
_UNBOUNDED = sys.maxsize
_T = TypeVar("_T")


def _as_int(value: str) -> int | None:
    try:
        return int(value)
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class Requirement:
    """The allowed values of one label key. Build with `Requirement.new(key, operator, values)`."""

    key: str
    complement: bool
    values: frozenset[str]
    greater_than: int | None = None
    less_than: int | None = None
    min_values: int | None = None

    @classmethod
    def new(
        cls,
        key: str,
        operator: str,
        values: Iterable[str] = (),
        min_values: int | None = None,
    ) -> Requirement:
        """Build from a Kubernetes NodeSelectorRequirement; raise InvalidValue on a bad one.

        A deprecated or driver-specific alias of a well-known key (`labels.NORMALIZED`, e.g.
        `failure-domain.beta.kubernetes.io/zone`) becomes a requirement on the canonical key.
        """
        key = canonical(key)
        vals = [str(v) for v in values]
        if operator == "In":
            return cls(key, False, frozenset(vals), min_values=min_values)
        if operator == "NotIn":
            return cls(key, True, frozenset(vals), min_values=min_values)
        if operator == "Exists":
            return cls(key, True, frozenset(), min_values=min_values)
        if operator == "DoesNotExist":
            return cls(key, False, frozenset(), min_values=min_values)
        if operator in ("Gt", "Lt", "Gte", "Lte"):
            if len(vals) != 1 or _as_int(vals[0]) is None:
                raise InvalidValue(f"operator {operator} needs exactly one integer value, got {vals}")
            bound = int(vals[0])
            if operator == "Gt":
                return cls(key, True, frozenset(), greater_than=bound, min_values=min_values)
            if operator == "Gte":
                return cls(key, True, frozenset(), greater_than=bound - 1, min_values=min_values)
            if operator == "Lt":
                return cls(key, True, frozenset(), less_than=bound, min_values=min_values)
            return cls(key, True, frozenset(), less_than=bound + 1, min_values=min_values)
        raise InvalidValue(f"{operator!r} is not one of {', '.join(OPERATORS)}")

    @property
    def operator(self) -> str:
        """The plain operator this set reads as (In, NotIn, Exists, DoesNotExist)."""
        if self.complement:
            return "NotIn" if self.values else "Exists"
        return "In" if self.values else "DoesNotExist"

    def _within(self, value: str) -> bool:
        if self.greater_than is None and self.less_than is None:
            return True
        number = _as_int(value)
        if number is None:
            return False
        if self.greater_than is not None and number <= self.greater_than:
            return False
        return self.less_than is None or number < self.less_than

    def has(self, value: str) -> bool:
        """True when a node labelled `key=value` satisfies this requirement."""
        if self.complement:
            return value not in self.values and self._within(value)
        return value in self.values and self._within(value)

    def allows_absent(self) -> bool:
        """True when a node without this label satisfies it (NotIn and DoesNotExist)."""
        return self.operator in ("NotIn", "DoesNotExist") and self.greater_than is None and self.less_than is None

    def __len__(self) -> int:
        if self.complement:
            return _UNBOUNDED - len(self.values)
        return len(self.values)

    def is_empty(self) -> bool:
        """True when no label value satisfies this requirement."""
        return len(self) == 0

    def intersection(self, other: Requirement) -> Requirement:
        """The values both requirements allow (same key)."""
        greater = _max_opt(self.greater_than, other.greater_than)
        less = _min_opt(self.less_than, other.less_than)
        min_values = _max_opt(self.min_values, other.min_values)
        if greater is not None and less is not None and greater + 1 >= less:
            return Requirement(self.key, False, frozenset(), min_values=min_values)
        complement = self.complement and other.complement
        if self.complement and other.complement:
            values = self.values | other.values
        elif self.complement:
            values = other.values - self.values
        elif other.complement:
            values = self.values - other.values
        else:
            values = self.values & other.values
        if greater is not None or less is not None:
            bounded = Requirement(self.key, True, frozenset(), greater, less)
            values = frozenset(v for v in values if bounded._within(v))
        if not complement:
            greater = less = None
        return Requirement(self.key, complement, values, greater, less, min_values)

    def any_value(self) -> str | None:
        """A value that satisfies the requirement, preferring the smallest, or None."""
        if not self.complement:
            return min(self.values) if self.values else None
        return None

    def to_manifest(self) -> dict[str, Any]:
        """The Kubernetes NodeSelectorRequirement form."""
        out: dict[str, Any]
        if self.greater_than is not None or self.less_than is not None:
            # Bounded sets print as the single bound they carry (both only after intersection).
            if self.greater_than is not None:
                out = {"key": self.key, "operator": "Gt", "values": [str(self.greater_than)]}
            else:
                out = {"key": self.key, "operator": "Lt", "values": [str(self.less_than)]}
        else:
            out = {"key": self.key, "operator": self.operator}
            if self.values:
                out["values"] = sorted(self.values)
        if self.min_values is not None:
            out["minValues"] = self.min_values
        return out

    def to_manifests(self) -> list[dict[str, Any]]:
        """The NodeSelectorRequirements that say this set exactly: one, or after an intersection
        up to three (Gt, Lt and the NotIn exclusions), which `Requirements.parse` intersects back.
        """
        bounds = [(op, bound) for op, bound in (("Gt", self.greater_than), ("Lt", self.less_than)) if bound is not None]
        if not bounds or (len(bounds) == 1 and not self.values):
            return [self.to_manifest()]
        out: list[dict[str, Any]] = [{"key": self.key, "operator": op, "values": [str(b)]} for op, b in bounds]
        # Bounded sets are always complements (intersection drops bounds otherwise).
        if self.values:
            out.append({"key": self.key, "operator": "NotIn", "values": sorted(self.values)})
        if self.min_values is not None:
            out[0]["minValues"] = self.min_values
        return out

    def __str__(self) -> str:
        manifest = self.to_manifest()
        values = manifest.get("values")
        return f"{self.key} {manifest['operator']}" + (f" {values}" if values else "")


def _max_opt(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


def _min_opt(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


class Requirements(Mapping[str, Requirement]):
    """Requirements keyed by label key; adding one for a key already present intersects them."""

    __slots__ = ("_by_key", "_hash")

    def __init__(self, requirements: Iterable[Requirement] = ()) -> None:
        by_key: dict[str, Requirement] = {}
        for req in requirements:
            existing = by_key.get(req.key)
            by_key[req.key] = req if existing is None else existing.intersection(req)
        self._by_key = by_key
        self._hash: int | None = None

    @classmethod
    def from_labels(cls, labels: Mapping[str, str]) -> Requirements:
        """One `In [value]` requirement per label, as a node's labels read (aliases of
        well-known keys read as their canonical key, as in `Requirement.new`).
        """
        return cls(Requirement(canonical(k), False, frozenset((v,))) for k, v in labels.items())

    @classmethod
    def parse(cls, terms: Iterable[Mapping[str, Any]] | None) -> Requirements:
        """Build from a list of NodeSelectorRequirement manifests (key, operator, values, minValues)."""
        return cls(
            Requirement.new(t["key"], t["operator"], t.get("values") or (), t.get("minValues")) for t in (terms or ())
        )

    def __getitem__(self, key: str) -> Requirement:
        return self._by_key[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_key)

    def __len__(self) -> int:
        return len(self._by_key)

    def __contains__(self, key: object) -> bool:
        return key in self._by_key

    # Mapping's generic get(), items(), values() and keys() go through __getitem__ and a view
    # object; these are on the solver's hot path. Same answers, read from the dict directly.
    @overload
    def get(self, key: str, /) -> Requirement | None: ...
    @overload
    def get(self, key: str, default: Requirement | _T, /) -> Requirement | _T: ...
    def get(self, key: str, default: object = None, /) -> object:
        """The requirement for `key`, or `default` when none is set."""
        return self._by_key.get(key, default)

    def items(self) -> ItemsView[str, Requirement]:
        """(key, requirement) pairs."""
        return self._by_key.items()

    def by_key(self) -> Mapping[str, Requirement]:
        """The requirements by label key, read-only: its `get` is the dict's own, for callers
        that look up several keys per call on a hot path (`Offering.allowed_by`).
        """
        return self._by_key

    def values(self) -> ValuesView[Requirement]:
        """The requirements."""
        return self._by_key.values()

    def keys(self) -> KeysView[str]:
        """The label keys."""
        return self._by_key.keys()

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._by_key.values()))
        return self._hash

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Requirements):
            return self._by_key == other._by_key
        return NotImplemented

    def __repr__(self) -> str:
        return "Requirements(" + "; ".join(str(r) for r in self._by_key.values()) + ")"

    def get_or_exists(self, key: str) -> Requirement:
        """The requirement for `key`, or Exists when none is set."""
        # Not `get(key) or ...`: an empty requirement (DoesNotExist) has len 0 and is falsy.
        found = self._by_key.get(key)
        return Requirement(key, True, frozenset()) if found is None else found

    def intersection(self, other: Requirements) -> Requirements:
        """All requirements of both, intersected key by key."""
        if not other:
            return self
        if not self:
            return other
        return Requirements([*self._by_key.values(), *other._by_key.values()])

    def conflicts(self, incoming: Requirements, allow_undefined: frozenset[str] = WELL_KNOWN) -> list[str]:
        """Why `incoming` (a pod's) cannot be met by nodes with these requirements; [] if it can.

        Keys only `incoming` names are denied unless well known (the instance type decides them)
        or satisfied by the label's absence.
        """
        found = (self._conflict(theirs, allow_undefined) for theirs in incoming._by_key.values())
        return [problem for problem in found if problem is not None]

    def compatible(self, incoming: Requirements, allow_undefined: frozenset[str] = WELL_KNOWN) -> bool:
        """True when `conflicts` finds nothing (stops at the first conflict)."""
        return all(self._conflict(theirs, allow_undefined) is None for theirs in incoming._by_key.values())

    def intersects(self, other: Requirements) -> bool:
        """True when every key both sides name leaves some value (or both allow absence).

        Unlike `compatible`, keys only one side names are ignored: this is how an instance
        type's labels are checked against a NodePool's or a claim's requirements.
        """
        small, large = (self, other) if len(self) <= len(other) else (other, self)
        for key, req in small._by_key.items():
            theirs = large._by_key.get(key)
            if theirs is not None and self._conflict_pair(req, theirs):
                return False
        return True

    @staticmethod
    def _conflict_pair(mine: Requirement, theirs: Requirement) -> bool:
        if (
            mine.greater_than is None
            and mine.less_than is None
            and theirs.greater_than is None
            and theirs.less_than is None
        ):
            # Without numeric bounds, whether the intersection is empty is a set question; asked
            # without building it (every fit check and offering filter asks it).
            if mine.complement:
                overlap = theirs.complement or not theirs.values <= mine.values
            elif theirs.complement:
                overlap = not mine.values <= theirs.values
            else:
                overlap = not mine.values.isdisjoint(theirs.values)
            if overlap:
                return False
        elif not mine.intersection(theirs).is_empty():
            return False
        absent_ok = ("NotIn", "DoesNotExist")
        return not (theirs.operator in absent_ok and mine.operator in absent_ok)

    def _conflict(self, theirs: Requirement, allow_undefined: frozenset[str]) -> str | None:
        mine = self._by_key.get(theirs.key)
        if mine is None:
            if theirs.key in allow_undefined or theirs.allows_absent():
                return None
            return f"label {theirs.key!r} is not set by the NodePool"
        if not self._conflict_pair(mine, theirs):
            return None
        return f"{theirs} does not match {mine}"

    def labels(self) -> dict[str, str]:
        """The labels a node satisfying these requirements is given: each single-valued key."""
        out: dict[str, str] = {}
        for key, req in self._by_key.items():
            if not req.complement and len(req.values) == 1:
                out[key] = next(iter(req.values))
        return out

    def to_manifest(self) -> list[dict[str, Any]]:
        """The Kubernetes list form, sorted by key."""
        return [m for k in sorted(self._by_key) for m in self._by_key[k].to_manifests()]


def label_matches(requirements: Requirements, labels: Mapping[str, str]) -> bool:
    """True when a node with exactly `labels` satisfies every requirement."""
    for key, req in requirements.items():
        value = labels.get(key)
        if value is None:
            if not req.allows_absent():
                return False
        elif not req.has(value):
            return False
    return True
