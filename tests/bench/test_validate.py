"""The plan checks catch what would make a benchmark number meaningless."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bench.reference.validate import InvalidPlan, check, problems
from nodewright.engine.scheduling import PlannedClaim, SchedulingResult
from nodewright.model import labels as wk
from nodewright.model.pod import AffinityTerm
from nodewright.model.requirements import Requirements
from nodewright.model.resources import Resources
from nodewright.model.selectors import LabelSelector
from tests.builders import instance_type, pod

SMALL = instance_type("m5.large", cpu="2", memory="8Gi", pods=29, price=0.096)


def claim(*pods_: object, requests: Resources | None = None) -> PlannedClaim:
    members = tuple(pods_)
    total = Resources()
    for p in members:
        total = total + p.requests  # type: ignore[attr-defined]
    return PlannedClaim("default", Requirements(), (SMALL,), SMALL.offerings[0], requests or total, members)  # type: ignore[arg-type]


def test_a_valid_plan_has_no_problems() -> None:
    a, b = pod("a", cpu="1"), pod("b", cpu="500m")

    assert problems(SchedulingResult((claim(a, b),)), [a, b]) == []


def test_an_overfull_claim_is_caught() -> None:
    a, b = pod("a", cpu="1500m"), pod("b", cpu="1500m")

    with pytest.raises(InvalidPlan, match="cannot hold"):
        check(SchedulingResult((claim(a, b),)), [a, b])


def test_requests_that_do_not_cover_the_pods_are_caught() -> None:
    a = pod("a", cpu="1")

    found = problems(SchedulingResult((claim(a, requests=Resources.of(cpu="100m")),)), [a])

    assert any("do not cover" in p for p in found)


def test_a_pod_both_placed_and_unschedulable_is_caught() -> None:
    a = pod("a")

    found = problems(SchedulingResult((claim(a),), unschedulable={a.key: "no"}), [a])

    assert any("both placed" in p for p in found)


def test_a_pod_placed_twice_or_forgotten_is_caught() -> None:
    a, b = pod("a"), pod("b")

    found = problems(SchedulingResult((claim(a), claim(a))), [a, b])

    assert any("placed twice" in p for p in found)
    assert any("neither placed nor unschedulable" in p for p in found)


def test_hostname_anti_affinity_on_one_node_is_caught() -> None:
    term = AffinityTerm(LabelSelector((("app", "web"),)), wk.HOSTNAME, frozenset({"default"}))
    a = pod("a", labels={"app": "web"}, anti_affinity=(term,))
    b = pod("b", labels={"app": "web"})

    found = problems(SchedulingResult((claim(a, b),)), [a, b])

    assert any("anti-affinity" in p for p in found)


def test_an_offering_of_another_type_is_caught() -> None:
    a = pod("a")
    other = instance_type("c5.large", price=0.085)

    found = problems(SchedulingResult((replace(claim(a), offering=other.offerings[0]),)), [a])

    assert any("offering" in p for p in found)
