"""How EC2 chooses what an `instant` CreateFleet launches: the simulated EC2's allocation. Pure.

moto launches the first override of the first launch-template config (it ranks by `SpotPrice`,
which no caller sets), so a request that spans several configs (one per AMI: amd64 and arm64)
always got the cheapest type of whichever AMI id sorted first. `SimulatedEc2` asks `allocate`
what EC2 would launch instead, and has moto start exactly that.

Theory of operation. A request's overrides are `Pool`s (instance type, zone, weighted capacity,
priority, $/h from the scenario's price table, and how many instances EC2 could start there now).
`rank` orders them as the request's allocation strategy does (AWS's documented strategies):

* on-demand `lowest-price` (and spot `lowest-price`): the lowest price per unit of weighted
  capacity across every override of every config;
* on-demand `prioritized`: the lowest `Priority` number first (overrides without one last), then
  the lowest price per unit;
* spot `capacity-optimized`: the deepest pool first; `capacity-optimized-prioritized` takes the
  priority first among pools of equal depth score;
* spot `price-capacity-optimized` (EC2's recommendation, what Nodewright sends): the pools with
  the best capacity score first ("the highest capacity availability for the number of instances
  that are launching"), then the lowest price per unit among them. The score grows with the
  log of the instances a pool can still start and is capped at `DEEP` spare instances: pools
  deeper than that are equally safe, and price alone decides between them. So a deep pool that
  is slightly dearer wins over a shallow cheap one, and among deep pools the cheapest wins.

Ties: instance type name, then zone, then request order. `allocate` then fills the target
capacity down the ranking: ceil(remaining / weight) instances from each pool, at most what the
pool can start; a pool that could not give what was asked is reported short (EC2's
`InsufficientInstanceCapacity` error for it), and a request whose pools all ran short is partially
fulfilled. Pools with no spare capacity are skipped without launching.

`depth` draws a spot pool's capacity from the scenario's seed: log-uniform between the
scenario's bounds, from a hash of (seed, instance type, zone), so it does not depend on the order
in which pools are asked about.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass

LOWEST_PRICE = "lowest-price"
PRIORITIZED = "prioritized"
CAPACITY_OPTIMIZED = "capacity-optimized"
CAPACITY_OPTIMIZED_PRIORITIZED = "capacity-optimized-prioritized"
PRICE_CAPACITY_OPTIMIZED = "price-capacity-optimized"
# Spare instances beyond which a spot pool counts as fully deep (the top capacity score).
DEEP = 100
SCORES = 10


@dataclass(frozen=True, slots=True)
class Pool:
    """One override of a CreateFleet request and what EC2 knows about it.

    `config` and `position` locate it in the request (its launch-template config, and its order
    among all overrides); `price` is $/h (None: unknown, ranked last); `available` is how many
    instances EC2 can start there now (None: no limit).
    """

    config: int
    position: int
    instance_type: str
    zone: str
    price: float | None
    weight: float = 1.0
    priority: float | None = None
    available: int | None = None

    @property
    def unit_price(self) -> float:
        """$/h per unit of weighted capacity (infinite when the price is unknown)."""
        if self.price is None:
            return math.inf
        return self.price / self.weight if self.weight > 0 else math.inf

    @property
    def score(self) -> int:
        """The capacity score: 0 (no spare instance) to SCORES (DEEP or more, or no limit)."""
        if self.available is None or self.available >= DEEP:
            return SCORES
        if self.available <= 0:
            return 0
        return max(1, min(SCORES, math.ceil(SCORES * math.log1p(self.available) / math.log1p(DEEP))))


@dataclass(frozen=True, slots=True)
class Allocation:
    """What a fleet launches: (pool, instances) in launch order; the pools that ran short; the
    weighted capacity fulfilled.
    """

    launches: tuple[tuple[Pool, int], ...]
    short: tuple[Pool, ...]
    fulfilled: float


def rank(pools: Sequence[Pool], strategy: str) -> list[Pool]:
    """The pools in the order the allocation strategy launches from (see the module docstring)."""

    def tie(p: Pool) -> tuple[str, str, int]:
        return (p.instance_type, p.zone, p.position)

    def priority(p: Pool) -> float:
        return p.priority if p.priority is not None else math.inf

    if strategy == PRIORITIZED:
        return sorted(pools, key=lambda p: (priority(p), p.unit_price, *tie(p)))
    if strategy == CAPACITY_OPTIMIZED:
        return sorted(pools, key=lambda p: (-p.score, -_depth(p), p.unit_price, *tie(p)))
    if strategy == CAPACITY_OPTIMIZED_PRIORITIZED:
        return sorted(pools, key=lambda p: (-p.score, priority(p), p.unit_price, *tie(p)))
    if strategy == PRICE_CAPACITY_OPTIMIZED:
        return sorted(pools, key=lambda p: (-p.score, p.unit_price, *tie(p)))
    return sorted(pools, key=lambda p: (p.unit_price, *tie(p)))  # lowest-price, and anything unknown


def _depth(pool: Pool) -> float:
    return math.inf if pool.available is None else float(pool.available)


def allocate(pools: Sequence[Pool], target: float, strategy: str) -> Allocation:
    """Fill `target` units of weighted capacity from `pools` by `strategy` (module docstring)."""
    launches: list[tuple[Pool, int]] = []
    short: list[Pool] = []
    remaining = target
    for pool in rank(pools, strategy):
        if remaining <= 0:
            break
        weight = pool.weight if pool.weight > 0 else 1.0
        wanted = math.ceil(remaining / weight - 1e-9)
        count = wanted if pool.available is None else min(wanted, max(0, pool.available))
        if count < wanted:
            short.append(pool)
        if count > 0:
            launches.append((pool, count))
            remaining -= count * weight
    return Allocation(tuple(launches), tuple(short), target - max(0.0, remaining))


def depth(seed: int, instance_type: str, zone: str, low: int, high: int) -> int:
    """The spot capacity of one pool: log-uniform in [low, high], from (seed, type, zone)."""
    if high <= low:
        return low
    digest = hashlib.sha256(f"{seed}/{instance_type}/{zone}".encode()).digest()
    u = int.from_bytes(digest[:8], "big") / 2**64
    return min(high, max(low, math.floor(math.exp(math.log(low) + u * (math.log(high + 1) - math.log(low))))))
