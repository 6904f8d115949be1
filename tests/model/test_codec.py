"""Node claims to JSON-safe dicts and back (nodewright.model.codec): lossless, readable, strict."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nodewright.model import labels as wk
from nodewright.model.codec import SCHEMA, claim_from_dict, claim_to_dict
from nodewright.model.errors import InvalidValue
from nodewright.model.nodeclaim import STATES, NodeClaim
from nodewright.model.requirements import Requirement, Requirements
from nodewright.model.resources import Resources
from nodewright.model.taints import EFFECTS, Taint


def full_claim() -> NodeClaim:
    return NodeClaim(
        name="default-abc12",
        nodepool="default",
        node_class="gpu",
        requirements=Requirements(
            [
                Requirement.new(wk.CAPACITY_TYPE, "In", ["spot", "on-demand"]),
                Requirement.new(wk.ZONE, "NotIn", ["us-east-1c"]),
                Requirement.new(wk.INSTANCE_CPU, "Gt", ["4"], min_values=2)
                .intersection(Requirement.new(wk.INSTANCE_CPU, "Lt", ["33"]))
                .intersection(Requirement.new(wk.INSTANCE_CPU, "NotIn", ["8"])),
                Requirement.new("team", "DoesNotExist"),
                Requirement.new(wk.ARCH, "Exists"),
            ]
        ),
        instance_type_options=("m5.xlarge", "m5.2xlarge"),
        requests=Resources({"cpu": 3500, "memory": 8 * 2**30 * 1000, "pods": 7000, "nvidia.com/gpu": 0}),
        pods=("default/web-1", "default/web-2"),
        labels={"team": "a", wk.NW_NODEPOOL: "default"},
        taints=(Taint("dedicated", "NoSchedule", "gpu"),),
        startup_taints=(Taint("node.cilium.io/agent-not-ready", "NoExecute"),),
        state="launched",
        instance_type="m5.xlarge",
        capacity_type="spot",
        zone="us-east-1a",
        price=0.0713,
        instance_id="i-0123",
        provider_id="aws:///us-east-1a/i-0123",
        node_name="ip-10-0-0-1.ec2.internal",
        created_at=1_700_000_000.25,
        launched_at=1_700_000_001.5,
        registered_at=1_700_000_030.0,
        initialized_at=1_700_000_045.125,
        reason="provisioning",
    )


def test_a_claim_with_every_field_set_survives_a_trip_through_json() -> None:
    claim = full_claim()
    again = claim_from_dict(json.loads(json.dumps(claim_to_dict(claim))))
    assert again == claim
    # Resources equality ignores zeros; the record must not.
    assert dict(again.requests) == dict(claim.requests)


def test_the_record_is_readable_json_in_kubernetes_forms() -> None:
    data = claim_to_dict(full_claim())
    assert data["schema"] == SCHEMA
    assert data["requests"] == {"cpu": 3500, "memory": 8 * 2**30 * 1000, "nvidia.com/gpu": 0, "pods": 7000}
    assert data["taints"] == [{"key": "dedicated", "effect": "NoSchedule", "value": "gpu"}]
    assert {"key": wk.ZONE, "operator": "NotIn", "values": ["us-east-1c"]} in data["requirements"]
    assert list(data["labels"]) == sorted(data["labels"])


def test_a_minimal_claim_keeps_its_defaults() -> None:
    claim = NodeClaim(name="c", nodepool="p")
    assert claim_from_dict(claim_to_dict(claim)) == claim


def test_a_record_missing_optional_fields_reads_with_the_defaults() -> None:
    assert claim_from_dict({"name": "c", "nodepool": "p"}) == NodeClaim(name="c", nodepool="p")


def test_an_integer_time_from_another_writer_reads_as_a_float() -> None:
    claim = claim_from_dict({"name": "c", "nodepool": "p", "created_at": 17})
    assert claim.created_at == 17.0
    assert isinstance(claim.created_at, float)


def test_the_decoded_labels_are_a_copy_so_the_record_cannot_be_changed_through_them() -> None:
    data = claim_to_dict(full_claim())
    claim = claim_from_dict(data)
    claim.labels["team"] = "b"
    assert data["labels"]["team"] == "a"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        pytest.param({"schema": 2}, "schema", id="unknown-schema"),
        pytest.param({"name": None}, "name", id="no-name"),
        pytest.param({"nodepool": 3}, "nodepool", id="nodepool-not-a-string"),
        pytest.param({"price": "cheap"}, "price", id="price-not-a-number"),
        pytest.param({"created_at": True}, "created_at", id="time-is-a-bool"),
        pytest.param({"requests": {"cpu": 1.5}}, "requests.cpu", id="fractional-milli-units"),
        pytest.param({"requests": ["cpu"]}, "requests", id="requests-not-a-map"),
        pytest.param({"labels": {"a": 1}}, "labels", id="label-value-not-a-string"),
        pytest.param({"pods": "default/web"}, "pods", id="pods-not-a-list"),
        pytest.param({"pods": [1]}, "pods", id="pod-not-a-string"),
        pytest.param({"taints": [{"key": "k", "effect": "Sometimes"}]}, "taints", id="bad-taint-effect"),
        pytest.param({"taints": ["k:NoSchedule"]}, "taints", id="taint-not-a-map"),
        pytest.param({"requirements": [{"key": "k", "operator": "Near"}]}, "requirements", id="bad-operator"),
        pytest.param({"requirements": [{"operator": "Exists"}]}, "requirements", id="requirement-without-key"),
        pytest.param({"requirements": ["k"]}, "requirements", id="requirement-not-a-map"),
    ],
)
def test_a_damaged_record_is_refused_naming_the_field(change: dict[str, Any], message: str) -> None:
    data = {**claim_to_dict(full_claim()), **change}
    with pytest.raises(InvalidValue, match=message):
        claim_from_dict(data)


# ---------------------------------------------------------------- properties

_text = st.text(min_size=1, max_size=12)
_keys = st.sampled_from(["k", wk.ZONE, wk.CAPACITY_TYPE, wk.INSTANCE_CPU, "example.com/team"])
_values = st.lists(st.sampled_from(["1", "4", "8", "12", "a", "us-east-1a", "spot"]), max_size=4)
_bound = st.integers(min_value=-4, max_value=16).map(str)
_min_values = st.none() | st.integers(min_value=1, max_value=5)


def _requirement(key: str, operator: str, values: list[str], min_values: int | None) -> Requirement:
    if operator in ("Gt", "Lt", "Gte", "Lte"):
        values = values[:1] or ["4"]
        values = [v if v.lstrip("-").isdigit() else "4" for v in values]
    return Requirement.new(key, operator, values, min_values)


_single = st.builds(
    _requirement,
    _keys,
    st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"]),
    _values | _bound.map(lambda b: [b]),
    _min_values,
)
# Requirements() intersects requirements of one key, so this also yields the normal forms that
# intersections produce (windows with holes, empty sets, bounded NotIn).
_requirements = st.lists(_single, max_size=6).map(Requirements)
_taint = st.builds(Taint, _text, st.sampled_from(EFFECTS), st.sampled_from(["", "x", "gpu"]))
_finite = st.floats(allow_nan=False, allow_infinity=False)

claims = st.builds(
    NodeClaim,
    name=_text,
    nodepool=_text,
    node_class=_text,
    requirements=_requirements,
    instance_type_options=st.lists(_text, max_size=4).map(tuple),
    requests=st.dictionaries(
        st.sampled_from(["cpu", "memory", "pods", "nvidia.com/gpu"]), st.integers(-(2**62), 2**62)
    ).map(Resources),
    pods=st.lists(_text, max_size=4).map(tuple),
    labels=st.dictionaries(_text, st.text(max_size=8), max_size=4),
    taints=st.lists(_taint, max_size=3).map(tuple),
    startup_taints=st.lists(_taint, max_size=3).map(tuple),
    state=st.sampled_from(STATES),
    instance_type=st.text(max_size=12),
    capacity_type=st.sampled_from(["", "spot", "on-demand", "reserved"]),
    zone=st.text(max_size=12),
    price=_finite,
    instance_id=st.text(max_size=12),
    provider_id=st.text(max_size=12),
    node_name=st.text(max_size=12),
    created_at=_finite,
    launched_at=_finite,
    registered_at=_finite,
    initialized_at=_finite,
    reason=st.text(max_size=12),
)


@given(claims)
def test_every_claim_survives_a_trip_through_json_unchanged(claim: NodeClaim) -> None:
    again = claim_from_dict(json.loads(json.dumps(claim_to_dict(claim))))
    assert again == claim
    assert dict(again.requests) == dict(claim.requests)
    for key, requirement in claim.requirements.items():
        assert again.requirements[key].min_values == requirement.min_values


@given(claims)
def test_encoding_is_stable_so_equal_claims_give_identical_records(claim: NodeClaim) -> None:
    once = json.dumps(claim_to_dict(claim))
    again = json.dumps(claim_to_dict(claim_from_dict(json.loads(once))))
    assert again == once
