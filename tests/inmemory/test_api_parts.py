"""The API emulator's pure parts: kube's HumanDuration, printer-column JSONPath, selectors,
patches and a CRD schema's admission, each against the behaviour kube-apiserver documents.
"""

from __future__ import annotations

import json

import pytest

from nodewright.inmemory.apipatch import APPLY_PATCH, JSON_PATCH, STRATEGIC_MERGE_PATCH, patched
from nodewright.inmemory.apischema import admit
from nodewright.inmemory.apiselect import SelectorError, label_requirements, selectable
from nodewright.inmemory.apitables import human_duration, jsonpath, wants_table
from nodewright.inmemory.apiwire import Failure


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(-5, "<invalid>"), (0, "0s"), (119, "119s"), (125, "2m5s"), (600, "10m"), (3 * 3600 + 60, "3h1m"),
     (10 * 3600, "10h"), (50 * 3600, "2d2h"), (30 * 86400, "30d"), (3 * 365 * 86400, "3y")],
)  # fmt: skip
def test_ages_read_as_kubectl_prints_them(seconds: float, shown: str) -> None:
    assert human_duration(seconds) == shown


def test_printer_column_paths() -> None:
    claim = {
        "metadata": {"labels": {"node.kubernetes.io/instance-type": "m5.large"}},
        "status": {"conditions": [{"type": "Drifted", "status": "False"}, {"type": "Ready", "status": "True"}]},
    }
    assert jsonpath(claim, r".metadata.labels.node\.kubernetes\.io/instance-type") == "m5.large"
    assert jsonpath(claim, '.status.conditions[?(@.type=="Ready")].status') == "True"
    assert jsonpath(claim, ".status.conditions[0].type") == "Drifted"
    assert jsonpath(claim, ".status.nodeName") is None


def test_kubectls_accept_header_asks_for_a_table() -> None:
    accept = (
        "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,"
        "application/json"
    )
    assert wants_table(accept)
    assert not wants_table("application/json")


def test_label_selectors() -> None:
    values = selectable((), {"metadata": {"labels": {"app": "web", "tier": "front"}}})

    def selected(text: str) -> bool:
        return all(term.matches(values) for term in label_requirements(text))

    assert selected("app=web,tier")
    assert selected("app in (web, api),!gpu")
    assert selected("app notin (api),gpu!=true")
    assert not selected("app=api")
    assert not selected("!tier")
    with pytest.raises(SelectorError):
        label_requirements("app=(web")


def test_the_four_patch_types() -> None:
    node = {"metadata": {"labels": {"a": "1"}}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    strategic = {"status": {"conditions": [{"type": "Disk", "status": "False"}]}, "$setElementOrder/x": []}
    merged = patched(node, STRATEGIC_MERGE_PATCH, json.dumps(strategic).encode(), {("status", "conditions"): "type"})
    assert [c["type"] for c in merged["status"]["conditions"]] == ["Ready", "Disk"]
    removed = patched(node, JSON_PATCH, b'[{"op":"remove","path":"/metadata/labels/a"}]', {})
    assert removed["metadata"]["labels"] == {}
    assert node["metadata"]["labels"] == {"a": "1"}  # the stored object is not changed in place
    applied = patched(node, APPLY_PATCH, b"metadata:\n  labels: {b: '2'}\n", {})
    assert applied["metadata"]["labels"] == {"a": "1", "b": "2"}
    with pytest.raises(Failure) as refused:
        patched(node, "text/plain", b"{}", {})
    assert refused.value.code == 415
    with pytest.raises(Failure) as directive:
        patched(node, STRATEGIC_MERGE_PATCH, b'{"metadata":{"$patch":"replace"}}', {})
    assert directive.value.code == 422


def test_a_schema_defaults_prunes_and_validates() -> None:
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "required": ["template"],
                "properties": {
                    "weight": {"type": "integer", "minimum": 1, "maximum": 100},
                    "policy": {"type": "string", "enum": ["A", "B"], "default": "A"},
                    "template": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                },
            }
        },
    }
    obj = {"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "n"}, "spec": {"template": {"any": 1}, "extra": 2}}
    admitted, errors = admit(schema, obj, strict=False)
    assert errors == []
    assert admitted["spec"] == {"template": {"any": 1}, "policy": "A"}
    _, strict = admit(schema, obj, strict=True)
    assert strict == ['unknown field "spec.extra"']
    _, invalid = admit(schema, {"spec": {"weight": 0, "policy": "C"}}, strict=False)
    assert invalid == [
        "spec.weight: Invalid value: 0: spec.weight in body should be greater than or equal to 1",
        'spec.policy: Unsupported value: "C": supported values: "A", "B"',
        "spec.template: Required value",
    ]
