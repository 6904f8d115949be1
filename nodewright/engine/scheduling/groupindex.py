"""An index of topology groups by the labels their selectors require. Pure.

Role: `Topology` asks, for every pod it records and every class it checks, which of its groups
select that pod. Scanning every group makes a pass quadratic when each workload brings its own
term (10,000 pods, each with its own required anti-affinity: 10,000 groups scanned 10,000 times).
A selector that requires a label value (a matchLabels pair, or an `In` expression) can only select
pods carrying one of those values, so `GroupIndex` files each group under those (key, value)
pairs and looks up only the buckets of the pod's own labels, plus the few groups whose selector
requires no value (empty selector, only NotIn/Exists/DoesNotExist). Every candidate is still checked
with `Group.selects`, so the answer is exactly the scan's; only the work changes, from the number
of groups to the number of groups that could match.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Generic, Protocol, TypeVar

from nodewright.model.selectors import LabelSelector


class _Selecting(Protocol):
    """What the index needs of a group: its selector, and the exact check."""

    @property
    def selector(self) -> LabelSelector: ...

    def selects(self, namespace: str, labels: Mapping[str, str]) -> bool: ...


G = TypeVar("G", bound=_Selecting)


def required_values(selector: LabelSelector) -> list[tuple[str, str]]:
    """The (key, value) pairs one of which a pod must carry for `selector` to select it: its first
    matchLabels pair, else the values of its first `In` expression; empty when it requires no value.
    """
    if selector.match_labels:
        return [selector.match_labels[0]]
    for expr in selector.expressions:
        if expr.operator == "In":
            return [(expr.key, v) for v in sorted(expr.values)]
    return []


class GroupIndex(Generic[G]):
    """Groups filed by a label value their selector requires (see the module docstring).

    Insertion order is kept in `all()` and in each answer (first insertion wins), so callers that
    iterate see the same order a plain list would give.
    """

    def __init__(self) -> None:
        self._order: dict[G, int] = {}
        self._by_value: dict[tuple[str, str], list[G]] = {}
        self._unfiled: list[G] = []

    def __contains__(self, group: object) -> bool:
        return group in self._order

    def __len__(self) -> int:
        return len(self._order)

    def __iter__(self) -> Iterator[G]:
        return iter(self._order)

    def add(self, group: G) -> bool:
        """File `group` under its selector's `required_values`; False when it is already in."""
        if group in self._order:
            return False
        self._order[group] = len(self._order)
        values = required_values(group.selector)
        if not values:
            self._unfiled.append(group)
        for value in values:
            self._by_value.setdefault(value, []).append(group)
        return True

    def selecting(self, namespace: str, labels: Mapping[str, str]) -> list[G]:
        """The groups that select a pod in `namespace` with `labels`, in insertion order."""
        found: dict[G, None] = {}
        for group in self._unfiled:
            if group.selects(namespace, labels):
                found[group] = None
        for pair in labels.items():
            for group in self._by_value.get(pair, ()):
                if group not in found and group.selects(namespace, labels):
                    found[group] = None
        order = self._order
        return sorted(found, key=order.__getitem__)
