"""Which node claims a pod's node selection, architecture, GPUs and taints lead to.

Faked: nothing; the real `solve()` runs on a small catalog (`scenario.catalog()`). Observed: the
claims' instance type options, requirements and offerings, and the reasons of unschedulable pods.
"""

from __future__ import annotations

import pytest

from nodewright.model import labels as wk
from nodewright.model.nodepool import NodePool
from nodewright.model.pod import PreferredTerm
from nodewright.model.taints import Taint, Toleration
from tests.builders import ZONES, node_pool, pod
from tests.engine.scheduling.expect import (
    claim_of,
    expect_claims,
    expect_fits,
    expect_no_exotic_types,
    expect_on_claims,
    expect_unschedulable,
    label_values,
    type_names,
    zone_of,
)
from tests.engine.scheduling.scenario import (
    GPU,
    catalog,
    node_terms,
    pool,
    preferred,
    requirement,
    run,
    taint,
    tolerate,
)

# ---------------------------------------------------------------- node selectors


@pytest.mark.parametrize(
    ("nodepool", "selector", "family"),
    [
        (node_pool(labels={"team": "ml"}), {"team": "ml"}, None),
        (node_pool(requirements=[requirement("team", "In", "ml", "web")]), {"team": "ml"}, None),
        (node_pool(), {wk.INSTANCE_FAMILY: "r5"}, {"r5"}),
        (node_pool(), {wk.INSTANCE_TYPE: "c5.xlarge"}, {"c5"}),
        (node_pool(), {wk.ZONE: ZONES[2]}, None),
    ],
    ids=[
        "custom-label-from-pool-labels",
        "custom-label-from-pool-requirements",
        "instance-family",
        "instance-type",
        "zone",
    ],
)
def test_a_selector_the_pool_can_satisfy_opens_a_claim_that_satisfies_it(
    nodepool: NodePool, selector: dict[str, str], family: set[str] | None
) -> None:
    result = run([pod("a", node_selector=selector)], pools=[pool(nodepool)])

    expect_on_claims(result, ["a"])
    claim = claim_of(result, "a")
    assert claim is not None
    for key, value in selector.items():
        assert claim.requirements[key].has(value)
        assert not claim.requirements[key].has("something-else")
    if family is not None:
        assert label_values(claim, wk.INSTANCE_FAMILY) == family
    if wk.ZONE in selector:
        assert zone_of(claim) == selector[wk.ZONE]
    expect_fits(result)


@pytest.mark.parametrize(
    ("nodepool", "selector", "reason"),
    [
        (node_pool(), {"team": "ml"}, "label 'team' is not set by the NodePool"),
        (node_pool(labels={"team": "web"}), {"team": "ml"}, "team In ['ml'] does not match team In ['web']"),
        (node_pool(), {wk.INSTANCE_FAMILY: "x9"}, "instance-family In ['x9']"),
        (node_pool(), {wk.ZONE: "us-west-2a"}, "zone In ['us-west-2a']"),
    ],
    ids=["custom-label-not-defined", "custom-label-other-value", "unknown-family", "zone-not-offered"],
)
def test_a_selector_no_pool_can_satisfy_leaves_the_pod_unschedulable_naming_the_label(
    nodepool: NodePool, selector: dict[str, str], reason: str
) -> None:
    result = run([pod("a", node_selector=selector)], pools=[pool(nodepool)])

    expect_claims(result, 0)
    expect_unschedulable(result, "a", reason_contains=["nodepool default", reason])


def test_required_node_affinity_terms_are_ored_so_the_satisfiable_term_wins() -> None:
    terms = node_terms({wk.ZONE: ["us-west-2a"]}, {wk.INSTANCE_FAMILY: ["r5"]})

    result = run([pod("a", required_terms=terms)])

    claim = claim_of(result, "a")
    assert claim is not None
    assert type_names(claim) == ["r5.large"]


def test_a_pod_whose_every_required_term_fails_is_unschedulable() -> None:
    terms = node_terms({wk.ZONE: ["us-west-2a"]}, {"team": ["ml"]})

    result = run([pod("a", required_terms=terms)])

    expect_unschedulable(result, "a", reason_contains="nodepool default")


@pytest.mark.parametrize(
    ("preference", "expected_zone"),
    [
        (preferred(10, zone=[ZONES[2]]), ZONES[2]),
        (preferred(10, zone=["us-west-2a"]), None),
    ],
    ids=["possible-preference-honoured", "impossible-preference-relaxed"],
)
def test_preferred_node_affinity_is_honoured_when_possible_and_relaxed_when_not(
    preference: PreferredTerm, expected_zone: str | None
) -> None:
    result = run([pod("a", preferred_terms=(preference,))])

    expect_on_claims(result, ["a"])
    claim = claim_of(result, "a")
    assert claim is not None
    if expected_zone is not None:
        assert zone_of(claim) == expected_zone
        assert claim.requirements[wk.ZONE].values == frozenset({expected_zone})


def test_the_heavier_of_two_preferences_wins_when_both_cannot_be_met() -> None:
    light = preferred(1, zone=[ZONES[0]])
    heavy = preferred(50, zone=[ZONES[1]])

    result = run([pod("a", preferred_terms=(light, heavy))])

    claim = claim_of(result, "a")
    assert claim is not None
    assert zone_of(claim) == ZONES[1]


# ---------------------------------------------------------------- architecture and GPUs


