"""The small simplex solver (`lp.py`) finds the optimum, and reports infeasible LPs as None."""

from __future__ import annotations

import random

import pytest

from nodewright.engine.scheduling.lp import Row, minimize


def _cost(c: list[float], x: list[float]) -> float:
    return sum(a * b for a, b in zip(c, x, strict=True))


def _holds(rows: list[Row], x: list[float]) -> bool:
    for coefs, sense, rhs in rows:
        lhs = sum(v * x[j] for j, v in coefs.items())
        if (sense == "<=" and lhs > rhs + 1e-7) or (sense == ">=" and lhs < rhs - 1e-7):
            return False
        if sense == "=" and abs(lhs - rhs) > 1e-7:
            return False
    return True


@pytest.mark.parametrize(
    ("c", "rows", "optimum"),
    [
        # min x + 2y, x + y >= 4, x <= 3: all of x it can, then y.
        ([1.0, 2.0], [({0: 1.0, 1: 1.0}, ">=", 4.0), ({0: 1.0}, "<=", 3.0)], [3.0, 1.0]),
        # An equality row and an inequality between the variables: x + y = 4, x <= y.
        ([1.0, 2.0], [({0: 1.0, 1: 1.0}, "=", 4.0), ({0: 1.0, 1: -1.0}, "<=", 0.0)], [2.0, 2.0]),
        # A negative right-hand side: -x <= -2 is x >= 2.
        ([1.0], [({0: -1.0}, "<=", -2.0)], [2.0]),
        # Nothing required: the origin.
        ([1.0, 1.0], [({0: 1.0, 1: 1.0}, "<=", 5.0)], [0.0, 0.0]),
    ],
)
def test_known_optima(c: list[float], rows: list[Row], optimum: list[float]) -> None:
    x = minimize(c, rows)

    assert x == pytest.approx(optimum)


def test_an_infeasible_lp_has_no_solution() -> None:
    assert minimize([1.0, 1.0], [({0: 1.0, 1: 1.0}, "<=", 1.0), ({0: 1.0}, ">=", 2.0)]) is None


def test_an_unbounded_lp_has_no_solution() -> None:
    assert minimize([-1.0], [({0: 1.0}, ">=", 1.0)]) is None


def test_beales_example_which_cycles_under_dantzigs_rule_still_reaches_the_optimum() -> None:
    # E. M. L. Beale (1955): degenerate at the origin; the textbook pivot rule cycles forever.
    c = [-0.75, 20.0, -0.5, 6.0]
    rows: list[Row] = [
        ({0: 0.25, 1: -8.0, 2: -1.0, 3: 9.0}, "<=", 0.0),
        ({0: 0.5, 1: -12.0, 2: -0.5, 3: 3.0}, "<=", 0.0),
        ({2: 1.0}, "<=", 1.0),
    ]

    x = minimize(c, rows)

    assert x is not None
    assert _cost(c, x) == pytest.approx(-1.25)
    assert _holds(rows, x)


def test_random_lps_match_highs() -> None:
    linprog = pytest.importorskip("scipy.optimize").linprog
    rng = random.Random(7)
    for _ in range(150):
        n, m = rng.randint(1, 12), rng.randint(1, 8)
        c = [rng.uniform(0.1, 5.0) for _ in range(n)]
        rows: list[Row] = []
        for _ in range(m):
            coefs = {j: rng.uniform(-3.0, 5.0) for j in range(n) if rng.random() < 0.5}
            rows.append((coefs, rng.choice(["<=", ">=", "="]), rng.uniform(-5.0, 10.0)))
        a_ub, b_ub, a_eq, b_eq = [], [], [], []
        for coefs, sense, rhs in rows:
            dense = [coefs.get(j, 0.0) for j in range(n)]
            if sense == "=":
                a_eq.append(dense)
                b_eq.append(rhs)
            else:
                sign = 1.0 if sense == "<=" else -1.0
                a_ub.append([sign * v for v in dense])
                b_ub.append(sign * rhs)
        expected = linprog(
            c, A_ub=a_ub or None, b_ub=b_ub or None, A_eq=a_eq or None, b_eq=b_eq or None, method="highs"
        )

        x = minimize(c, rows)

        if expected.status != 0:
            assert x is None
        else:
            assert x is not None
            assert _holds(rows, x)
            assert _cost(c, x) == pytest.approx(expected.fun, rel=1e-7, abs=1e-9)
