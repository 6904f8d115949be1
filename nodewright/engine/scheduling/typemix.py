"""Which instance types a workload's shape calls for, and which pods go to each: two tiny LPs. Pure.

Role: give the solver's planned fill (`plan.py`, `Strategy.lp_plan`) an instance-type mix
chosen by arithmetic over the whole workload rather than one claim at a time. Greedy packing
picks each node's type from the pods in hand; the cheapest plan for a workload whose pods have
assorted shapes often mixes a compute type (cheap cpu) with a general-purpose or memory type
(cheap memory), each filled with the pods that suit it. Both functions use `lp.minimize`.

* `cheapest_mix(demand, columns)`: the aggregate relaxation, min sum_t price_t x_t subject to
  sum_t cap_t[r] x_t >= demand[r] for every resource r. It lets one pod's cpu come from one node
  and its memory from another, so it only nominates types; the assignment below decides.
* `assign(items, columns, allowed)`: the assignment LP the benchmark's lower bound also solves
  (bench/reference/lower_bound.py), over a handful of candidate types: x_t nodes of type t, y_kt pods of
  item k on type t (only where `allowed`), every pod placed, and per type and resource the pods'
  requests at most x_t times its capacity. Its y says which pods share which type, so nodes of a
  type can be filled with a slice of exactly the pods the plan gives that type. With node counts
  fixed instead, it places required pods and as many optional ones as fit.
* `node_slices(plan, ...)`: the whole nodes a plan opens and the pods each gets, never beyond a
  node's capacity.
* `apportion(parts)`: whole node counts for plans made apart (one per zone) whose total is the
  rounded total of their fractional counts.

Contract: deterministic (the caller's column order breaks ties); resources nobody requests are
ignored; None when the LP is infeasible (some demanded resource or some item fits no column) or
the solver gives up. Columns dominated per dollar (another column gives at least as much of every
demanded resource per $) are dropped from `cheapest_mix` first: an LP optimum never needs them,
and it keeps the LP at a handful of columns out of hundreds of types.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from nodewright.engine.scheduling.lp import Row, minimize

Column = tuple[Sequence[int], float]  # (capacity per resource, $/h)
# Fractional nodes below this count as none (LP round-off).
_NODE_EPS = 1e-6


@dataclass(frozen=True, slots=True)
class Assignment:
    """The assignment LP's optimum: fractional nodes per column, and pods per (item, column)."""

    nodes: list[float]
    pods: list[list[float]]  # pods[k][t]: how many of item k's pods the plan puts on column t


def cheapest_mix(demand: Sequence[int], columns: Sequence[Column]) -> list[float] | None:
    """Optimal fractional node counts, one per column, covering `demand`; or None."""
    rows_used = [r for r, d in enumerate(demand) if d > 0]
    x = [0.0] * len(columns)
    if not rows_used:
        return x
    kept = _per_dollar_frontier([[cap[r] for r in rows_used] for cap, _ in columns], [p for _, p in columns])
    # One ">= 1" row per resource, scaled by its demand so coefficients are O(1).
    rows: list[Row] = [
        ({j: columns[t][0][r] / demand[r] for j, t in enumerate(kept) if columns[t][0][r]}, ">=", 1.0)
        for r in rows_used
    ]
    solution = minimize([columns[t][1] for t in kept], rows)
    if solution is None:
        return None
    for j, t in enumerate(kept):
        x[t] = solution[j]
    return x


def assign(
    items: Sequence[tuple[Sequence[int], int]],
    columns: Sequence[Column],
    allowed: Sequence[Sequence[bool]],
    *,
    nodes: Sequence[int] | None = None,
    values: Sequence[float] | None = None,
) -> Assignment | None:
    """The assignment LP (module doc) for `items` (requests per pod, pod count) on `columns`.

    `allowed[k][t]` says whether item k's pods may go on column t (its requirements allow the
    type and one pod fits it); the caller checks fit, this function trusts it.

    With `nodes`, the node counts are fixed (nodes[t] of column t) rather than chosen, and items
    with a positive `values[k]` become optional: the LP places every other pod and as many of
    theirs as fit, maximising the value placed. This fills whole nodes whose count was rounded
    with pods that can go anywhere.
    """
    n_types = len(columns)
    fixed = nodes is not None
    worth = list(values) if values is not None and fixed else [0.0] * len(items)
    demand = [sum(req[r] * count for req, count in items) for r in range(len(columns[0][0]))] if columns else []
    costs = [] if fixed else [price for _, price in columns]
    var: dict[tuple[int, int], int] = {}
    for k, (_, count) in enumerate(items):
        for t in range(n_types):
            if allowed[k][t]:
                var[(k, t)] = len(costs)
                costs.append(-worth[k] * count)
    rows: list[Row] = []
    # Every pod placed, in shares of the item (sum_t y'_kt = 1, with y_kt = count_k * y'_kt);
    # optional items at most all of their pods.
    for k, (_, count) in enumerate(items):
        if count <= 0:
            continue
        share = {var[(k, t)]: 1.0 for t in range(n_types) if (k, t) in var}
        if not share and worth[k] <= 0:
            return None
        if share:
            rows.append((share, "<=" if worth[k] > 0 else "=", 1.0))
    # Per type and resource: the pods' requests at most the nodes' capacity (scaled by capacity).
    for t, (cap, _) in enumerate(columns):
        for r, total in enumerate(demand):
            if total <= 0:
                continue
            if cap[r] <= 0:
                # The type lacks the resource: no item needing it may use the type.
                row = {var[(k, t)]: 1.0 for k, (req, _) in enumerate(items) if (k, t) in var and req[r]}
                if row:
                    rows.append((row, "=", 0.0))
                continue
            load: dict[int, float] = {}
            for k, (req, count) in enumerate(items):
                if (k, t) in var and req[r] and count > 0:
                    load[var[(k, t)]] = count * req[r] / cap[r]
            if not load:
                continue
            if nodes is not None:
                rows.append((load, "<=", float(nodes[t])))
            else:
                load[t] = -1.0
                rows.append((load, "<=", 0.0))
    solution = minimize(costs, rows)
    if solution is None:
        return None
    pods = [[0.0] * n_types for _ in items]
    for (k, t), j in var.items():
        pods[k][t] = solution[j] * items[k][1]
    return Assignment([float(n) for n in nodes] if nodes is not None else solution[:n_types], pods)


