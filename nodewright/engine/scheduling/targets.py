"""The target of a new claim: the instance type it aims to fill. Pure.

A claim opened for pods of some size is filled while they fit its *target*: the type that would
serve the pool's remaining demand (the pods not placed yet whose first choice is the pool) most
cheaply if used alone, in whole nodes each holding whole pods of the opening size. Within
TARGET_SLACK of that cost the smallest such type wins: the bill barely moves and an interruption
or a failed launch hits fewer pods. `nodeclaim.py` asks; `Targets` remembers the answers that
depend only on the types, the requirements and the pod size (held by `prepare.PreparedPool`, so
shared across solves that use the same `SolverCache`).
"""

from __future__ import annotations

import contextlib
import math
import operator
from collections.abc import MutableMapping, Sequence
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from nodewright.engine.scheduling.prepare import PoolType

# A new claim's target is chosen again once the demand it was chosen for has shrunk to this share.
TARGET_REFRESH = 0.5
# How much dearer (as a fraction) a smaller target type may be than the most cost-efficient one.
TARGET_SLACK = 0.02

_K = TypeVar("_K")
_V = TypeVar("_V")

# A type that may be a claim's target, with its price for some capacity types and, per resource it
# has, how much of it pods of the opening size can use: [(resource index, usable amount)].
Priced = tuple["PoolType", float, list[tuple[int, int]]]


