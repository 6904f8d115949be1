"""Requirement algebra: decision tables for every operator, and properties of intersection."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nodewright.model import labels as wk
from nodewright.model.errors import InvalidValue
from nodewright.model.requirements import Requirement, Requirements, label_matches

# Values a node label could take in these tables: words, numbers, and one of each sign.
SAMPLES = ("a", "b", "c", "x", "", "-3", "0", "3", "4", "5", "6", "7", "8", "9", "10", "12")


def req(operator: str, *values: str, key: str = "k", min_values: int | None = None) -> Requirement:
    return Requirement.new(key, operator, values, min_values)


def allowed(requirement: Requirement) -> set[str]:
    return {v for v in SAMPLES if requirement.has(v)}


# ---------------------------------------------------------------- single operators


@pytest.mark.parametrize(
    ("requirement", "values", "absent_ok"),
    [
        (req("In", "a", "b"), {"a", "b"}, False),
        (req("NotIn", "a"), set(SAMPLES) - {"a"}, True),
        (req("Exists"), set(SAMPLES), False),
        (req("DoesNotExist"), set(), True),
        (req("Gt", "4"), {"5", "6", "7", "8", "9", "10", "12"}, False),
        (req("Gte", "4"), {"4", "5", "6", "7", "8", "9", "10", "12"}, False),
        (req("Lt", "4"), {"-3", "0", "3"}, False),
        (req("Lte", "4"), {"-3", "0", "3", "4"}, False),
    ],
    ids=["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Gte", "Lt", "Lte"],
)
def test_each_operator_admits_exactly_its_values(requirement: Requirement, values: set[str], absent_ok: bool) -> None:
    assert allowed(requirement) == values
    assert requirement.allows_absent() is absent_ok


@pytest.mark.parametrize(
    ("operator", "values"),
    [("Gt", ()), ("Gt", ("a",)), ("Lt", ("1", "2")), ("Gte", ("1.5",)), ("Equals", ("a",))],
    ids=["gt-without-value", "gt-not-a-number", "lt-two-values", "gte-fraction", "unknown-operator"],
)
def test_malformed_requirements_are_rejected(operator: str, values: tuple[str, ...]) -> None:
    with pytest.raises(InvalidValue, match=operator if operator != "Equals" else "is not one of"):
        Requirement.new("k", operator, values)


# ---------------------------------------------------------------- intersection


@pytest.mark.parametrize(
    ("left", "right", "values"),
    [
        (req("In", "a", "b"), req("In", "b", "c"), {"b"}),
        (req("In", "a"), req("In", "b"), set()),
        (req("In", "a", "b"), req("NotIn", "a"), {"b"}),
        (req("NotIn", "a"), req("NotIn", "b"), set(SAMPLES) - {"a", "b"}),
        (req("Exists"), req("In", "a"), {"a"}),
        (req("Exists"), req("NotIn", "a"), set(SAMPLES) - {"a"}),
        (req("Exists"), req("DoesNotExist"), set()),
        (req("DoesNotExist"), req("DoesNotExist"), set()),
        (req("DoesNotExist"), req("NotIn", "a"), set()),
        (req("In", "3", "5", "9"), req("Gt", "4"), {"5", "9"}),
        (req("In", "a", "5"), req("Gt", "4"), {"5"}),
        (req("Gt", "4"), req("Lt", "8"), {"5", "6", "7"}),
        (req("Gte", "4"), req("Lte", "4"), {"4"}),
        (req("Gt", "4"), req("Lt", "5"), set()),
        (req("Gt", "8"), req("Lt", "4"), set()),
        (req("Gt", "4"), req("Gt", "6"), {"7", "8", "9", "10", "12"}),
        (req("Lt", "4"), req("Lte", "0"), {"-3", "0"}),
        (req("Gt", "4"), req("NotIn", "6", "a"), {"5", "7", "8", "9", "10", "12"}),
        (req("Gt", "4"), req("In", "a"), set()),
        (req("Lt", "9"), req("Exists"), {"-3", "0", "3", "4", "5", "6", "7", "8"}),
    ],
    ids=[
        "in-in-overlap",
        "in-in-disjoint",
        "in-notin",
        "notin-notin",
        "exists-in",
        "exists-notin",
        "exists-doesnotexist",
        "doesnotexist-doesnotexist",
        "doesnotexist-notin",
        "in-gt",
        "in-words-gt",
        "gt-lt-window",
        "gte-lte-single",
        "gt-lt-no-integer-between",
        "gt-lt-crossed",
        "gt-gt-tighter",
        "lt-lte-tighter",
        "gt-notin",
        "gt-in-word",
        "lt-exists",
    ],
)
def test_intersection_admits_what_both_admit(left: Requirement, right: Requirement, values: set[str]) -> None:
    assert allowed(left.intersection(right)) == values
    assert allowed(right.intersection(left)) == values


def test_disjoint_sets_intersect_to_an_empty_requirement() -> None:
    assert req("In", "a").intersection(req("In", "b")).is_empty()
    assert req("Gt", "4").intersection(req("Lt", "5")).is_empty()
    assert req("Exists").intersection(req("DoesNotExist")).is_empty()
    assert not req("NotIn", "a").intersection(req("NotIn", "b")).is_empty()


@pytest.mark.parametrize(
    ("left", "right", "expected"),
    [
        (None, None, None),
        (2, None, 2),
        (None, 3, 3),
        (2, 5, 5),
        (5, 2, 5),
    ],
    ids=["neither", "left-only", "right-only", "right-larger", "left-larger"],
)
def test_min_values_survive_intersection_as_the_larger_of_the_two(
    left: int | None, right: int | None, expected: int | None
) -> None:
    merged = req("In", "a", "b", "c", min_values=left).intersection(req("Exists", min_values=right))
    assert merged.min_values == expected


def test_min_values_survive_an_empty_bounded_intersection_and_appear_in_the_manifest() -> None:
    assert req("Gt", "4", min_values=3).intersection(req("Lt", "5")).min_values == 3
    manifest = req("In", "m5", "c5", key=wk.INSTANCE_FAMILY, min_values=2).to_manifest()
    assert manifest == {"key": wk.INSTANCE_FAMILY, "operator": "In", "values": ["c5", "m5"], "minValues": 2}


def test_requirements_on_the_same_key_are_intersected_when_collected() -> None:
    merged = Requirements.parse(
        [
            {"key": wk.INSTANCE_FAMILY, "operator": "In", "values": ["m5", "c5", "r5"], "minValues": 2},
            {"key": wk.INSTANCE_FAMILY, "operator": "NotIn", "values": ["r5"]},
        ]
    )
    assert merged[wk.INSTANCE_FAMILY].values == frozenset({"m5", "c5"})
    assert merged[wk.INSTANCE_FAMILY].min_values == 2


def test_the_intersection_of_requirement_sets_keeps_every_key() -> None:
    pool = Requirements.parse([{"key": wk.ARCH, "operator": "In", "values": ["amd64", "arm64"]}])
    pod = Requirements.parse(
        [
            {"key": wk.ARCH, "operator": "In", "values": ["arm64"]},
            {"key": wk.ZONE, "operator": "In", "values": ["us-east-1a"]},
        ]
    )
    merged = pool.intersection(pod)
    assert merged.labels() == {wk.ARCH: "arm64", wk.ZONE: "us-east-1a"}
    assert pool.intersection(Requirements()) is pool
    assert Requirements().intersection(pod) is pod


# ---------------------------------------------------------------- compatibility


@pytest.mark.parametrize(
    ("node_side", "pod_side", "compatible"),
    [
        ([("In", "a", "b")], [("In", "b")], True),
        ([("In", "a")], [("In", "b")], False),
        ([("In", "a")], [("NotIn", "a")], False),
        ([("In", "a")], [("Exists",)], True),
        ([("In", "a")], [("DoesNotExist",)], False),
        ([("DoesNotExist",)], [("NotIn", "a")], True),
        ([("DoesNotExist",)], [("DoesNotExist",)], True),
        ([("NotIn", "a")], [("DoesNotExist",)], True),
        ([("DoesNotExist",)], [("Exists",)], False),
        ([("DoesNotExist",)], [("In", "a")], False),
        ([("In", "5", "9")], [("Gt", "6")], True),
        ([("In", "5")], [("Gt", "6")], False),
        ([("Gt", "4")], [("Lt", "5")], False),
        ([("Exists",)], [("Lte", "5")], True),
    ],
    ids=[
        "in-overlap",
        "in-disjoint",
        "in-vs-notin-same",
        "in-vs-exists",
        "in-vs-doesnotexist",
        "absent-vs-notin",
        "absent-vs-absent",
        "notin-vs-absent",
        "absent-vs-exists",
        "absent-vs-in",
        "in-vs-gt-overlap",
        "in-vs-gt-disjoint",
        "gt-vs-lt-disjoint",
        "exists-vs-lte",
    ],
)
def test_requirements_on_a_shared_key_are_compatible_when_a_value_survives(
    node_side: list[tuple[str, ...]], pod_side: list[tuple[str, ...]], compatible: bool
) -> None:
    nodes = Requirements(req(op, *vals, key="team") for op, *vals in node_side)
    pods = Requirements(req(op, *vals, key="team") for op, *vals in pod_side)
    assert nodes.compatible(pods) is compatible
    assert (nodes.conflicts(pods) == []) is compatible


@pytest.mark.parametrize(
    ("key", "operator", "values", "compatible"),
    [
        (wk.ZONE, "In", ("us-east-1a",), True),
        (wk.INSTANCE_FAMILY, "NotIn", ("t3",), True),
        (wk.CAPACITY_TYPE, "Exists", (), True),
        (wk.INSTANCE_CPU, "Gt", ("4",), True),
        (wk.ARCH, "DoesNotExist", (), True),
        ("example.com/team", "In", ("ml",), False),
        ("example.com/team", "Exists", (), False),
        ("example.com/team", "Gt", ("1",), False),
        ("example.com/team", "NotIn", ("ml",), True),
        ("example.com/team", "DoesNotExist", (), True),
    ],
    ids=[
        "well-known-in",
        "well-known-notin",
        "well-known-exists",
        "well-known-gt",
        "well-known-doesnotexist",
        "custom-in",
        "custom-exists",
        "custom-gt",
        "custom-notin",
        "custom-doesnotexist",
    ],
)
def test_a_key_only_the_pod_names_is_allowed_when_well_known_or_satisfied_by_absence(
    key: str, operator: str, values: tuple[str, ...], compatible: bool
) -> None:
    pool = Requirements([req("In", "amd64", key=wk.ARCH)]) if key != wk.ARCH else Requirements()
    pods = Requirements([Requirement.new(key, operator, values)])
    assert pool.compatible(pods) is compatible


def test_conflicts_explain_what_does_not_match() -> None:
    pool = Requirements([req("In", "on-demand", key=wk.CAPACITY_TYPE)])
    pods = Requirements([req("In", "spot", key=wk.CAPACITY_TYPE), req("In", "ml", key="example.com/team")])
    problems = pool.conflicts(pods)
    assert len(problems) == 2
    assert "spot" in problems[0]
    assert "on-demand" in problems[0]
    assert "example.com/team" in problems[1]


def test_custom_keys_can_be_allowed_explicitly() -> None:
    pods = Requirements([req("In", "ml", key="example.com/team")])
    assert Requirements().compatible(pods, allow_undefined=frozenset({"example.com/team"}))


@pytest.mark.parametrize(
    ("labels", "matches"),
    [
        ({wk.ARCH: "amd64", "team": "ml"}, True),
        ({wk.ARCH: "arm64", "team": "ml"}, False),
        ({wk.ARCH: "amd64"}, False),
        ({wk.ARCH: "amd64", "team": "ml", "spot-only": "yes"}, False),
    ],
    ids=["all-match", "wrong-value", "missing-required-label", "forbidden-label-present"],
)
def test_label_matches_reads_a_nodes_labels_against_requirements(labels: dict[str, str], matches: bool) -> None:
    requirements = Requirements(
        [req("In", "amd64", key=wk.ARCH), req("Exists", key="team"), req("DoesNotExist", key="spot-only")]
    )
    assert label_matches(requirements, labels) is matches


# ---------------------------------------------------------------- round trips


def test_requirements_print_as_kubernetes_manifests_sorted_by_key() -> None:
    requirements = Requirements.parse(
        [
            {"key": wk.ZONE, "operator": "NotIn", "values": ["us-east-1c"]},
            {"key": wk.ARCH, "operator": "Exists"},
            {"key": wk.INSTANCE_CPU, "operator": "Gt", "values": ["4"]},
        ]
    )
    assert requirements.to_manifest() == [
        {"key": wk.INSTANCE_CPU, "operator": "Gt", "values": ["4"]},
        {"key": wk.ARCH, "operator": "Exists"},
        {"key": wk.ZONE, "operator": "NotIn", "values": ["us-east-1c"]},
    ]
    assert Requirements.parse(requirements.to_manifest()) == requirements


# ---------------------------------------------------------------- properties

_values = st.lists(st.sampled_from(SAMPLES[:-2]), max_size=4)
_bound = st.integers(min_value=-4, max_value=12).map(str)
requirements = st.one_of(
    st.builds(lambda vs: req("In", *vs), _values),
    st.builds(lambda vs: req("NotIn", *vs), _values),
    st.just(req("Exists")),
    st.just(req("DoesNotExist")),
    st.builds(req, st.sampled_from(["Gt", "Lt", "Gte", "Lte"]), _bound),
)
probes = st.sampled_from([*SAMPLES, "11", "-4", "100", "zz"])


@given(requirements, requirements, probes)
def test_intersection_is_commutative_in_meaning(a: Requirement, b: Requirement, value: str) -> None:
    assert a.intersection(b).has(value) == b.intersection(a).has(value)


@given(requirements, requirements, probes)
def test_intersection_is_idempotent_in_meaning(a: Requirement, b: Requirement, value: str) -> None:
    assert a.intersection(a).has(value) == a.has(value)
    once = a.intersection(b)
    assert once.intersection(b).has(value) == once.has(value)


@given(requirements, requirements, probes)
def test_a_value_is_in_the_intersection_exactly_when_both_admit_it(a: Requirement, b: Requirement, value: str) -> None:
    assert a.intersection(b).has(value) == (a.has(value) and b.has(value))


@given(requirements, requirements, requirements, probes)
def test_intersection_is_associative_in_meaning(a: Requirement, b: Requirement, c: Requirement, value: str) -> None:
    assert a.intersection(b).intersection(c).has(value) == a.intersection(b.intersection(c)).has(value)


@given(requirements, requirements, probes)
def test_an_empty_intersection_admits_nothing(a: Requirement, b: Requirement, value: str) -> None:
    both = a.intersection(b)
    if both.is_empty():
        assert not both.has(value)


nested = st.recursive(requirements, lambda inner: st.builds(Requirement.intersection, inner, inner), max_leaves=4)


@given(nested, nested, probes)
def test_intersections_of_intersections_still_admit_exactly_what_all_parts_admit(
    a: Requirement, b: Requirement, value: str
) -> None:
    assert a.intersection(b).has(value) == (a.has(value) and b.has(value))


@given(nested, probes)
def test_requirements_survive_a_round_trip_through_their_manifest(a: Requirement, value: str) -> None:
    again = Requirements.parse(Requirements([a]).to_manifest())
    assert again.get_or_exists("k").has(value) == a.has(value)
    assert again.get_or_exists("k").min_values == a.min_values


def test_a_window_with_a_hole_prints_as_every_operator_it_needs() -> None:
    window = req("Gt", "4", min_values=2).intersection(req("Lt", "8")).intersection(req("NotIn", "6"))
    assert Requirements([window]).to_manifest() == [
        {"key": "k", "operator": "Gt", "values": ["4"], "minValues": 2},
        {"key": "k", "operator": "Lt", "values": ["8"]},
        {"key": "k", "operator": "NotIn", "values": ["6"]},
    ]