@pytest.mark.parametrize(
    ("arch", "expected"),
    [("arm64", {"m6g"}), ("amd64", {"c5", "m5", "r5"})],
    ids=["arm64", "amd64"],
)
def test_a_pod_selecting_an_arch_gets_only_types_of_that_arch_from_a_pool_with_both(
    arch: str, expected: set[str]
) -> None:
    result = run([pod("a", node_selector={wk.ARCH: arch})])

    claim = claim_of(result, "a")
    assert claim is not None
    assert {t.arch for t in claim.options} == {arch}
    assert label_values(claim, wk.INSTANCE_FAMILY) == expected


def test_a_pod_requesting_a_gpu_gets_a_gpu_type() -> None:
    result = run([pod("a", extra={GPU: "1"})])

    claim = claim_of(result, "a")
    assert claim is not None
    assert type_names(claim) == ["g4dn.xlarge"]
    assert claim.requests[GPU] == 1000
    expect_fits(result)


def test_a_pod_requesting_more_gpus_than_any_type_has_is_unschedulable_naming_the_gpu() -> None:
    result = run([pod("a", extra={GPU: "4"})])

    expect_unschedulable(result, "a", reason_contains=["4 nvidia.com/gpu", "the largest has 1"])


def test_a_gpu_pod_and_a_larger_plain_pod_pending_together_both_get_claims() -> None:
    types = [t for t in catalog() if t.name in ("m5.large", "g4dn.xlarge")]

    result = run([pod("plain", cpu="1"), pod("gpu", extra={GPU: "1"})], pools=[pool(types=types)])

    expect_on_claims(result, ["plain", "gpu"])
    plain, gpu = claim_of(result, "plain"), claim_of(result, "gpu")
    assert plain is not None
    assert gpu is not None
    assert "g4dn.xlarge" not in type_names(plain)
    assert type_names(gpu) == ["g4dn.xlarge"]


@pytest.mark.parametrize(
    ("cpu", "memory"),
    [("100m", "128Mi"), ("3", "1Gi"), ("7", "30Gi"), ("1", "15Gi")],
    ids=["tiny", "three-cores", "nearly-the-largest-plain-type", "memory-heavy"],
)
def test_plain_pods_never_get_gpu_or_metal_types_when_another_type_fits(cpu: str, memory: str) -> None:
    result = run([pod("a", cpu=cpu, memory=memory)])

    expect_on_claims(result, ["a"])
    expect_no_exotic_types(result)


def test_a_plain_pod_only_metal_can_hold_gets_the_metal_type() -> None:
    result = run([pod("a", cpu="40")])

    claim = claim_of(result, "a")
    assert claim is not None
    assert type_names(claim) == ["m5.metal"]


# ---------------------------------------------------------------- taints


@pytest.mark.parametrize(
    ("taints", "tolerations", "placed", "reason"),
    [
        ([taint("dedicated", value="ml")], [], False, "taint dedicated=ml:NoSchedule is not tolerated"),
        ([taint("dedicated", "NoExecute")], [], False, "taint dedicated:NoExecute is not tolerated"),
        ([taint("dedicated", value="ml")], [tolerate("dedicated")], True, ""),
        ([taint("dedicated", value="ml")], [Toleration("dedicated", "Equal", "ml", "NoSchedule")], True, ""),
        ([taint("dedicated", value="ml")], [Toleration("dedicated", "Equal", "web")], False, "dedicated=ml"),
        ([taint("dedicated", value="ml")], [Toleration(operator="Exists")], True, ""),
        ([taint("a"), taint("b")], [tolerate("a")], False, "taint b:NoSchedule is not tolerated"),
        ([taint("soft", "PreferNoSchedule")], [], True, ""),
    ],
    ids=[
        "not-tolerated",
        "no-execute-not-tolerated",
        "tolerated-by-exists",
        "tolerated-by-equal",
        "wrong-value",
        "tolerate-everything",
        "one-of-two-tolerated",
        "prefer-no-schedule-relaxed",
    ],
)
def test_pool_taints_admit_only_pods_that_tolerate_them(
    taints: list[Taint], tolerations: list[Toleration], placed: bool, reason: str
) -> None:
    result = run([pod("a", tolerations=tolerations)], pools=[pool(node_pool(taints=taints))])

    if placed:
        expect_on_claims(result, ["a"])
    else:
        expect_claims(result, 0)
        expect_unschedulable(result, "a", reason_contains=reason)


def test_a_prefer_no_schedule_pool_is_avoided_while_an_untainted_pool_can_take_the_pod() -> None:
    soft = node_pool("soft", weight=10, taints=[taint("soft", "PreferNoSchedule")])
    plain = node_pool("plain", weight=1)

    result = run([pod("a")], pools=[pool(soft), pool(plain)])

    claim = claim_of(result, "a")
    assert claim is not None
    assert claim.nodepool == "plain"


def test_startup_taints_need_no_toleration() -> None:
    nodepool = node_pool(startup_taints=(taint("node.cilium.io/agent-not-ready"),))

    result = run([pod("a")], pools=[pool(nodepool)])

    expect_on_claims(result, ["a"])


def test_every_option_of_a_claim_is_of_the_pool_it_belongs_to() -> None:
    only_c5 = node_pool("c5-only", requirements=[requirement(wk.INSTANCE_FAMILY, "In", "c5")])

    result = run([pod("a", cpu="1")], pools=[pool(only_c5, catalog())])

    claim = claim_of(result, "a")
    assert claim is not None
    assert claim.nodepool == "c5-only"
    assert type_names(claim) == ["c5.large", "c5.xlarge"]
    assert claim.requirements[wk.NODEPOOL].has("c5-only")