def priced(fitting: Sequence[PoolType], req: tuple[int, ...], cts: frozenset[str]) -> list[Priced]:
    """The types a claim opened for pods of size `req` in capacity types `cts` may target, among
    `fitting` (types that hold one such pod): the plain ones (no accelerator, not metal) unless
    there are none, offered in one of `cts`; each with its cheapest price there and usable room;
    cheapest first (then by name), as `best_target` relies on.
    """
    plain = [t for t in fitting if not t.exotic]
    out: list[Priced] = []
    ordered = True  # `fitting` comes cheapest first, and usually stays so: then no sort is needed
    last: tuple[float, str] | None = None
    for t in plain or fitting:
        price: float | None = None
        for ct, p in t.prices.items():
            if ct in cts and (price is None or p < price):
                price = p
        if price is None:
            continue
        usable = [(i, (cap // r) * r if r else cap) for i, (cap, r) in enumerate(zip(t.cap, req, strict=True)) if cap]
        out.append((t, price, usable))
        if ordered:
            here = (price, t.it.name)
            ordered = last is None or last <= here
            last = here
    if not ordered:
        out.sort(key=lambda p: (p[1], p[0].it.name))
    return out


def best_target(priced: Sequence[Priced], demand: Sequence[int]) -> PoolType | None:
    """The type a new claim aims to fill among `priced` (cheapest first), for the pool's remaining
    `demand` (at least one pod of the opening size); None when `priced` is empty.
    """
    costs: list[tuple[float, float, PoolType]] = []
    cheapest = math.inf
    for t, price, usable in priced:
        # A type costs at least its price (one node), so once the price is beyond TARGET_SLACK of
        # the cheapest cost so far, neither this type nor any dearer one can be chosen below.
        if price > cheapest * (1 + TARGET_SLACK):
            break
        # Serve the remaining demand with this type alone: whole nodes, each holding whole
        # pods of the size that opens the claim (so a 7.9-cpu node counts as 7 one-cpu pods).
        # `usable` leaves out resources the type lacks: demand for them (other pods' GPUs) is
        # not its to serve.
        worst = 0.0
        for i, room in usable:
            d = demand[i]
            if d > 0:
                worst = max(worst, d / room)
        cost = price * max(1, math.ceil(worst - 1e-9))
        costs.append((cost, price, t))
        cheapest = min(cheapest, cost)
    if not costs:
        return None
    # Within TARGET_SLACK of the cheapest way to serve the demand, prefer the smallest type:
    # the bill barely moves and an interruption or a failed launch hits fewer pods.
    near = [(price, t) for c, price, t in costs if c <= cheapest * (1 + TARGET_SLACK)]
    return min(near, key=lambda n: (n[0], n[1].it.name))[1]


def dominated(types: Sequence[PoolType], cts: frozenset[str]) -> frozenset[int]:
    """The ids of the types of `types` that `best_target` never chooses in capacity types `cts`,
    whatever the pod size and the demand: those for which another type of `types`, of the same
    kind (plain or not) and with the same resources, comes first in the cheapest-first order in
    `cts` (cheaper, or as cheap and first by name) and has at least as much of every resource.

    Such a dominating type holds one pod whenever the dominated one does, serves any demand in
    as few nodes (whole pods of a size fit at least as often), so costs at most as much, and comes
    earlier in the cheapest-first list: it keeps `best_target`'s running cheapest cost and its
    early stop where they were, and wins every tie the dominated type could be in. So `best_target`
    over the others chooses exactly what it chooses over all. A catalog's sizes and generations
    repeat the same shapes at different prices: in the benchmark's 400 types, 303 are dominated.
    """
    rows: list[tuple[float, str, PoolType]] = []
    for t in types:
        price: float | None = None
        for ct, p in t.prices.items():
            if ct in cts and (price is None or p < price):
                price = p
        if price is not None:
            rows.append((price, t.it.name, t))
    rows.sort(key=lambda r: (r[0], r[1]))
    # The capacities of the types not dominated so far (all earlier in the order), by kind and
    # resources held.
    front: dict[tuple[bool, tuple[bool, ...]], list[tuple[int, ...]]] = {}
    out: set[int] = set()
    for _, _, t in rows:
        cap = t.cap
        kind = (t.exotic, tuple([c > 0 for c in cap]))
        members = front.setdefault(kind, [])
        first = cap[0]
        if any(c[0] >= first and all(map(operator.ge, c, cap)) for c in members):
            out.add(id(t))
        else:
            members.append(cap)
    return frozenset(out)


class Candidates:
    """The types some node requirements allow (`types`, cheapest first), with which of them are
    `dominated` per capacity types, remembered: shared by the `Targets` of every pod size over
    the same types. Never changed (but for what it remembers).
    """

    __slots__ = ("_dominated", "types")

    def __init__(self, types: list[PoolType]) -> None:
        self.types = types
        self._dominated: dict[frozenset[str], frozenset[int]] = {}

    def dominated(self, cts: frozenset[str]) -> frozenset[int]:
        """`dominated(self.types, cts)`, remembered."""
        hit = self._dominated.get(cts)
        if hit is None:
            hit = self._dominated[cts] = dominated(self.types, cts)
        return hit


class Targets:
    """For one list of types, node requirements `alt` and pod size `req`: the types `alt` allows
    (`compatible`), those of them one pod fits (`fitting`), the largest capacity among those
    (`peak`, per resource), `priced` per capacity types, and the target `best` chooses for a
    demand; when none fits, the most room any compatible type has per resource (`largest`, for
    the reason, asked again by every pool alike). Shared across solves: never changed (but for
    what it remembers).
    """

    # Targets remembered per capacity types and demand (a pass asks about a few hundred demands).
    MAX_CHOICES = 1024
    __slots__ = ("_candidates", "_chosen", "_front", "_priced", "compatible", "fitting", "largest", "peak", "req")

    def __init__(self, compatible: list[PoolType], req: tuple[int, ...], candidates: Candidates | None = None) -> None:
        """`candidates`: the same types as `compatible`, shared with the `Targets` of other sizes."""
        self.req = req
        self.compatible = compatible
        self._candidates = candidates if candidates is not None else Candidates(compatible)
        self._front: dict[frozenset[str], list[Priced]] = {}
        ge = operator.ge  # compared in C (`map`): every type, for each pod size a pass meets
        self.fitting = [t for t in compatible if all(map(ge, t.cap, req))]
        self.peak = [max(t.capacity[i] for t in self.fitting) for i in range(len(req))] if self.fitting else []
        self.largest = (
            [max(t.cap[i] for t in compatible) for i in range(len(req))] if compatible and not self.fitting else []
        )
        self._priced: dict[frozenset[str], list[Priced]] = {}
        self._chosen: dict[tuple[frozenset[str], tuple[int, ...]], PoolType | None] = {}

    def priced(self, cts: frozenset[str]) -> list[Priced]:
        """`priced(self.fitting, ...)`, remembered."""
        hit = self._priced.get(cts)
        if hit is None:
            hit = self._priced[cts] = priced(self.fitting, self.req, cts)
        return hit

    def front(self, cts: frozenset[str]) -> list[Priced]:
        """`self.priced(cts)` without the `dominated` types, remembered: what `best` looks at."""
        hit = self._front.get(cts)
        if hit is None:
            out = self._candidates.dominated(cts)
            hit = self._front[cts] = priced([t for t in self.fitting if id(t) not in out], self.req, cts)
        return hit

    def best(self, cts: frozenset[str], demand: tuple[int, ...]) -> PoolType | None:
        """`best_target(self.priced(cts), demand)`, remembered: consolidation asks again about the
        same pods (the same demand) in every pass, and the answer is a pure function of the key.
        Computed over the types not `dominated` (`front`), which chooses the same type.
        """
        key = (cts, demand)
        # A remembered None is an answer too, so a miss is told by KeyError, not by `get`.
        with contextlib.suppress(KeyError):
            return self._chosen[key]
        best = best_target(self.front(cts), demand)
        bounded_put(self._chosen, key, best, self.MAX_CHOICES)
        return best


def shrunk(now: Sequence[int], then: Sequence[int]) -> bool:
    """True when the remaining demand fell below TARGET_REFRESH of what it was when a target was
    chosen: as packing changes the shape of what is left, the best type changes too.
    """
    return any(n < t * TARGET_REFRESH for n, t in zip(now, then, strict=True))


def bounded_put(memo: MutableMapping[_K, _V], key: _K, value: _V, limit: int) -> None:
    """Remember `value`, forgetting the oldest entry first when `memo` holds `limit` already."""
    if len(memo) >= limit and key not in memo:
        del memo[next(iter(memo))]
    memo[key] = value
