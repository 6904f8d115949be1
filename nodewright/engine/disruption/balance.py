"""Is a consolidation move worth the disruption it causes? Karpenter's `Balanced` score. Pure.

Karpenter's `consolidationPolicy: Balanced` (v1.14, designs/balanced-consolidation.md) weighs a
move's savings against the pods it evicts, both as fractions of its NodePool's totals:

    node disruption   = 1 + sum(max(0, eviction cost of each pod))      (1: the node itself)
    eviction cost     = 1 + pod-deletion-cost / 2^27 + priority / 2^25, clamped to [-10, 10]
    savings fraction  = savings / the NodePool's $/h
    disruption share  = disruption of the removed nodes / the NodePool's total disruption
    score             = savings fraction / disruption share;  approved when score >= 1 / k, k = 2

so an empty node's delete always passes, and a move that saves cents while evicting hundreds of
pods does not. A move whose removed nodes span NodePools is scored per NodePool, each against its
own totals, with the replacements' price shared among them in proportion to what each removes.

Nodewright's own consolidation (`many_to_many`) weighs its beyond-Karpenter moves (N nodes
replaced by two or more) with the same score (`DisruptionOptions.many_to_many_threshold` is k),
whatever the NodePool's policy: those are the moves that can touch many nodes to save little.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from nodewright.engine.disruption.candidates import Candidate, ClusterView, eviction_cost
from nodewright.model.pod import Pod

BALANCED = "Balanced"
BALANCED_K = 2.0


@dataclass(frozen=True, slots=True)
class PoolTotals:
    """A NodePool's nodes together: $/h and disruption (the score's denominators)."""

    cost: float
    disruption: float


def node_disruption(pods: Iterable[Pod]) -> float:
    """What evicting a node's pods costs: 1 for the node, plus each pod's (never negative) eviction cost."""
    return 1.0 + sum(max(0.0, eviction_cost(p)) for p in pods)


def pool_totals(view: ClusterView) -> dict[str, PoolTotals]:
    """Every NodePool's totals over all its nodes (not only the candidates), from one view."""
    cost: dict[str, float] = {}
    disruption: dict[str, float] = {}
    for node in view.inp.snapshot.nodes:
        claim = view.claim_by_node.get(node.name)
        if claim is None:
            continue
        pool = claim.nodepool
        cost[pool] = cost.get(pool, 0.0) + view.price(claim)
        disruption[pool] = disruption.get(pool, 0.0) + node_disruption(view.reschedulable_pods(node.name))
    return {pool: PoolTotals(cost[pool], disruption[pool]) for pool in cost}


def score(savings: float, disruption: float, totals: PoolTotals) -> float:
    """savings fraction / disruption share (0 when nothing is saved or the pool costs nothing)."""
    if savings <= 0 or totals.cost <= 0 or totals.disruption <= 0:
        return 0.0
    return (savings / totals.cost) / (disruption / totals.disruption)


def judge(
    candidates: Sequence[Candidate],
    new_price: float,
    totals: Mapping[str, PoolTotals],
    thresholds: Mapping[str, float],
) -> str:
    """'' when the move is worth its disruption in every NodePool `thresholds` names (pool -> k),
    else why not. Pools without a threshold are not weighed.
    """
    total = sum(c.price for c in candidates)
    by_pool: dict[str, list[Candidate]] = {}
    for c in candidates:
        by_pool.setdefault(c.pool.name, []).append(c)
    for pool, members in sorted(by_pool.items()):
        k = thresholds.get(pool)
        if k is None or k <= 0:
            continue
        price = sum(c.price for c in members)
        share = price / total if total > 0 else 1.0 / len(by_pool)
        savings = price - new_price * share
        disruption = sum(node_disruption(c.pods) for c in members)
        pool_totals_ = totals.get(pool, PoolTotals(price, disruption))
        got = score(savings, disruption, pool_totals_)
        if got < 1.0 / k:
            return (
                f"saves {savings / pool_totals_.cost:.1%} of NodePool {pool}'s ${pool_totals_.cost:.4f}/h for "
                f"{disruption / pool_totals_.disruption:.1%} of its disruption (score {got:.2f} < {1.0 / k:.2f}, "
                f"k = {k:g})"
            )
    return ""
