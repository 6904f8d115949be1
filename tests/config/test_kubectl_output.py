"""What `kubectl get -o yaml` / `-o json` prints is input: a `kind: List` (or `NodePoolList`, any
`*List`) stands for each of its items, JSON reads like YAML, and the fields the server writes
(`status`, `managedFields`, `uid`, `resourceVersion`, `creationTimestamp`, `generation`, the
last-applied annotation) pass without a warning and are left out of the stored form.

The fixtures in fixtures/kubectl/ are written to look like real `kubectl get` output of a cluster
running Karpenter; nothing in them was edited for Nodewright.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from nodewright.config.documents import parse_manifest
from nodewright.config.files import read_paths
from nodewright.config.stream import parse_yaml
from nodewright.config.workloads import read_workloads
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodepool import NodePool

KUBECTL = Path(__file__).parent / "fixtures" / "kubectl"
NODEPOOLS = KUBECTL / "nodepools.yaml"
NODECLASSES = KUBECTL / "ec2nodeclasses.json"
DEPLOYMENTS = KUBECTL / "deployments.json"
SERVER_METADATA = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields")


def nodepool(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                    "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}],
                }
            },
            **spec,
        },
    }


def test_kubectl_get_nodepools_yaml_validates_without_a_warning() -> None:
    loaded = read_paths([NODEPOOLS])

    assert (loaded.problems, loaded.warnings) == ((), ())
    assert [d.key for d in loaded.documents] == ["NodePool/default", "NodePool/gpu"]
    gpu = loaded.documents[1].model
    assert isinstance(gpu, NodePool)
    assert (gpu.weight, gpu.labels, gpu.taints[0].key) == (10, {"workload": "gpu"}, "nvidia.com/gpu")


def test_kubectl_get_ec2nodeclasses_json_validates_without_a_warning() -> None:
    loaded = read_paths([NODECLASSES])

    assert (loaded.problems, loaded.warnings) == ((), ())
    (document,) = loaded.documents
    assert isinstance(document.model, EC2NodeClass)
    assert str(document.model.alias) == "al2023@latest"
    assert document.line == 4  # the line the item's object opens on


@pytest.mark.parametrize("path", [NODEPOOLS, NODECLASSES], ids=lambda p: p.name)
def test_the_stored_form_leaves_out_what_the_server_wrote(path: Path) -> None:
    for document in read_paths([path]).documents:
        manifest = document.to_manifest()

        assert "status" not in manifest
        assert not set(SERVER_METADATA) & set(manifest["metadata"])
        assert "kubectl.kubernetes.io/last-applied-configuration" not in manifest["metadata"].get("annotations", {})
        reread = parse_yaml(document.to_yaml(), "again.yaml")
        assert [d.model for d in reread.require()] == [dataclasses.replace(document.model, resource_version="")]


def test_a_problem_in_a_list_item_names_the_file_line_item_and_field() -> None:
    text = NODEPOOLS.read_text().replace("    weight: 10\n", "    weight: 101\n")

    loaded = parse_yaml(text, "nodepools.yaml")

    line = text.splitlines().index("    weight: 101") + 1
    assert [str(p) for p in loaded.problems] == [
        f"nodepools.yaml:{line}: NodePool/gpu: spec.weight: must be at most 100, got 101"
    ]
    assert [d.key for d in loaded.documents] == ["NodePool/default"]  # shown, but the set is refused
    assert not loaded.ok


def test_a_problem_in_json_names_its_line() -> None:
    text = NODECLASSES.read_text().replace('"httpTokens": "required"', '"httpTokens": "sometimes"')

    loaded = parse_yaml(text, "ec2nodeclasses.json")

    line = next(n for n, row in enumerate(text.splitlines(), 1) if '"httpTokens": "sometimes"' in row)
    assert [str(p) for p in loaded.problems] == [
        f'ec2nodeclasses.json:{line}: EC2NodeClass/default: spec.metadataOptions.httpTokens: "sometimes" is not '
        "one of required, optional"
    ]


def test_an_unknown_field_in_a_json_list_item_is_a_warning_with_its_line() -> None:
    body = {"apiVersion": "v1", "kind": "List", "items": [nodepool("a", wieght=5)], "metadata": {}}
    text = json.dumps(body, indent=2)

    loaded = parse_yaml(text, "pools.json")

    line = next(n for n, row in enumerate(text.splitlines(), 1) if '"wieght"' in row)
    assert [str(w) for w in loaded.warnings] == [
        f'pools.json:{line}: warning: NodePool/a: spec.wieght: unknown field, ignored (did you mean "weight"?)'
    ]
    assert loaded.ok


def test_broken_json_is_reported_as_json_with_its_line() -> None:
    loaded = parse_yaml('{\n  "apiVersion": "v1",\n  "kind": "List"\n  "items": []\n}\n', "list.json")

    (problem,) = loaded.problems
    assert str(problem) == "list.json:4: document #1: invalid JSON: Expecting ',' delimiter (column 3)"


def test_items_of_a_typed_list_from_the_api_take_its_kind_and_api_version() -> None:
    """`kubectl get --raw /apis/karpenter.sh/v1/nodepools` returns a NodePoolList whose items have neither."""
    items = [{k: v for k, v in nodepool(name).items() if k in ("metadata", "spec")} for name in ("a", "b")]
    body = {"apiVersion": "karpenter.sh/v1", "kind": "NodePoolList", "metadata": {"continue": ""}, "items": items}

    loaded = parse_manifest(body, source="raw.json")

    assert [(d.key, d.api_version) for d in loaded.require()] == [
        ("NodePool/a", "karpenter.sh/v1"),
        ("NodePool/b", "karpenter.sh/v1"),
    ]
    assert loaded.warnings == ()


def test_a_list_of_several_kinds_yields_every_item() -> None:
    nodeclass = yaml.safe_load(NODECLASSES.read_text())["items"][0]
    body = {"apiVersion": "v1", "kind": "List", "items": [nodepool("a"), nodeclass, nodepool("b")]}

    loaded = parse_manifest(body, source="all.yaml")

    assert [d.key for d in loaded.require()] == ["NodePool/a", "EC2NodeClass/default", "NodePool/b"]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param({"apiVersion": "v1", "kind": "List"}, ["List #1: items: is required"], id="no-items"),
        pytest.param(
            {"apiVersion": "v1", "kind": "List", "items": {"a": 1}},
            ['List #1: items: must be a list, got object {"a": 1}'],
            id="items-not-a-list",
        ),
        pytest.param(
            {"apiVersion": "v1", "kind": "List", "items": [{"kind": "NodePool", "metadata": {}}]},
            ["NodePool #1 items[0]: apiVersion: is required", "NodePool #1 items[0]: metadata.name: is required"],
            id="unnamed-item",
        ),
        pytest.param(
            {"apiVersion": "v1", "kind": "List", "items": ["NodePool/a"]},
            ['document #1 items[0]: must be an object, got string "NodePool/a"'],
            id="item-not-an-object",
        ),
        pytest.param(
            {"apiVersion": "v1", "kind": "List", "items": [{"kind": "List", "items": []}]},
            ["List #1: items[0].kind: a list inside a list's items is not supported"],
            id="nested-list",
        ),
        pytest.param(
            {"apiVersion": "v1", "kind": "DeploymentList", "items": [{"metadata": {"name": "web"}}]},
            [
                'Deployment/web: kind: "Deployment" is not one of NodePool, EC2NodeClass, NodeOverlay, '
                "CapacityBuffer, PodTemplate"
            ],
            id="other-kinds-are-not-configuration",
        ),
    ],
)
def test_a_malformed_list_is_reported_naming_the_list_or_the_item(body: Any, expected: list[str]) -> None:
    loaded = parse_manifest(body, source="list.yaml")

    assert [p.detail for p in loaded.problems] == expected
    assert loaded.documents == ()


def test_an_unknown_field_of_the_list_itself_is_a_warning() -> None:
    body = {"apiVersion": "v1", "kind": "List", "items": [nodepool("a")], "itmes": []}

    loaded = parse_manifest(body, source="list.yaml")

    assert [w.detail for w in loaded.warnings] == ['List #1: itmes: unknown field, ignored (did you mean "items"?)']
    assert [d.key for d in loaded.require()] == ["NodePool/a"]


def test_a_json_file_in_a_directory_is_read_as_kubectl_apply_reads_it(tmp_path: Path) -> None:
    (tmp_path / "pools.yaml").write_text(NODEPOOLS.read_text())
    (tmp_path / "classes.json").write_text(NODECLASSES.read_text())

    loaded = read_paths([tmp_path])

    assert sorted(d.key for d in loaded.require()) == ["EC2NodeClass/default", "NodePool/default", "NodePool/gpu"]


def test_the_same_nodepool_in_a_list_and_in_a_file_is_defined_twice(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(NODEPOOLS.read_text())
    (tmp_path / "b.yaml").write_text(yaml.safe_dump(nodepool("gpu")))

    loaded = read_paths([tmp_path])

    starts = [
        n for n, row in enumerate(NODEPOOLS.read_text().splitlines(), 1) if row == "- apiVersion: karpenter.sh/v1"
    ]
    assert [p.detail for p in loaded.problems] == [
        f"NodePool/gpu: metadata.name: NodePool/gpu is defined more than once (first in {tmp_path}/a.yaml:{starts[1]})"
    ]


def test_kubectl_get_deployments_json_expands_into_pending_pods() -> None:
    planned = read_workloads([(str(DEPLOYMENTS), DEPLOYMENTS.read_text())])

    assert (planned.problems, planned.warnings) == ((), ())
    assert sorted(p.key for p in planned.pending) == [
        "shop/checkout-0",
        "shop/checkout-1",
        "shop/recommender-0",
        "shop/storefront-0",
        "shop/storefront-1",
        "shop/storefront-2",
        "shop/storefront-3",
    ]
    recommender = next(p for p in planned.pending if p.name == "recommender-0")
    assert recommender.node_selector == {"workload": "gpu"}


def test_a_bad_workload_in_a_list_names_its_line() -> None:
    text = DEPLOYMENTS.read_text().replace('"replicas": 2,', '"replicas": -2,', 1)

    planned = read_workloads([("deployments.json", text)])

    line = next(n for n, row in enumerate(text.splitlines(), 1) if '"replicas": -2' in row)
    assert [str(p) for p in planned.problems] == [
        f"deployments.json:{line}: Deployment/checkout: spec.replicas: -2 is not a non-negative whole number"
    ]
