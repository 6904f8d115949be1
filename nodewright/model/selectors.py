"""Label selectors (matchLabels + matchExpressions) as used by pod affinity, spread and PDBs. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nodewright.model.errors import InvalidValue

_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


@dataclass(frozen=True, slots=True)
class Expression:
    """One matchExpressions entry."""

    key: str
    operator: str
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """True when `labels` satisfy this expression."""
        if self.operator == "In":
            return labels.get(self.key) in self.values
        if self.operator == "NotIn":
            return labels.get(self.key) not in self.values
        if self.operator == "Exists":
            return self.key in labels
        return self.key not in labels


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A Kubernetes label selector. The empty selector matches everything; `None` selectors
    (absent in the manifest) are represented by the caller as no selector at all.
    """

    match_labels: tuple[tuple[str, str], ...] = ()
    expressions: tuple[Expression, ...] = ()

    @classmethod
    def nothing(cls) -> LabelSelector:
        """The selector that matches no labels: what a null selector means where Kubernetes says
        so (a PodDisruptionBudget without `spec.selector` covers no pod).
        """
        return cls((), (Expression("", "In", frozenset()),))

    @classmethod
    def parse(cls, manifest: Mapping[str, Any] | None) -> LabelSelector:
        """Build from a manifest; raise InvalidValue on an unknown operator."""
        if not manifest:
            return cls()
        labels = tuple(sorted((str(k), str(v)) for k, v in (manifest.get("matchLabels") or {}).items()))
        exprs = []
        for index, expr in enumerate(manifest.get("matchExpressions") or ()):
            operator = expr.get("operator")
            if operator not in _SELECTOR_OPERATORS:
                raise InvalidValue(
                    f"matchExpressions[{index}].operator: {operator!r} is not one of {', '.join(_SELECTOR_OPERATORS)}"
                )
            exprs.append(Expression(str(expr["key"]), operator, frozenset(str(v) for v in expr.get("values") or ())))
        return cls(labels, tuple(exprs))

    def matches(self, labels: Mapping[str, str]) -> bool:
        """True when `labels` satisfy every matchLabels pair and expression."""
        for key, value in self.match_labels:
            if labels.get(key) != value:
                return False
        return all(e.matches(labels) for e in self.expressions)

    def to_manifest(self) -> dict[str, Any]:
        """The Kubernetes form."""
        out: dict[str, Any] = {}
        if self.match_labels:
            out["matchLabels"] = dict(self.match_labels)
        if self.expressions:
            out["matchExpressions"] = [
                {"key": e.key, "operator": e.operator, **({"values": sorted(e.values)} if e.values else {})}
                for e in self.expressions
            ]
        return out
