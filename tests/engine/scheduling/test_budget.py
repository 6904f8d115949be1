"""The solve deadline and fair turns, through the real `solve()`.

Faked: the clock the deadline reads (scripted: every reading is one unit later). Observed: which
pods a solve plans and which it defers, and that a deadline never reached changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable

from nodewright.engine.scheduling import SolveDeadline, solve
from nodewright.engine.scheduling.budget import FairTurns
from nodewright.model.pod import Pod
from tests.builders import pod
from tests.engine.scheduling.scenario import pool, scheduling_input, term


def ticking() -> Callable[[], float]:
    now = [0.0]

    def read() -> float:
        now[0] += 1.0
        return now[0]

    return read


def hard(count: int) -> list[Pod]:
    return [
        pod(f"hard-{i}", namespace="a", cpu="1", labels={"app": f"h{i}"}, anti_affinity=(term(f"h{i}", namespace="a"),))
        for i in range(count)
    ]


def test_a_deadline_never_reached_changes_nothing() -> None:
    pods = hard(30) + [pod(f"web-{i}", namespace="b", labels={"app": "web"}) for i in range(50)]
    inp = scheduling_input(pods, pools=[pool()])
    plain = solve(inp)
    bounded = solve(inp, deadline=SolveDeadline(ticking(), 1e12))
    assert bounded == plain
    assert bounded.deferred == ()


def test_an_expired_deadline_plans_nothing_and_defers_every_pod() -> None:
    pods = hard(5)
    result = solve(scheduling_input(pods, pools=[pool()]), deadline=SolveDeadline(lambda: 10.0, 0.0))
    assert result.claims == ()
    assert result.unschedulable == {}
    assert result.deferred == tuple(sorted(p.key for p in pods))


def test_the_other_namespace_is_planned_before_the_slow_one_runs_out_the_budget() -> None:
    slow, web = hard(40), [pod(f"web-{i}", namespace="b", cpu="100m", labels={"app": "web"}) for i in range(10)]
    result = solve(scheduling_input(slow + web, pools=[pool()]), deadline=SolveDeadline.within(ticking(), 20))
    planned = {p.key for c in result.claims for p in c.pods}
    assert {p.key for p in web} <= planned
    assert result.deferred
    assert set(result.deferred) == {p.key for p in slow} - planned
    assert not result.unschedulable


def test_fair_turns_postpone_a_tenant_past_its_share_then_give_it_the_time_left() -> None:
    handled: list[str] = []
    items = ["a1", "a2", "a3", "a4", "a5", "b1", "a6", "a7", "a8"]
    deferred = FairTurns(SolveDeadline.within(ticking(), 8)).run(items, lambda s: s[0], handled.append)
    # Share: 7 units over two tenants; each item costs one unit.
    assert handled == ["a1", "a2", "a3", "a4", "b1", "a5", "a6"]
    assert deferred == ["a7", "a8"]
    assert FairTurns(None).run(items, lambda s: s[0], handled.append) == []
