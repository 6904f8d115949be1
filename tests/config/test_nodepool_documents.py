"""NodePool documents: valid Karpenter v1 manifests parse into the model; every mistake is reported
with its document, field path and rule. Driven through `parse_yaml`/`parse_manifest`/`read_paths`,
the functions the CLI, the config table and the CRD reader all use.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from nodewright.config.documents import Loaded, parse_manifest
from nodewright.config.files import read_paths
from nodewright.config.nodepool import render_nodepool
from nodewright.config.problems import ConfigError
from nodewright.config.stream import parse_yaml
from nodewright.model.nodepool import Budget, NodePool, ZoneBalance
from nodewright.model.requirements import Requirement
from nodewright.model.resources import Resources
from nodewright.model.taints import Taint

FIXTURES = Path(__file__).parent / "fixtures"
EXAMPLES = Path(__file__).parents[2] / "examples" / "nodepools"

BASE: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "default"},
    "spec": {
        "template": {
            "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                "requirements": [
                    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
                    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                    {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["4"]},
                ],
            }
        }
    },
}


def nodepool_with(path: str, value: Any) -> dict[str, Any]:
    """BASE with the dotted `path` set to `value` (list indexes as numbers; `...` deletes)."""
    body = copy.deepcopy(BASE)
    *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
    target: Any = body
    for part in parents:
        target = target[part] if isinstance(part, int) else target.setdefault(part, {})
    if value is ...:
        del target[last]
    else:
        target[last] = value
    return body


def details(loaded: Loaded) -> list[str]:
    return [p.detail for p in loaded.problems]


def only_model(loaded: Loaded) -> NodePool:
    (document,) = loaded.require()
    assert isinstance(document.model, NodePool)
    return document.model


def test_the_base_manifest_is_valid() -> None:
    pool = only_model(parse_manifest(BASE, source="t.yaml"))

    assert pool.name == "default"
    assert pool.requirements["karpenter.k8s.aws/instance-generation"].has("5")
    assert not pool.requirements["karpenter.k8s.aws/instance-generation"].has("4")
    assert pool.expire_after == 720 * 3600
    assert pool.disruption.budgets == (Budget(nodes="10%"),)
    assert pool.rebalance_policy == "ReplaceThenDrain"


@pytest.mark.parametrize(
    "path",
    sorted([*FIXTURES.glob("valid/*.yaml"), *EXAMPLES.glob("*.yaml")]),
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_every_valid_example_file_has_no_problems(path: Path) -> None:
    loaded = read_paths([path])

    assert loaded.problems == ()
    assert loaded.documents


def test_a_spot_pool_reads_requirements_min_values_and_startup_taints() -> None:
    pool = only_model(read_paths([FIXTURES / "valid" / "spot.yaml"]))

    assert pool.requirements["karpenter.sh/capacity-type"] == Requirement.new(
        "karpenter.sh/capacity-type", "In", ["spot"]
    )
    assert pool.requirements["karpenter.k8s.aws/instance-category"].min_values == 2
    assert pool.requirements["karpenter.k8s.aws/instance-cpu"].has("32")
    assert not pool.requirements["karpenter.k8s.aws/instance-cpu"].has("33")
    assert pool.startup_taints == (Taint("node.cilium.io/agent-not-ready", "NoExecute", "true"),)
    assert pool.disruption.consolidate_after == 0


def test_an_on_demand_pool_under_the_nodewright_group_reads_every_template_field() -> None:
    loaded = read_paths([FIXTURES / "valid" / "on-demand.yaml"])
    pool = loaded.of_kind("NodePool")[0].model
    assert isinstance(pool, NodePool)

    assert pool.api_version == "nodewright.io/v1"
    assert pool.weight == 100
    assert pool.labels == {"billing": "on-demand"}
    assert pool.annotations == {"example.com/owner": "platform"}
    assert pool.requirements["karpenter.k8s.aws/instance-hypervisor"].operator == "Exists"
    assert pool.requirements["karpenter.k8s.aws/instance-local-nvme"].operator == "DoesNotExist"
    assert pool.expire_after is None
    assert pool.termination_grace_period == 5400
    assert pool.limits == Resources.of(cpu="200", memory="800Gi")
    assert pool.disruption.consolidation_policy == "WhenEmpty"
    assert pool.disruption.consolidate_after is None
    assert pool.node_class_ref.group == "nodewright.io"
    assert pool.rebalance_policy == "CordonAndDrain"


def test_a_gpu_pool_keeps_its_taint_and_gpu_limit() -> None:
    pool = read_paths([FIXTURES / "valid" / "gpu.yaml"]).of_kind("NodePool")[0].model
    assert isinstance(pool, NodePool)

    assert pool.taints == (Taint("nvidia.com/gpu", "NoSchedule"),)
    assert pool.limits == Resources.of(nvidia_gpu="8")


def test_budgets_with_schedules_durations_and_reasons_are_read_in_order() -> None:
    pool = only_model(read_paths([FIXTURES / "valid" / "budgets.yaml"]))

    assert pool.disruption.budgets == (
        Budget(nodes="20%", reasons=("Empty", "Drifted")),
        Budget(nodes="5"),
        Budget(nodes="0", schedule="0 9 * * MON-FRI", duration=8 * 3600, reasons=("Underutilized",)),
        Budget(nodes="0", schedule="@daily", duration=5400),
        Budget(nodes="1", schedule="*/15 0-6 1,15 JAN-MAR,12 ?", duration=600),
    )


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        pytest.param(
            "spec.template.spec.requirements.2.operator",
            "Greater",
            'NodePool/default: spec.template.spec.requirements[2].operator: "Greater" is not one of '
            "In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte",
            id="unknown-operator",
        ),
        pytest.param(
            "spec.template.spec.requirements.0.values",
            [],
            "NodePool/default: spec.template.spec.requirements[0].values: operator In needs at least one value",
            id="in-without-values",
        ),
        pytest.param(
            "spec.template.spec.requirements.2.values",
            ["4", "5"],
            "NodePool/default: spec.template.spec.requirements[2].values: operator Gt needs exactly one "
            'non-negative integer value, got ["4", "5"]',
            id="gt-with-two-values",
        ),
        pytest.param(
            "spec.template.spec.requirements.1",
            {"key": "kubernetes.io/arch", "operator": "Exists", "values": ["amd64"]},
            "NodePool/default: spec.template.spec.requirements[1].values: operator Exists takes no values",
            id="exists-with-values",
        ),
        pytest.param(
            "spec.template.spec.requirements.0.minValues",
            3,
            "NodePool/default: spec.template.spec.requirements[0].minValues: must be at most the number of values (1), "
            "got 3",
            id="min-values-above-value-count",
        ),
        pytest.param(
            "spec.template.spec.requirements.0.values",
            [4],
            "NodePool/default: spec.template.spec.requirements[0].values[0]: must be a string, got integer 4",
            id="unquoted-number-value",
        ),
        pytest.param(
            "spec.template.spec.requirements.0.key",
            "kubernetes.io/hostname",
            'NodePool/default: spec.template.spec.requirements[0].key: label "kubernetes.io/hostname" is restricted: '
            "nodes get it from their own identity",
            id="restricted-requirement-key",
        ),
        pytest.param(
            "spec.template.metadata.labels",
            {"karpenter.sh/custom": "x"},
            'NodePool/default: spec.template.metadata.labels["karpenter.sh/custom"]: label domain "karpenter.sh" is '
            'restricted; "karpenter.sh/custom" is not a well-known label',
            id="restricted-label-domain",
        ),
        pytest.param(
            "spec.template.spec.taints",
            [{"key": "dedicated", "effect": "Sometimes"}],
            'NodePool/default: spec.template.spec.taints[0].effect: "Sometimes" is not one of '
            "NoSchedule, PreferNoSchedule, NoExecute",
            id="bad-taint-effect",
        ),
        pytest.param(
            "spec.template.spec.startupTaints",
            [{"effect": "NoSchedule"}],
            "NodePool/default: spec.template.spec.startupTaints[0].key: is required",
            id="startup-taint-without-key",
        ),
        pytest.param(
            "spec.template.spec.expireAfter",
            "30d",
            'NodePool/default: spec.template.spec.expireAfter: "30d" is not a duration of the form 720h, 30m or Never',
            id="expire-after-in-days",
        ),
        pytest.param(
            "spec.template.spec.terminationGracePeriod",
            "Never",
            'NodePool/default: spec.template.spec.terminationGracePeriod: "Never" is not a duration of the form '
            "30s, 10m or 24h",
            id="termination-grace-never",
        ),
        pytest.param(
            "spec.template.spec.nodeClassRef",
            {"kind": "EC2NodeClass", "name": "default"},
            "NodePool/default: spec.template.spec.nodeClassRef.group: is required",
            id="node-class-ref-without-group",
        ),
        pytest.param(
            "spec.template.spec.nodeClassRef.group",
            "karpenter.k8s.aws/v1",
            'NodePool/default: spec.template.spec.nodeClassRef.group: "karpenter.k8s.aws/v1" is an apiVersion, not a '
            'group: write "karpenter.k8s.aws"',
            id="node-class-ref-group-with-version",
        ),
        pytest.param(
            "spec.template.spec.nodeClassRef.kind",
            "AKSNodeClass",
            'NodePool/default: spec.template.spec.nodeClassRef.kind: "AKSNodeClass" is not one of EC2NodeClass',
            id="node-class-ref-other-provider",
        ),
        pytest.param(
            "spec.template.spec.nodeClassRef",
            ...,
            "NodePool/default: spec.template.spec.nodeClassRef: is required",
            id="missing-node-class-ref",
        ),
        pytest.param(
            "spec.limits",
            {"cpu": "lots"},
            "NodePool/default: spec.limits.cpu: 'lots' is not a quantity (expected a number with an optional suffix "
            "such as m, k, M, G, Ki, Mi, Gi or an exponent like 1e3)",
            id="bad-limit-quantity",
        ),
        pytest.param(
            "spec.limits",
            {"cpu": "-4"},
            "NodePool/default: spec.limits.cpu: '-4' is negative; an amount of a resource is 0 or more",
            id="negative-limit",
        ),
        pytest.param(
            "spec.limits",
            {"memory": "1e30Ei"},
            "NodePool/default: spec.limits.memory: '1e30Ei' is not a quantity (expected a number with an optional "
            "suffix such as m, k, M, G, Ki, Mi, Gi or an exponent like 1e3)",
            id="malformed-huge-limit",
        ),
        pytest.param(
            "spec.limits",
            {"cpu": "1e30"},
            "NodePool/default: spec.limits.cpu: '1e30' is larger than a Kubernetes quantity can hold (2^63-1)",
            id="absurd-limit",
        ),
        pytest.param(
            "spec.weight", 101, "NodePool/default: spec.weight: must be at most 100, got 101", id="weight-above-100"
        ),
        pytest.param(
            "spec.weight", -1, "NodePool/default: spec.weight: must be at least 1, got -1", id="negative-weight"
        ),
        pytest.param(
            "spec.weight", 0, "NodePool/default: spec.weight: must be at least 1, got 0", id="zero-weight-as-karpenter"
        ),
        pytest.param(
            "spec.disruption.consolidationPolicy",
            "WhenUnderutilized",
            'NodePool/default: spec.disruption.consolidationPolicy: "WhenUnderutilized" is not one of '
            "WhenEmpty, WhenEmptyOrUnderutilized, Balanced",
            id="v1beta1-consolidation-policy",
        ),
        pytest.param(
            "spec.disruption.consolidateAfter",
            "soon",
            'NodePool/default: spec.disruption.consolidateAfter: "soon" is not a duration of the form '
            "30s, 5m, 1h or Never",
            id="bad-consolidate-after",
        ),
        pytest.param(
            "spec.disruption.budgets",
            [{"nodes": "150%"}],
            'NodePool/default: spec.disruption.budgets[0].nodes: "150%" is not a node count (e.g. 5) or a percentage '
            "(e.g. 10%)",
            id="budget-over-100-percent",
        ),
        pytest.param(
            "spec.disruption.budgets",
            [{"nodes": "0", "schedule": "0 9 * *", "duration": "8h"}],
            "NodePool/default: spec.disruption.budgets[0].schedule: is not a valid cron schedule: '0 9 * *' has 4 "
            "fields; expected 5 (minute hour day-of-month month day-of-week)",
            id="four-field-cron",
        ),
        pytest.param(
            "spec.disruption.budgets",
            [{"nodes": "0", "schedule": "0 9 * * *"}],
            "NodePool/default: spec.disruption.budgets[0]: schedule and duration must be set together",
            id="schedule-without-duration",
        ),
        pytest.param(
            "spec.disruption.budgets",
            [{"nodes": "0", "duration": "30s", "schedule": "@hourly"}],
            'NodePool/default: spec.disruption.budgets[0].duration: "30s" is not a duration of the form '
            "10m, 2h or 1h30m",
            id="budget-duration-in-seconds",
        ),
        pytest.param(
            "spec.disruption.budgets",
            [{"nodes": "1", "reasons": ["Expired"]}],
            'NodePool/default: spec.disruption.budgets[0].reasons[0]: "Expired" is not one of '
            "Underutilized, Empty, Drifted",
            id="unknown-budget-reason",
        ),
        pytest.param(
            "metadata.annotations",
            {"nodewright.io/rebalance-policy": "Drain"},
            'NodePool/default: metadata.annotations["nodewright.io/rebalance-policy"]: "Drain" is not one of '
            "Ignore, Cordon, CordonAndDrain, ReplaceThenDrain",
            id="unknown-rebalance-policy",
        ),
        pytest.param(
            "metadata.annotations",
            {"nodewright.io/zone-balance": "pods:1"},
            'NodePool/default: metadata.annotations["nodewright.io/zone-balance"]: "pods:1": counts "pods", not one '
            "of nodes, cpu (e.g. nodes:1 or cpu:32)",
            id="zone-balance-unknown-measure",
        ),
        pytest.param(
            "metadata.annotations",
            {"nodewright.io/zone-balance": "nodes:0"},
            'NodePool/default: metadata.annotations["nodewright.io/zone-balance"]: "nodes:0": the maximum skew must '
            "be at least 1 (e.g. nodes:1)",
            id="zone-balance-zero-skew",
        ),
        pytest.param(
            "metadata.annotations",
            {"nodewright.io/zone-balance": "nodes:1.5"},
            'NodePool/default: metadata.annotations["nodewright.io/zone-balance"]: "nodes:1.5": the maximum skew '
            '"1.5" is not a whole number (e.g. nodes:1)',
            id="zone-balance-fractional-nodes",
        ),
        pytest.param(
            "metadata.annotations",
            {"nodewright.io/daemonset-overflow": "Evict"},
            'NodePool/default: metadata.annotations["nodewright.io/daemonset-overflow"]: "Evict" is not one of '
            "Ignore, Report, Replace",
            id="unknown-daemonset-overflow",
        ),
        pytest.param(
            "metadata.name",
            "Default_Pool",
            'NodePool/Default_Pool: metadata.name: "Default_Pool" is not a valid name: lower-case letters, digits, '
            "'-' and '.', starting and ending with a letter or digit",
            id="invalid-name",
        ),
        pytest.param(
            "spec.replicas", -1, "NodePool/default: spec.replicas: must be at least 0, got -1", id="negative-replicas"
        ),
        pytest.param(
            "spec.replicas",
            "3",
            'NodePool/default: spec.replicas: must be an integer, got string "3"',
            id="replicas-text",
        ),
        pytest.param(
            "apiVersion",
            "karpenter.sh/v1beta1",
            'NodePool/default: apiVersion: "karpenter.sh/v1beta1" is not one of karpenter.sh/v1, nodewright.io/v1 '
            "for NodePool",
            id="v1beta1-api-version",
        ),
        pytest.param(
            "kind",
            "Provisioner",
            'Provisioner/default: kind: "Provisioner" is not one of NodePool, EC2NodeClass, NodeOverlay, '
            "CapacityBuffer, PodTemplate",
            id="unknown-kind",
        ),
    ],
)
def test_an_invalid_nodepool_is_reported_with_its_path_and_rule(path: str, value: Any, expected: str) -> None:
    loaded = parse_manifest(nodepool_with(path, value), source="pools.yaml")

    assert details(loaded) == [expected]
    assert loaded.documents == ()


def test_rebalance_policy_annotation_sets_the_pool_policy() -> None:
    body = nodepool_with("metadata.annotations", {"nodewright.io/rebalance-policy": "Cordon"})

    assert only_model(parse_manifest(body, source="t.yaml")).rebalance_policy == "Cordon"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("nodes:1", ZoneBalance("nodes", 1.0), id="nodes"),
        pytest.param("2", ZoneBalance("nodes", 2.0), id="bare-number-of-nodes"),
        pytest.param("cpu:32", ZoneBalance("cpu", 32.0), id="cpu"),
    ],
)
def test_zone_balance_annotation_sets_the_pool_setting_and_renders_back(value: str, expected: ZoneBalance) -> None:
    body = nodepool_with("metadata.annotations", {"nodewright.io/zone-balance": value})

    pool = only_model(parse_manifest(body, source="t.yaml"))
    assert pool.zone_balance == expected
    assert only_model(parse_manifest(render_nodepool(pool), source="rendered")) == pool


def test_every_problem_of_a_mixed_file_is_reported_with_file_line_and_path() -> None:
    loaded = read_paths([FIXTURES / "invalid" / "mixed.yaml"])
    source = str(FIXTURES / "invalid" / "mixed.yaml")

    assert [str(p) for p in loaded.problems] == [
        f'{source}:22: NodePool/default: metadata.annotations["nodewright.io/rebalance-policy"]: "Sometimes" is not '
        "one of Ignore, Cordon, CordonAndDrain, ReplaceThenDrain",
        f"{source}:24: NodePool/default: spec.weight: must be at most 100, got 101",
        f'{source}:39: NodePool/default: spec.template.spec.requirements[2].operator: "Greater" is not one of '
        "In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte",
        f'{source}:41: NodePool/default: spec.template.spec.expireAfter: "30 days" is not a duration of the form '
        "720h, 30m or Never",
        f'{source}:43: NodePool/default: spec.disruption.consolidationPolicy: "WhenIdle" is not one of '
        "WhenEmpty, WhenEmptyOrUnderutilized, Balanced",
        f"{source}:46: NodePool/default: spec.disruption.budgets[0].schedule: is not a valid cron schedule: "
        "hour field: 25 is outside 0-23",
        f"{source}:48: NodePool/default: spec.disruption.budgets[1]: schedule and duration must be set together",
        f'{source}:65: NodePool/gpu: spec.template.spec.taints[0].effect: "NoScheduleAtAll" is not one of '
        "NoSchedule, PreferNoSchedule, NoExecute",
    ]
    # An unknown field is a warning, as kubectl gives one; it does not refuse the document by itself.
    assert [str(w) for w in loaded.warnings] == [
        f"{source}:66: warning: NodePool/gpu: spec.template.spec.tolerations: unknown field, ignored (expected one "
        "of expireAfter, nodeClassRef, requirements, startupTaints, taints, terminationGracePeriod)",
    ]
    # The valid document is still returned (for display), but the set as a whole is refused.
    assert [d.key for d in loaded.documents] == ["EC2NodeClass/default"]
    with pytest.raises(ConfigError) as raised:
        loaded.require()
    assert len(raised.value.problems) == 8
    assert len(loaded.strict().problems) == 9


def test_broken_yaml_names_the_file_and_line() -> None:
    loaded = read_paths([FIXTURES / "invalid" / "broken.yaml"])

    (problem,) = loaded.problems
    assert problem.line == 11
    assert str(problem).startswith(f"{FIXTURES / 'invalid' / 'broken.yaml'}:11: document #1: invalid YAML: ")


def test_an_unnamed_document_is_named_by_its_position() -> None:
    text = yaml.safe_dump_all([BASE, {**BASE, "metadata": {}}])

    loaded = parse_yaml(text, "pools.yaml")

    line = text.splitlines().index("metadata: {}") + 1
    assert [str(p) for p in loaded.problems] == [f"pools.yaml:{line}: NodePool #2: metadata.name: is required"]


def test_a_document_that_is_not_a_mapping_is_reported() -> None:
    loaded = parse_yaml("- just\n- a list\n", "list.yaml")

    assert details(loaded) == ['document #1: must be an object, got list ["just", "a list"]']


def test_a_duplicated_yaml_key_is_reported() -> None:
    text = yaml.safe_dump(BASE) + "spec: {}\n"

    loaded = parse_yaml(text, "dupe.yaml")

    assert "NodePool/default: spec: duplicate key" in details(loaded)


def test_the_same_pool_in_two_files_is_a_problem(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(yaml.safe_dump(BASE))
    (tmp_path / "b.yml").write_text(yaml.safe_dump(nodepool_with("apiVersion", "nodewright.io/v1")))

    loaded = read_paths([tmp_path])

    assert [p.detail for p in loaded.problems] == [
        f"NodePool/default: metadata.name: NodePool/default is defined more than once (first in {tmp_path}/a.yaml:1)"
    ]


def test_a_directory_is_read_recursively_and_missing_paths_are_problems(tmp_path: Path) -> None:
    (tmp_path / "nested").mkdir()
    (tmp_path / "nested" / "pool.yaml").write_text(yaml.safe_dump(BASE))
    (tmp_path / "notes.txt").write_text("not yaml")

    loaded = read_paths([tmp_path, tmp_path / "missing.yaml"])

    assert [d.key for d in loaded.documents] == ["NodePool/default"]
    assert [str(p) for p in loaded.problems] == [f"{tmp_path}/missing.yaml: no such file or directory"]


@pytest.mark.parametrize(
    "path",
    sorted([*FIXTURES.glob("valid/*.yaml"), *EXAMPLES.glob("*.yaml")]),
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_a_printed_document_parses_back_to_the_same_model(path: Path) -> None:
    for document in read_paths([path]).require():
        again = parse_yaml(document.to_yaml(), "printed.yaml").require()

        assert [d.model for d in again] == [document.model]


@pytest.mark.parametrize(
    "path",
    sorted([*FIXTURES.glob("valid/*.yaml"), *EXAMPLES.glob("*.yaml")]),
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_a_rendered_nodepool_model_parses_back_to_an_equal_model(path: Path) -> None:
    for document in read_paths([path]).of_kind("NodePool"):
        assert isinstance(document.model, NodePool)

        again = only_model(parse_manifest(render_nodepool(document.model), source="rendered"))

        assert again == document.model


def test_server_managed_metadata_and_status_are_left_out_of_the_manifest() -> None:
    body = copy.deepcopy(BASE)
    body["metadata"].update(
        uid="1234",
        resourceVersion="42",
        generation=3,
        creationTimestamp="2024-01-01T00:00:00Z",
        annotations={"kubectl.kubernetes.io/last-applied-configuration": "{}"},
    )
    body["status"] = {"conditions": []}

    (document,) = parse_manifest(body, source="cluster").require()

    assert document.model.resource_version == "42"
    assert document.to_manifest() == BASE


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        pytest.param(
            "spec.template.spec.terminationGracePeirod",
            "24h",
            "spec.template.spec.terminationGracePeirod: unknown field, ignored "
            '(did you mean "terminationGracePeriod"?)',
            id="misspelt-template-field",
        ),
        pytest.param(
            "spec.replica", 2, 'spec.replica: unknown field, ignored (did you mean "replicas"?)', id="misspelt-replicas"
        ),
        pytest.param(
            "spec.template.spec.nodeClassRef.Name",
            "default",
            'spec.template.spec.nodeClassRef.Name: unknown field, ignored (did you mean "name"?)',
            id="wrong-case",
        ),
        pytest.param(
            "spec.template.spec.kubelet",
            {"maxPods": 110},
            "spec.template.spec.kubelet: unknown field, ignored (kubelet moved to EC2NodeClass spec.kubelet in "
            "karpenter v1)",
            id="v1beta1-kubelet-in-template",
        ),
        pytest.param(
            "spec.disruption.expireAfter",
            "720h",
            "spec.disruption.expireAfter: unknown field, ignored (expireAfter moved to spec.template.spec.expireAfter "
            "in karpenter v1)",
            id="v1beta1-expire-after",
        ),
        pytest.param(
            "spec.template.spec.requirements.0.minvalues",
            2,
            'spec.template.spec.requirements[0].minvalues: unknown field, ignored (did you mean "minValues"?)',
            id="in-a-list-item",
        ),
        pytest.param(
            "metadata.labelz",
            {"team": "a"},
            'metadata.labelz: unknown field, ignored (did you mean "labels"?)',
            id="in-metadata",
        ),
        pytest.param(
            "colour",
            "blue",
            "colour: unknown field, ignored (expected one of apiVersion, kind, metadata, spec, status)",
            id="top-level-no-near-miss",
        ),
    ],
)
def test_an_unknown_field_anywhere_is_a_warning_and_is_left_out_of_the_stored_document(
    path: str, value: Any, expected: str
) -> None:
    loaded = parse_manifest(nodepool_with(path, value), source="pools.yaml")

    (document,) = loaded.require()
    assert [w.detail for w in loaded.warnings] == [f"NodePool/default: {expected}"]
    *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
    stored: Any = document.to_manifest()
    for part in parents:
        stored = stored[part]
    assert last not in stored
    assert [p.detail for p in loaded.strict().problems] == [f"NodePool/default: {expected}"]


def test_a_warning_names_the_file_and_line_of_the_unknown_field() -> None:
    text = yaml.safe_dump(nodepool_with("spec.template.spec.terminationGracePeirod", "24h"), sort_keys=False)

    loaded = parse_yaml(text, "pools.yaml")

    line = text.splitlines().index("      terminationGracePeirod: 24h") + 1
    assert [str(w) for w in loaded.warnings] == [
        f"pools.yaml:{line}: warning: NodePool/default: spec.template.spec.terminationGracePeirod: unknown field, "
        'ignored (did you mean "terminationGracePeriod"?)'
    ]
    assert loaded.ok
    with pytest.raises(ConfigError, match="terminationGracePeirod"):
        loaded.strict().require()


def test_a_static_nodepool_is_accepted_without_warnings() -> None:
    body = nodepool_with("spec.replicas", 3)
    body["spec"]["limits"] = {"nodes": "5"}

    loaded = parse_manifest(body, source="pools.yaml")

    pool = only_model(loaded)
    assert pool.replicas == 3
    assert loaded.warnings == ()
    assert only_model(parse_manifest(render_nodepool(pool), source="t.yaml")) == pool


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        pytest.param(
            {"limits": {"cpu": "100"}},
            "NodePool/default: spec.limits: only limits.nodes is supported on a static NodePool (one with replicas)",
            id="cpu-limit",
        ),
        pytest.param(
            {"weight": 10},
            "NodePool/default: spec.weight: weight is not supported on a static NodePool (one with replicas)",
            id="weight",
        ),
    ],
)
def test_a_static_nodepool_follows_karpenters_static_rules(extra: dict[str, Any], expected: str) -> None:
    body = nodepool_with("spec.replicas", 2)
    body["spec"].update(extra)

    loaded = parse_manifest(body, source="pools.yaml")

    assert details(loaded) == [expected]


def test_a_field_name_that_is_not_a_string_is_an_error_not_a_warning() -> None:
    loaded = parse_yaml(yaml.safe_dump(BASE) + "1: one\n", "pools.yaml")

    assert details(loaded) == ['NodePool/default: ["1"]: field names must be strings, got integer 1']


def test_a_label_key_that_is_not_a_string_is_an_error() -> None:
    loaded = parse_manifest(nodepool_with("spec.template.metadata.labels", {1: "a", "b": "c"}), source="pools.yaml")

    assert details(loaded) == [
        'NodePool/default: spec.template.metadata.labels["1"]: keys must be strings, got integer 1'
    ]


def test_karpenters_balanced_consolidation_policy_is_accepted() -> None:
    body = nodepool_with("spec.disruption.consolidationPolicy", "Balanced")

    assert only_model(parse_manifest(body, source="t.yaml")).disruption.consolidation_policy == "Balanced"
