"""Linear-programming lower bounds on the $/h any plan for a set of pods must cost.

Role: tell how far a plan is from optimal without solving the (NP-hard) packing problem. Pure,
apart from calling HiGHS through `scipy.optimize.linprog(method="highs")`.

Two bounds, both valid (every feasible plan costs at least as much), the second never lower:

`aggregate_bound` (the textbook one): one continuous x_t >= 0 per instance type t (nodes of t),
minimise sum_t price_t x_t subject to, for every distinct request vector q among the pods and
every resource r in cpu, memory, pods:
    sum_{t in T_q} alloc_t[r] x_t >= sum_{p in P_q} requests_p[r]
where T_q are the types that hold one pod of q and P_q the pods whose requests dominate q (a pod
of P_q can only sit on a type of T_q). For the smallest q this is the plain "enough cpu, memory
and pod slots in total" bound. It lets one pod's cpu come from a compute node and its memory from
a memory node, so it is loose whenever pod shapes differ from node shapes (uniform 1 cpu / 2Gi
pods: about 1.6x below what any real packing reaches).

`lower_bound` (the one the benchmark reports), an assignment LP: besides x_t, y_tk >= 0 is how
many pods of class k go to type t (only where one such pod fits t). Subject to
    sum_t y_tk = n_k                                   (every pod is placed)
    sum_k req_k[r] y_tk <= alloc_t[r] x_t              (per type, per resource)
    sum_{k in g} y_tk <= x_t                           (hostname anti-affinity group g: one per node)
Why it is a lower bound: take any valid plan, let x_t be its nodes of type t and y_tk its pods of
class k on them. Every pod is somewhere (row 1); a type's nodes together hold at most their
allocatable times their number (row 2); pods of a self-selecting hostname anti-affinity group are
on distinct nodes (row 3). So the plan is feasible for the LP, and the LP optimum is at most its
cost. Only integrality of x and the split of one type's capacity between nodes are relaxed.

Prices are each type's cheapest offering the pool allows, as the plans are priced. Allocatable is
minus daemonset `overhead`. Zone spread, zone affinity and hostname spread are ignored (they can
only raise the true optimum), so the bound stays loose on the diverse workload.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog
from scipy.sparse import coo_matrix

from nodewright.model import labels as wk
from nodewright.model.instancetype import InstanceType
from nodewright.model.pod import Pod
from nodewright.model.resources import CPU, EMPTY, MEMORY, PODS, Resources

RESOURCES = (CPU, MEMORY, PODS)


@dataclass(frozen=True, slots=True)
class Bound:
    """An LP optimum ($/h) and the fractional node counts that reach it (type name -> nodes)."""

    cost: float
    nodes: Mapping[str, float]


def lower_bound(
    pods: Sequence[Pod],
    types: Sequence[InstanceType],
    prices: Mapping[str, float],
    overhead: Resources = EMPTY,
) -> Bound:
    """The assignment-LP lower bound (see module doc) for placing `pods` on new nodes of `types`.

    `prices` maps type name -> $/h (types without a price are left out). Raises ValueError when the
    LP is infeasible (some pod fits no type) or HiGHS fails.
    """
    if not pods:
        return Bound(0.0, {})
    usable, alloc, price = _types(types, prices, overhead)
    n_types = len(usable)
    classes: dict[tuple[tuple[int, ...], object], int] = {}
    for pod in pods:
        key = (tuple(pod.requests[r] for r in RESOURCES), _anti_group(pod))
        classes[key] = classes.get(key, 0) + 1
    keys = list(classes)
    # Variables: x_0..x_{T-1}, then one y per (class, type that holds one pod of the class).
    pairs: list[tuple[int, int]] = []
    for k, (req, _) in enumerate(keys):
        fits = np.nonzero((alloc >= np.array(req, dtype=float)).all(axis=1))[0]
        if not len(fits):
            raise ValueError(f"lower bound: a pod requesting {req} fits no instance type")
        pairs += [(k, int(t)) for t in fits]
    n_vars = n_types + len(pairs)
    cost = np.concatenate([price, np.zeros(len(pairs))])

    eq_rows, eq_cols = [], []
    for j, (k, _) in enumerate(pairs):
        eq_rows.append(k)
        eq_cols.append(n_types + j)
    a_eq = coo_matrix((np.ones(len(pairs)), (eq_rows, eq_cols)), shape=(len(keys), n_vars)).tocsr()
    b_eq = np.array([classes[k] for k in keys], dtype=float)

    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    n_rows = 0
    for r in range(len(RESOURCES)):
        # Scale each (type, resource) row by that allocatable so coefficients are O(1) for HiGHS.
        scale = np.where(alloc[:, r] > 0, alloc[:, r], 1.0)
        for t in range(n_types):
            rows.append(n_rows + t)
            cols.append(t)
            vals.append(-alloc[t, r] / scale[t])
        for j, (k, t) in enumerate(pairs):
            need = keys[k][0][r]
            if need:
                rows.append(n_rows + t)
                cols.append(n_types + j)
                vals.append(need / scale[t])
        n_rows += n_types
    groups = sorted({g for _, g in keys if g is not None}, key=repr)
    for g in groups:
        for t in range(n_types):
            rows.append(n_rows + t)
            cols.append(t)
            vals.append(-1.0)
        for j, (k, t) in enumerate(pairs):
            if keys[k][1] == g:
                rows.append(n_rows + t)
                cols.append(n_types + j)
                vals.append(1.0)
        n_rows += n_types
    a_ub = coo_matrix((vals, (rows, cols)), shape=(n_rows, n_vars)).tocsr()
    result = linprog(cost, A_ub=a_ub, b_ub=np.zeros(n_rows), A_eq=a_eq, b_eq=b_eq, bounds=(0, None), method="highs")
    if result.status != 0:
        raise ValueError(f"lower bound LP failed: {result.message}")
    nodes = {t.name: float(x) for t, x in zip(usable, result.x[:n_types], strict=True) if x > 1e-9}
    return Bound(float(result.fun), nodes)


def aggregate_bound(
    pods: Sequence[Pod],
    types: Sequence[InstanceType],
    prices: Mapping[str, float],
    overhead: Resources = EMPTY,
) -> Bound:
    """The aggregate-resources LP bound (see module doc): weaker, kept for comparison."""
    if not pods:
        return Bound(0.0, {})
    usable, alloc, price = _types(types, prices, overhead)
    demand: dict[tuple[int, ...], int] = {}
    for pod in pods:
        vec = tuple(pod.requests[r] for r in RESOURCES)
        demand[vec] = demand.get(vec, 0) + 1
    shapes = np.array(list(demand), dtype=float)
    counts = np.array(list(demand.values()), dtype=float)
    rows: list[np.ndarray] = []
    rhs: list[float] = []
    for q in shapes:
        fits = (alloc >= q).all(axis=1)
        dominating = (shapes >= q).all(axis=1)
        need = (shapes[dominating] * counts[dominating, None]).sum(axis=0)
        for r in range(len(RESOURCES)):
            if need[r] > 0:
                # ">=" rows negated into linprog's "<=" form, scaled to O(1).
                rows.append(-(alloc[:, r] * fits) / need[r])
                rhs.append(-1.0)
    result = linprog(price, A_ub=np.array(rows), b_ub=np.array(rhs), bounds=(0, None), method="highs")
    if result.status != 0:
        raise ValueError(f"aggregate bound LP failed: {result.message}")
    nodes = {t.name: float(x) for t, x in zip(usable, result.x, strict=True) if x > 1e-9}
    return Bound(float(result.fun), nodes)


def _types(
    types: Sequence[InstanceType], prices: Mapping[str, float], overhead: Resources
) -> tuple[list[InstanceType], np.ndarray, np.ndarray]:
    usable = [t for t in types if t.name in prices]
    alloc = np.array([[(t.allocatable - overhead).clamped()[r] for r in RESOURCES] for t in usable], dtype=float)
    price = np.array([prices[t.name] for t in usable], dtype=float)
    return usable, alloc.reshape(len(usable), len(RESOURCES)), price


def _anti_group(pod: Pod) -> object:
    """The hostname anti-affinity group a pod belongs to (one pod per node), or None.

    Pods carrying the same self-selecting hostname anti-affinity term repel each other pairwise:
    each one's term selects the other's labels (both match the shared selector).
    """
    for term in pod.anti_affinity:
        if term.topology_key == wk.HOSTNAME and term.selects(pod.namespace, pod.labels):
            return (term.selector, term.namespaces, term.all_namespaces)
    return None
