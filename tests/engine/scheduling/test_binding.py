"""The binding check (`binding.unbindable`) and the properties it guards (Hypothesis).

Faked: nothing. The table builds plans by hand that kube-scheduler would refuse (and their fixed
twins) and checks the model refuses exactly those; the properties run the real `solve()` on
random small clusters (`test_invariants.scheduling_inputs`, plus pods that follow pods pending
in the same batch) and check that every plan binds, that permuting the input never changes
which pods are placed nor raises the cost, and that renaming the pods changes neither (classes of
equal size are ordered by their spec, not by their pods' names).
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodewright.engine.scheduling import PlannedClaim, SchedulingInput, SchedulingResult, solve
from nodewright.engine.scheduling.binding import unbindable
from nodewright.engine.scheduling.classes import class_key
from nodewright.model import labels as wk
from nodewright.model.pod import HostPort, Pod
from nodewright.model.requirements import Requirement, Requirements
from tests.builders import ZONES, node, pod
from tests.engine.scheduling.scenario import catalog, pool, spread, taint, term
from tests.engine.scheduling.test_invariants import scheduling_inputs

PROPERTIES = settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
M5 = next(t for t in catalog() if t.name == "m5.xlarge")
TEAM = "example.com/team"


def claim(*pods: Pod, zone: str = ZONES[0], reqs: Requirements | None = None) -> PlannedClaim:
    offering = next(o for o in M5.offerings if o.zone == zone and o.capacity_type == "on-demand")
    return PlannedClaim("default", reqs or Requirements(), (M5,), offering, M5.allocatable, tuple(pods))


def plan(pods: list[Pod], claims: list[PlannedClaim], **fields: object) -> tuple[SchedulingInput, SchedulingResult]:
    return SchedulingInput(pods=tuple(pods), pools=(pool(),), **fields), SchedulingResult(tuple(claims))  # type: ignore[arg-type]


def team(value: str) -> Requirements:
    return Requirements([Requirement.new(TEAM, "In", [value])])


A, B = pod("a", node_selector={TEAM: "a"}), pod("b", node_selector={TEAM: "b"})
PORT_A, PORT_B = pod("pa", cpu="100m"), pod("pb", cpu="100m")
PORT_A, PORT_B = replace(PORT_A, host_ports=(HostPort(80),)), replace(PORT_B, host_ports=(HostPort(80),))
WEB = [pod(f"w{i}", labels={"app": "web"}, spread=(spread("web"),)) for i in range(3)]
HOSTED = pod("h", node_selector={wk.HOSTNAME: "n1"})
BIG = pod("big", cpu="8")
FOLLOWER = pod("f", affinity=(term("db"),))
LEADER = pod("db", labels={"app": "db"})


@pytest.mark.parametrize(
    ("pods", "claims", "refused"),
    [
        pytest.param([A, B], [claim(A, B, reqs=team("a"))], {"default/b"}, id="two-values-of-one-label"),
        pytest.param([A, B], [claim(A, reqs=team("a")), claim(B, reqs=team("b"))], set(), id="one-value-each"),
        pytest.param([PORT_A, PORT_B], [claim(PORT_A, PORT_B)], {"default/pb"}, id="one-host-port-twice"),
        pytest.param([PORT_A, PORT_B], [claim(PORT_A), claim(PORT_B)], set(), id="host-port-per-node"),
        pytest.param([HOSTED], [claim(HOSTED)], {"default/h"}, id="hostname-selector-on-a-new-node"),
        pytest.param([BIG], [claim(BIG)], {"default/big"}, id="requests-over-allocatable"),
        pytest.param(WEB, [claim(*WEB[:2], zone=ZONES[0]), claim(WEB[2], zone=ZONES[1])], set(), id="spread-2-1"),
        pytest.param([FOLLOWER, LEADER], [claim(FOLLOWER), claim(LEADER)], {"default/f"}, id="affinity-apart"),
        pytest.param([FOLLOWER, LEADER], [claim(FOLLOWER, LEADER)], set(), id="affinity-together-any-order"),
    ],
)
def test_the_model_refuses_what_kube_scheduler_refuses(
    pods: list[Pod], claims: list[PlannedClaim], refused: set[str]
) -> None:
    inp, result = plan(pods, claims)

    assert {r.pod for r in unbindable(inp, result)} == refused


def test_spread_counts_a_node_in_a_zone_the_pods_cannot_reach() -> None:
    # A node in the third zone holds no web pod: the minimum is 0 there, so 2 pods in one zone skew by 2.
    inp, result = plan(
        WEB,
        [claim(*WEB[:2], zone=ZONES[0]), claim(WEB[2], zone=ZONES[1])],
        nodes=(node("n1", labels={wk.ZONE: ZONES[2]}),),
    )

    assert {r.pod for r in unbindable(inp, result)} == {"default/w1"}


def test_node_taints_policy_honor_leaves_a_tainted_node_out_of_the_count() -> None:
    honor = [replace(p, spread=(replace(p.spread[0], node_taints_policy="Honor"),)) for p in WEB]
    tainted = node("n1", labels={wk.ZONE: ZONES[2]}, taints=[taint("dedicated")])
    inp, result = plan(honor, [claim(*honor[:2], zone=ZONES[0]), claim(honor[2], zone=ZONES[1])], nodes=(tainted,))

    assert unbindable(inp, result) == []


@st.composite
def with_followers(draw: st.DrawFn) -> SchedulingInput:
    """A random input plus pods that follow (by zone or host) pods pending in the same batch."""
    inp = draw(scheduling_inputs())
    extra = []
    for i in range(draw(st.integers(0, 3))):
        target = f"t{i}"
        key = draw(st.sampled_from([wk.HOSTNAME, wk.ZONE]))
        extra.append(pod(f"z-target-{i}", labels={"app": target}, cpu="250m"))
        extra += [pod(f"a-follower-{i}-{j}", affinity=(term(target, key=key),)) for j in range(draw(st.integers(1, 3)))]
    return replace(inp, pods=(*inp.pods, *extra))


@PROPERTIES
@given(with_followers())
def test_every_plan_is_one_kube_scheduler_binds(inp: SchedulingInput) -> None:
    result = solve(inp)

    assert unbindable(inp, result) == []


@PROPERTIES
@given(with_followers(), st.integers(0, 2**32 - 1))
def test_permuting_the_input_never_changes_which_pods_are_placed_nor_raises_the_cost(
    inp: SchedulingInput, seed: int
) -> None:
    order = list(inp.pods)
    random.Random(seed).shuffle(order)

    first, second = solve(inp), solve(replace(inp, pods=tuple(order)))

    assert set(second.unschedulable) == set(first.unschedulable)
    assert second.price_per_hour <= first.price_per_hour + 1e-9


@PROPERTIES
@given(with_followers(), st.integers(0, 2**32 - 1))
def test_renaming_pods_never_changes_what_is_placed_nor_the_cost(inp: SchedulingInput, seed: int) -> None:
    names = [p.name for p in inp.pods]
    random.Random(seed).shuffle(names)
    renamed = replace(inp, pods=tuple(replace(p, name=n) for p, n in zip(inp.pods, names, strict=True)))

    first, second = solve(inp), solve(renamed)

    def placed(i: SchedulingInput, r: SchedulingResult) -> Counter[object]:
        return Counter(class_key(p) for p in i.pods if p.key not in r.unschedulable)

    assert placed(renamed, second) == placed(inp, first)
    assert second.price_per_hour == pytest.approx(first.price_per_hour)
