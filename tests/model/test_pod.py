"""Pods, nodes and PDBs parsed from realistic manifests, and which pending pods need capacity."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from nodewright.model import labels as wk
from nodewright.model.errors import InvalidValue
from nodewright.model.node import Node
from nodewright.model.pod import Pod, RequestsMemo, effective_requests
from nodewright.model.requirements import Requirement, Requirements
from nodewright.model.resources import Resources
from nodewright.model.snapshot import ClusterSnapshot, provisionable
from nodewright.model.taints import Taint, Toleration
from nodewright.model.workloads import DaemonSet, PodDisruptionBudget, covering
from tests.builders import node, pod

UNSCHEDULABLE = {
    "phase": "Pending",
    "conditions": [
        {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": "0/3 nodes are available: 3 Insufficient cpu.",
        }
    ],
}


def container(name: str = "app", **resources: dict[str, str]) -> dict[str, Any]:
    return {"name": name, "image": "public.ecr.aws/nginx/nginx:1.27", "resources": resources}


def manifest(spec: dict[str, Any] | None = None, **metadata: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web-7d9f8b6c5-x2k4p", "namespace": "shop", "uid": "0b5e-11", **metadata},
        "spec": {"containers": [container(requests={"cpu": "250m", "memory": "256Mi"})], **(spec or {})},
        "status": UNSCHEDULABLE,
    }


# ---------------------------------------------------------------- effective requests


def test_effective_requests_add_containers_overhead_and_one_pod_slot() -> None:
    spec = {
        "containers": [
            container("app", requests={"cpu": "250m", "memory": "256Mi"}),
            container("proxy", requests={"cpu": "500m", "memory": "512Mi", "ephemeral-storage": "1Gi"}),
        ],
        "overhead": {"cpu": "250m", "memory": "120Mi"},
    }
    assert effective_requests(spec) == Resources.of(
        cpu="1", memory=f"{256 + 512 + 120}Mi", ephemeral_storage="1Gi", pods=1
    )


def test_the_largest_init_container_wins_when_it_asks_for_more_than_the_containers() -> None:
    spec = {
        "initContainers": [
            container("migrate", requests={"cpu": "1", "memory": "64Mi"}),
            container("warm-cache", requests={"cpu": "200m", "memory": "2Gi"}),
        ],
        "containers": [
            container("app", requests={"cpu": "250m", "memory": "256Mi"}),
            container("proxy", requests={"cpu": "500m", "memory": "512Mi"}),
        ],
    }
    # cpu: max(750m, 1) = 1; memory: max(768Mi, 2Gi) = 2Gi; each resource on its own.
    assert effective_requests(spec) == Resources.of(cpu="1", memory="2Gi", pods=1)


def test_sidecar_init_containers_run_alongside_the_containers_and_later_init_containers() -> None:
    spec = {
        "initContainers": [
            container("istio-proxy", requests={"cpu": "100m", "memory": "128Mi"}) | {"restartPolicy": "Always"},
            container("migrate", requests={"cpu": "500m", "memory": "64Mi"}),
        ],
        "containers": [container("app", requests={"cpu": "200m", "memory": "256Mi"})],
    }
    # cpu: max(200m + 100m sidecar, 500m init + 100m sidecar) = 600m; memory: 256Mi + 128Mi.
    assert effective_requests(spec) == Resources.of(cpu="600m", memory="384Mi", pods=1)


def test_an_init_container_before_the_sidecar_does_not_run_beside_it() -> None:
    spec = {
        "initContainers": [
            container("migrate", requests={"cpu": "500m"}),
            container("log-shipper", requests={"cpu": "100m"}) | {"restartPolicy": "Always"},
        ],
        "containers": [container("app", requests={"cpu": "200m"})],
    }
    assert effective_requests(spec)["cpu"] == 500


@pytest.mark.parametrize(
    ("resources", "expected"),
    [
        ({"limits": {"cpu": "1", "memory": "1Gi"}}, Resources.of(cpu="1", memory="1Gi", pods=1)),
        ({"limits": {"cpu": "2"}, "requests": {"cpu": "500m"}}, Resources.of(cpu="500m", pods=1)),
        ({"limits": {"memory": "1Gi"}, "requests": {"cpu": "100m"}}, Resources.of(cpu="100m", memory="1Gi", pods=1)),
        ({}, Resources.of(pods=1)),
        (
            {"limits": {"nvidia.com/gpu": "1"}},
            Resources({"nvidia.com/gpu": 1000, "pods": 1000}),
        ),
    ],
    ids=["limits-only", "request-below-limit", "limit-fills-missing-request", "best-effort", "gpu-limit"],
)
def test_limits_stand_in_for_missing_requests(resources: dict[str, Any], expected: Resources) -> None:
    assert effective_requests({"containers": [container(**resources)]}) == expected


def test_a_malformed_quantity_names_where_it_was() -> None:
    with pytest.raises(InvalidValue, match=r"resources\.requests\.cpu"):
        effective_requests({"containers": [container(requests={"cpu": "lots"})]})


# ---------------------------------------------------------------- scheduling constraints


def test_node_selector_and_required_node_affinity_give_ored_requirement_sets() -> None:
    parsed = Pod.parse(
        manifest(
            {
                "nodeSelector": {wk.OS: "linux"},
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {"matchExpressions": [{"key": wk.ARCH, "operator": "In", "values": ["arm64"]}]},
                                {
                                    "matchExpressions": [
                                        {"key": wk.ARCH, "operator": "In", "values": ["amd64"]},
                                        {"key": wk.CAPACITY_TYPE, "operator": "NotIn", "values": ["spot"]},
                                    ]
                                },
                            ]
                        }
                    }
                },
            }
        )
    )

    first, second = parsed.node_requirements()

    assert parsed.node_selector == {wk.OS: "linux"}
    assert first == Requirements([Requirement.new(wk.OS, "In", ["linux"]), Requirement.new(wk.ARCH, "In", ["arm64"])])
    assert second[wk.OS].values == frozenset({"linux"})
    assert second[wk.CAPACITY_TYPE].operator == "NotIn"


def test_a_pod_without_affinity_has_one_requirement_set_from_its_node_selector() -> None:
    assert Pod.parse(manifest()).node_requirements() == (Requirements(),)
    assert Pod.parse(manifest({"nodeSelector": {"team": "ml"}})).node_requirements() == (
        Requirements([Requirement.new("team", "In", ["ml"])]),
    )


def test_preferred_node_affinity_keeps_its_weights() -> None:
    parsed = Pod.parse(
        manifest(
            {
                "affinity": {
                    "nodeAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "weight": 80,
                                "preference": {
                                    "matchExpressions": [
                                        {"key": wk.CAPACITY_TYPE, "operator": "In", "values": ["spot"]}
                                    ]
                                },
                            },
                            {
                                "weight": 20,
                                "preference": {
                                    "matchExpressions": [{"key": wk.ZONE, "operator": "In", "values": ["us-east-1a"]}]
                                },
                            },
                        ]
                    }
                }
            }
        )
    )
    assert [(p.weight, list(p.requirements)) for p in parsed.preferred_terms] == [
        (80, [wk.CAPACITY_TYPE]),
        (20, [wk.ZONE]),
    ]
    assert parsed.required_terms == ()


def test_pod_affinity_and_anti_affinity_terms_resolve_their_namespaces() -> None:
    parsed = Pod.parse(
        manifest(
            {
                "affinity": {
                    "podAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": wk.ZONE}
                        ],
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "weight": 50,
                                "podAffinityTerm": {
                                    "labelSelector": {"matchLabels": {"app": "db"}},
                                    "namespaces": ["data", "shop"],
                                    "topologyKey": wk.ZONE,
                                },
                            }
                        ],
                    },
                    "podAntiAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "labelSelector": {
                                    "matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]
                                },
                                "namespaceSelector": {},
                                "topologyKey": wk.HOSTNAME,
                            }
                        ],
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "weight": 10,
                                "podAffinityTerm": {
                                    "labelSelector": {"matchLabels": {"app": "web"}},
                                    "topologyKey": wk.ZONE,
                                },
                            }
                        ],
                    },
                }
            }
        )
    )

    [affinity] = parsed.affinity
    [preferred] = parsed.preferred_affinity
    [anti] = parsed.anti_affinity
    [preferred_anti] = parsed.preferred_anti_affinity
    assert (affinity.topology_key, affinity.namespaces, affinity.all_namespaces) == (
        wk.ZONE,
        frozenset({"shop"}),
        False,
    )
    assert affinity.selects("shop", {"app": "cache"})
    assert not affinity.selects("other", {"app": "cache"})
    assert (preferred.weight, preferred.namespaces) == (50, frozenset({"data", "shop"}))
    assert anti.all_namespaces
    assert anti.selects("anywhere", {"app": "web"})
    assert (preferred_anti.weight, preferred_anti.topology_key) == (10, wk.ZONE)


def test_topology_spread_constraints_default_to_hard() -> None:
    parsed = Pod.parse(
        manifest(
            {
                "topologySpreadConstraints": [
                    {"maxSkew": 1, "topologyKey": wk.ZONE, "labelSelector": {"matchLabels": {"app": "web"}}},
                    {
                        "maxSkew": 2,
                        "topologyKey": wk.HOSTNAME,
                        "whenUnsatisfiable": "ScheduleAnyway",
                        "labelSelector": {"matchLabels": {"app": "web"}},
                        "minDomains": 3,
                        "nodeTaintsPolicy": "Honor",
                    },
                ]
            }
        )
    )
    zone, host = parsed.spread
    assert (zone.max_skew, zone.topology_key, zone.required) == (1, wk.ZONE, True)
    assert zone.selector.matches({"app": "web"})
    assert (host.max_skew, host.required, host.min_domains, host.node_taints_policy) == (2, False, 3, "Honor")
    assert host.node_affinity_policy == "Honor"


def test_tolerations_priority_and_grace_period_are_read() -> None:
    parsed = Pod.parse(
        manifest(
            {
                "tolerations": [
                    {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": 300},
                ],
                "priority": 2000001000,
                "priorityClassName": "system-node-critical",
                "terminationGracePeriodSeconds": 120,
            }
        )
    )
    assert parsed.tolerations == (
        Toleration("nvidia.com/gpu", "Exists", "", "NoSchedule"),
        Toleration("node.kubernetes.io/not-ready", "Exists", "", "", 300),
    )
    assert parsed.priority == 2000001000
    assert parsed.critical
    assert parsed.termination_grace_seconds == 120


def test_a_minimal_pod_gets_kubernetes_defaults() -> None:
    parsed = Pod.parse({"metadata": {"name": "bare"}, "spec": {"containers": [{"name": "c"}]}})
    assert parsed.key == "default/bare"
    assert parsed.requests == Resources.of(pods=1)
    assert (parsed.phase, parsed.priority, parsed.termination_grace_seconds) == ("Pending", 0, 30)
    assert [parsed.daemon, parsed.mirror, parsed.deleting, parsed.unschedulable, parsed.critical] == [False] * 5


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        ({wk.DO_NOT_DISRUPT: "true"}, True),
        ({wk.NW_DO_NOT_DISRUPT: "true"}, True),
        ({wk.DO_NOT_DISRUPT: "false"}, False),
        ({wk.DO_NOT_DISRUPT: "True"}, False),
        ({}, False),
    ],
    ids=["karpenter", "nodewright", "false", "capitalised", "none"],
)
def test_do_not_disrupt_needs_the_exact_string_true(annotations: dict[str, str], expected: bool) -> None:
    assert Pod.parse(manifest(annotations=annotations)).do_not_disrupt is expected


def test_the_controlling_owner_is_the_owner() -> None:
    parsed = Pod.parse(
        manifest(
            ownerReferences=[
                {"kind": "ConfigMap", "name": "settings"},
                {"kind": "DaemonSet", "name": "fluent-bit", "controller": True},
            ]
        )
    )
    assert (parsed.owner_kind, parsed.owner_name, parsed.daemon) == ("DaemonSet", "fluent-bit", True)
    only = Pod.parse(manifest(ownerReferences=[{"kind": "ReplicaSet", "name": "web-7d9f8b6c5"}]))
    assert (only.owner_kind, only.daemon) == ("ReplicaSet", False)


def test_mirror_pods_are_recognised_by_their_annotation() -> None:
    parsed = Pod.parse(manifest(annotations={"kubernetes.io/config.mirror": "a1b2c3"}))
    assert parsed.mirror


def test_a_bound_running_pod_reads_its_node_and_phase() -> None:
    raw = manifest({"nodeName": "ip-10-0-1-23.ec2.internal"}, deletionTimestamp="2025-01-01T00:00:00Z")
    raw["status"] = {"phase": "Running", "conditions": [{"type": "PodScheduled", "status": "True"}]}
    parsed = Pod.parse(raw)
    assert (parsed.node_name, parsed.phase, parsed.unschedulable, parsed.deleting) == (
        "ip-10-0-1-23.ec2.internal",
        "Running",
        False,
        True,
    )


# ---------------------------------------------------------------- which pods need capacity


def status(**overrides: Any) -> dict[str, Any]:
    return {**UNSCHEDULABLE, **overrides}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (manifest(), True),
        (manifest({"nodeName": "node-1"}), False),
        (manifest() | {"status": {"phase": "Pending"}}, False),
        (
            manifest()
            | {"status": status(conditions=[{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}])},
            False,
        ),
        (manifest() | {"status": status(nominatedNodeName="node-2")}, False),
        (manifest(ownerReferences=[{"kind": "DaemonSet", "name": "ds", "controller": True}]), False),
        (manifest(annotations={"kubernetes.io/config.mirror": "x"}), False),
        (manifest() | {"status": status(phase="Failed")}, False),
        (manifest(deletionTimestamp="2025-01-01T00:00:00Z"), False),
    ],
    ids=[
        "unschedulable",
        "bound",
        "not-yet-seen-by-scheduler",
        "scheduling-gated",
        "preempting",
        "daemonset",
        "mirror",
        "failed",
        "deleting",
    ],
)
def test_which_pending_pods_are_provisionable(raw: dict[str, Any], expected: bool) -> None:
    assert provisionable(Pod.parse(raw)) is expected


def test_pending_includes_workload_pods_of_nodes_being_deleted_but_not_their_daemons() -> None:
    doomed = node("doomed", deleting=True)
    healthy = node("healthy")
    pods = (
        pod("waiting"),
        pod("moving", node_name="doomed"),
        pod("agent", node_name="doomed", owner_kind="DaemonSet"),
        replace(pod("done", node_name="doomed"), phase="Succeeded"),
        pod("staying", node_name="healthy"),
    )

    pending = ClusterSnapshot(nodes=(doomed, healthy), pods=pods).pending()

    assert [p.name for p in pending] == ["waiting", "moving"]


def test_pods_by_node_skips_unbound_and_finished_pods() -> None:
    finished = replace(pod("b", node_name="n1"), phase="Succeeded")
    pods = (pod("a", node_name="n1"), finished, pod("c"), pod("d", node_name="n2"))
    grouped = ClusterSnapshot(pods=pods).pods_by_node()
    assert {k: [p.name for p in v] for k, v in grouped.items()} == {"n1": ["a"], "n2": ["d"]}


# ---------------------------------------------------------------- nodes


def test_node_parse_reads_an_eks_node() -> None:
    parsed = Node.parse(
        {
            "metadata": {
                "name": "ip-10-0-1-23.ec2.internal",
                "labels": {wk.NW_NODEPOOL: "general", wk.NW_NODECLAIM: "general-abc12", wk.ZONE: "us-east-1a"},
                "annotations": {wk.DO_NOT_DISRUPT: "true"},
            },
            "spec": {
                "providerID": "aws:///us-east-1a/i-0123456789abcdef0",
                "taints": [{"key": wk.DISRUPTED_TAINT_KEY, "effect": "NoSchedule"}],
                "unschedulable": True,
            },
            "status": {
                "capacity": {"cpu": "2", "memory": "7934272Ki", "pods": "29"},
                "allocatable": {"cpu": "1930m", "memory": "7244096Ki", "pods": "29"},
                "conditions": [
                    {"type": "MemoryPressure", "status": "False"},
                    {"type": "Ready", "status": "True"},
                ],
            },
        },
        created_at=123.0,
    )
    assert parsed.instance_id == "i-0123456789abcdef0"
    assert (parsed.nodepool, parsed.nodeclaim) == ("general", "general-abc12")
    assert parsed.taints == (Taint(wk.DISRUPTED_TAINT_KEY, "NoSchedule"),)
    assert parsed.allocatable == Resources.of(cpu="1930m", memory="7244096Ki", pods=29)
    assert parsed.capacity["cpu"] == 2000
    assert parsed.ready
    assert parsed.unschedulable
    assert parsed.do_not_disrupt
    assert not parsed.deleting
    assert parsed.created_at == 123.0


@pytest.mark.parametrize(
    ("conditions", "ready"),
    [
        ([{"type": "Ready", "status": "True"}], True),
        ([{"type": "Ready", "status": "False"}], False),
        ([{"type": "Ready", "status": "Unknown"}], False),
        ([], False),
    ],
    ids=["ready", "not-ready", "unknown", "no-conditions"],
)
def test_a_node_is_ready_only_when_its_ready_condition_is_true(conditions: list[dict[str, str]], ready: bool) -> None:
    assert Node.parse({"metadata": {"name": "n"}, "status": {"conditions": conditions}}).ready is ready


def test_a_node_not_launched_by_us_has_no_nodepool_or_instance_id() -> None:
    parsed = Node.parse({"metadata": {"name": "fargate-ip-10-0-1-5", "deletionTimestamp": "2025-01-01T00:00:00Z"}})
    assert (parsed.nodepool, parsed.nodeclaim, parsed.instance_id) == ("", "", "")
    assert parsed.deleting
    karpenter = Node.parse({"metadata": {"name": "n", "labels": {wk.NODEPOOL: "default"}}})
    assert karpenter.nodepool == "default"


def test_a_node_with_a_bad_taint_names_the_field() -> None:
    with pytest.raises(InvalidValue, match="effect"):
        Node.parse({"metadata": {"name": "n"}, "spec": {"taints": [{"key": "k", "effect": "Never"}]}})


# ---------------------------------------------------------------- workloads


def test_a_daemonset_template_becomes_a_pod_owned_by_it() -> None:
    parsed = DaemonSet.parse(
        {
            "metadata": {"name": "aws-node", "namespace": "kube-system"},
            "spec": {
                "template": {
                    "metadata": {"labels": {"k8s-app": "aws-node"}},
                    "spec": {
                        "containers": [container("aws-node", requests={"cpu": "25m"})],
                        "tolerations": [{"operator": "Exists"}],
                        "priorityClassName": "system-node-critical",
                    },
                }
            },
        }
    )
    assert (parsed.namespace, parsed.name) == ("kube-system", "aws-node")
    assert parsed.template.daemon
    assert parsed.template.owner_name == "aws-node"
    assert parsed.template.requests == Resources.of(cpu="25m", pods=1)
    assert parsed.template.labels == {"k8s-app": "aws-node"}
    assert parsed.template.critical


def pdb(**spec: Any) -> PodDisruptionBudget:
    return PodDisruptionBudget.parse(
        {
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, **spec},
        }
    )


@pytest.mark.parametrize(
    ("spec", "healthy", "expected", "allowed"),
    [
        ({"minAvailable": 2}, 3, 3, 1),
        ({"minAvailable": 2}, 2, 3, 0),
        ({"minAvailable": 2}, 1, 3, 0),
        ({"minAvailable": 0}, 3, 3, 3),
        ({"minAvailable": "50%"}, 4, 4, 2),
        ({"minAvailable": "50%"}, 3, 3, 1),
        ({"minAvailable": "100%"}, 5, 5, 0),
        ({"maxUnavailable": 1}, 3, 3, 1),
        ({"maxUnavailable": 1}, 2, 3, 0),
        ({"maxUnavailable": 2}, 3, 4, 1),
        ({"maxUnavailable": 0}, 3, 3, 0),
        ({"maxUnavailable": "25%"}, 10, 10, 3),
        ({"maxUnavailable": "10%"}, 3, 3, 1),
        ({"maxUnavailable": "100%"}, 3, 3, 3),
        ({"maxUnavailable": 5}, 2, 2, 2),
    ],
    ids=[
        "min-int-spare",
        "min-int-exact",
        "min-int-short",
        "min-zero",
        "min-pct-even",
        "min-pct-rounds-up",
        "min-100pct",
        "max-int-all-healthy",
        "max-int-one-down",
        "max-int-some-left",
        "max-zero",
        "max-pct-rounds-up",
        "max-small-pct-rounds-up-to-one",
        "max-100pct",
        "max-more-than-there-are",
    ],
)
def test_a_pdb_allows_its_healthy_pods_minus_the_desired_ones(
    spec: dict[str, Any], healthy: int, expected: int, allowed: int
) -> None:
    assert pdb(**spec).allowed(healthy, expected) == allowed


def test_a_pdb_reads_its_status_and_covers_only_matching_pods_in_its_namespace() -> None:
    raw = {
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": "25%"},
        "status": {"disruptionsAllowed": 2, "currentHealthy": 8, "desiredHealthy": 6, "expectedPods": 8},
    }
    budget = PodDisruptionBudget.parse(raw)
    web = pod("web-1", namespace="shop", labels={"app": "web"})
    assert budget.disruptions_allowed == 2
    assert budget.max_unavailable == "25%"
    assert budget.selects(web)
    assert not budget.selects(replace(web, namespace="other"))
    assert not budget.selects(replace(web, labels={"app": "api"}))
    assert covering([budget], web) == [budget]


def test_a_pdb_without_a_selector_covers_no_pod_and_an_empty_one_every_pod_of_its_namespace() -> None:
    web = pod("web-1", namespace="shop", labels={"app": "web"})
    null = PodDisruptionBudget.parse({"metadata": {"name": "n", "namespace": "shop"}, "spec": {"minAvailable": 1}})
    empty = PodDisruptionBudget.parse(
        {"metadata": {"name": "e", "namespace": "shop"}, "spec": {"selector": {}, "minAvailable": 1}}
    )
    assert not null.selects(web)
    assert not null.selects(replace(web, labels={}))
    assert empty.selects(web)
    assert empty.selects(replace(web, labels={}))
    assert not empty.selects(replace(web, namespace="other"))


def test_a_requests_memo_gives_the_pods_parsing_afresh_gives_and_stays_bounded() -> None:
    memo = RequestsMemo(size=2)
    shapes = [
        {"requests": {"cpu": "250m", "memory": "256Mi"}},
        {"limits": {"cpu": "1", "memory": "1Gi"}},
        {"requests": {"cpu": "1"}, "limits": {"cpu": "2", "nvidia.com/gpu": "1"}},
        {"requests": {"cpu": 2}},  # not a string: parsed, never kept
    ]
    for rounds in range(3):
        for i, resources in enumerate(shapes):
            manifest = {
                "metadata": {"name": f"p{rounds}-{i}"},
                "spec": {"containers": [{"name": "app", "resources": resources}]},
            }
            assert Pod.parse(manifest, memo) == Pod.parse(manifest)
    assert len(memo._parsed) == 2
    bad = {"resources": {"requests": {"cpu": "x"}}}
    with pytest.raises(InvalidValue, match=r"containers\[0\]\.resources\.requests\.cpu"):
        Pod.parse({"metadata": {"name": "bad"}, "spec": {"containers": [bad]}}, memo)