def _per_dollar_frontier(caps: Sequence[Sequence[int]], prices: Sequence[float]) -> list[int]:
    """Indices of the columns no other column beats per dollar on every row (first index wins ties)."""
    per_dollar = [[v / p for v in cap] for cap, p in zip(caps, prices, strict=True)]
    # Richest first, so a column is only compared with the frontier built so far.
    order = sorted(range(len(caps)), key=lambda j: (-sum(per_dollar[j]), j))
    frontier: list[int] = []
    for j in order:
        mine = per_dollar[j]
        if any(all(a >= b for a, b in zip(per_dollar[k], mine, strict=True)) for k in frontier):
            continue
        frontier.append(j)
    return sorted(frontier)


def node_slices(
    plan: Assignment,
    reqs: Sequence[Sequence[int]],
    caps: Sequence[Sequence[int]],
    first: Sequence[bool] | None = None,
) -> list[tuple[int, list[int]]]:
    """The nodes `plan` asks for, as (column, pods of each item), column by column.

    Column t gets ceil(x_t) nodes of capacity `caps[t]`; item k's pods request `reqs[k]`. Node
    i is due, of each item, its pods between the cumulative shares i / x_t and (i + 1) / x_t of
    what the plan gives t (rounded), so the nodes of a type are filled alike and the last one
    takes the fractional rest. Items flagged in `first` (pods that can go nowhere else), then
    larger pods, are served first, never beyond the node's capacity; room left is then filled
    with pods the plan gives t that later nodes were due, so every node but the last is full.
    What the last node cannot hold stays unplaced. Nodes that would hold no pod are left out.
    """
    order = sorted(
        range(len(reqs)),
        key=lambda k: (not (first[k] if first is not None else False), [-v for v in reqs[k]], k),
    )
    out: list[tuple[int, list[int]]] = []
    for t, x in enumerate(plan.nodes):
        if x <= _NODE_EPS:
            continue
        total = [round(p[t]) for p in plan.pods]
        given = [0] * len(reqs)
        for i in range(math.ceil(x - _NODE_EPS)):
            free = list(caps[t])
            counts = [0] * len(reqs)
            due = [max(0, round(p[t] * min(i + 1, x) / x) - g) for p, g in zip(plan.pods, given, strict=True)]
            for budget in (due, [n - g for n, g in zip(total, given, strict=True)]):
                for k in order:
                    n = min(budget[k] - counts[k], _fit(free, reqs[k]))
                    if n > 0:
                        counts[k] += n
                        for r, v in enumerate(reqs[k]):
                            free[r] -= v * n
            if any(counts):
                out.append((t, counts))
            given = [g + c for g, c in zip(given, counts, strict=True)]
    return out


def _fit(free: Sequence[int], req: Sequence[int]) -> int:
    """How many pods requesting `req` fit in `free`."""
    return min((f // v for f, v in zip(free, req, strict=True) if v), default=1 << 30)


def apportion(parts: Sequence[Sequence[tuple[str, float]]]) -> list[dict[str, int]]:
    """Whole node counts for plans made apart (one per topology domain) from their fractional ones.

    `parts[d]` lists (type name, fractional nodes) of plan d. Per type, the total over all plans
    is rounded to the nearest whole number and handed out like seats by largest remainder: each
    plan gets the whole part of its count, and the plans with the largest fractions (ties to the
    first plan) one more each. Rounding every plan up instead would leave one part-filled node
    per plan and type; this leaves at most one per type in all.
    """
    totals: dict[str, float] = {}
    for part in parts:
        for name, x in part:
            totals[name] = totals.get(name, 0.0) + x
    out: list[dict[str, int]] = [{name: math.floor(x + _NODE_EPS) for name, x in part} for part in parts]
    for name in sorted(totals):
        fractions = [(x - math.floor(x + _NODE_EPS), d) for d, part in enumerate(parts) for n, x in part if n == name]
        extra = round(totals[name]) - sum(out[d][name] for _, d in fractions)
        for _, d in sorted(fractions, key=lambda f: (-f[0], f[1]))[: max(extra, 0)]:
            out[d][name] += 1
    return out
