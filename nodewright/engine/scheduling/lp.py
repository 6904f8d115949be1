"""A small dense linear-programming solver: the two-phase simplex method. Pure.

Role: solve the few tiny LPs the solver uses for guidance (`typemix.py`: which instance types a
workload's shape calls for, and which pods go to which of them) without scipy or numpy, which the
Lambda bundle does not ship.

Contract: `minimize(c, rows)` minimises c.x subject to `rows` (each a sparse row {column: coef}, a
sense "<=", ">=" or "=", and a right-hand side) and x >= 0, and returns an optimal x, or None when
the LP is infeasible, unbounded, or needs more pivots than the budget (callers then fall back to a
heuristic). Deterministic: Dantzig's rule with ties to the lowest column, the ratio test with ties
to the row whose basic variable has the lowest index, and Bland's rule (lowest improving column)
after a run of degenerate pivots, so that it cannot cycle.

Sized for tens of rows and a few hundred columns: each pivot touches the whole dense tableau, so
cost grows as rows x columns x pivots. Callers scale rows so coefficients are O(1).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

Row = tuple[Mapping[int, float], str, float]

_EPS = 1e-9
# Degenerate pivots in a row before switching from Dantzig's rule to Bland's (which cannot cycle).
_STALL = 20
_PIVOTS_PER_ROW = 40


def minimize(c: Sequence[float], rows: Sequence[Row]) -> list[float] | None:
    """An optimal x >= 0 of min c.x subject to `rows`, or None (see module doc)."""
    n = len(c)
    m = len(rows)
    if m == 0:
        return None if any(v < -_EPS for v in c) else [0.0] * n
    # Rows with a negative right-hand side are negated, so every right-hand side is >= 0.
    normal = [
        (coefs, -1.0 if rhs < 0 else 1.0, _flipped(sense) if rhs < 0 else sense, abs(rhs)) for coefs, sense, rhs in rows
    ]
    # Columns: x (n), then one slack or surplus per inequality row, then one artificial per row
    # that has no slack to start the basis with ("=" and ">=" rows).
    slack_of: list[int | None] = []
    next_col = n
    for _, _, sense, _ in normal:
        slack_of.append(None if sense == "=" else next_col)
        next_col += sense != "="
    n_real = next_col
    art_of: list[int | None] = []
    for _, _, sense, _ in normal:
        art_of.append(None if sense == "<=" else next_col)
        next_col += sense != "<="
    width = next_col
    tableau: list[list[float]] = []
    basis: list[int] = []
    for (coefs, sign, sense, rhs), slack, art in zip(normal, slack_of, art_of, strict=True):
        row = [0.0] * (width + 1)
        for j, v in coefs.items():
            row[j] = sign * v
        if slack is not None:
            row[slack] = 1.0 if sense == "<=" else -1.0
        if art is not None:
            row[art] = 1.0
        start = art if art is not None else slack
        assert start is not None  # every row has a slack ("<=") or an artificial (the others)
        basis.append(start)
        row[width] = rhs
        tableau.append(row)
    budget = _PIVOTS_PER_ROW * (m + 1)
    artificials = [j for j in art_of if j is not None]
    if artificials:
        phase1 = [0.0] * width
        for j in artificials:
            phase1[j] = 1.0
        if not _optimize(tableau, basis, phase1, allowed=width, width=width, budget=budget):
            return None
        if _objective(tableau, basis, phase1, width) > 1e-7:
            return None  # infeasible
        _drive_out(tableau, basis, n_real, width)
    cost = list(c) + [0.0] * (width - n)
    if not _optimize(tableau, basis, cost, allowed=n_real, width=width, budget=budget):
        return None
    x = [0.0] * n
    for i, j in enumerate(basis):
        if j < n:
            x[j] = max(tableau[i][width], 0.0)
    return x


def _flipped(sense: str) -> str:
    return {"<=": ">=", ">=": "<=", "=": "="}[sense]


def _objective(tableau: Sequence[Sequence[float]], basis: Sequence[int], cost: Sequence[float], width: int) -> float:
    return sum(cost[j] * tableau[i][width] for i, j in enumerate(basis))


def _optimize(
    tableau: list[list[float]], basis: list[int], cost: Sequence[float], *, allowed: int, width: int, budget: int
) -> bool:
    """Pivot to optimality over columns < `allowed`; False when unbounded or out of budget."""
    # Reduced costs z_j = c_j - c_B . (column j of the tableau), kept current by applying each
    # pivot's row operation to z too (basic columns stay at zero).
    z = [*cost, 0.0]
    for i, j in enumerate(basis):
        if cost[j]:
            z = _minus(z, cost[j], tableau[i])
    stall = 0
    for _ in range(budget):
        enter = -1
        if stall >= _STALL:
            enter = next((j for j in range(allowed) if z[j] < -_EPS), -1)
        else:
            best = -_EPS
            for j in range(allowed):
                if z[j] < best:
                    best, enter = z[j], j
        if enter < 0:
            return True
        leave = -1
        ratio = 0.0
        for i, row in enumerate(tableau):
            a = row[enter]
            if a > _EPS:
                r = row[width] / a
                if leave < 0 or r < ratio - _EPS or (r <= ratio + _EPS and basis[i] < basis[leave]):
                    leave, ratio = i, r
        if leave < 0:
            return False  # unbounded
        stall = stall + 1 if ratio <= _EPS else 0
        _pivot(tableau, basis, leave, enter)
        z = _minus(z, z[enter], tableau[leave])
    return False


def _minus(row: list[float], factor: float, other: Sequence[float]) -> list[float]:
    """row - factor * other."""
    return [a - factor * b for a, b in zip(row, other, strict=True)]


def _pivot(tableau: list[list[float]], basis: list[int], r: int, q: int) -> None:
    head = tableau[r][q]
    pivot_row = [v / head for v in tableau[r]]
    tableau[r] = pivot_row
    for i, row in enumerate(tableau):
        if i != r and row[q]:
            tableau[i] = _minus(row, row[q], pivot_row)
    basis[r] = q


def _drive_out(tableau: list[list[float]], basis: list[int], n_real: int, width: int) -> None:
    """After phase 1, pivot artificial variables still basic (at zero) out where possible."""
    for i, j in enumerate(basis):
        if j < n_real:
            continue
        for q in range(n_real):
            if q not in basis and abs(tableau[i][q]) > _EPS:
                _pivot(tableau, basis, i, q)
                break
        # A row with no real column left is redundant; its artificial stays at zero, and phase 2
        # never lets it enter again since only real columns may enter.
