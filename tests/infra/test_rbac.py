"""deploy/rbac.yaml: one ClusterRole per function, bound to that function's group, granting exactly
the requests the function sends.

Recorded (tests/infra/derive.py): every request each function's own Kubernetes adapter sends over
HTTP to the API emulator while the simulator runs the scenarios, turned into the authorizer's
verb and resource (infra.grants.kube_access). Compared both ways with the function's ClusterRole:
a verb nothing uses fails, and so does a request nothing grants (the mutation tests show both).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from infra.constructs.access import kubernetes_group
from infra.grants import KubeAccess, drift, kube_access, rbac_rules
from tests.infra.conftest import REPO_ROOT
from tests.infra.derive import FUNCTIONS, Recorder


def _documents() -> list[dict[str, Any]]:
    with (REPO_ROOT / "deploy" / "rbac.yaml").open() as stream:
        return [doc for doc in yaml.safe_load_all(stream) if doc]


def _role(function: str) -> dict[str, Any]:
    (role,) = [
        doc
        for doc in _documents()
        if doc["kind"] == "ClusterRole" and doc["metadata"]["name"] == f"nodewright-{function}"
    ]
    return role


def _strings(accesses: set[KubeAccess]) -> set[str]:
    return {str(access) for access in accesses}


@pytest.mark.parametrize("function", FUNCTIONS)
def test_each_cluster_role_grants_exactly_what_its_function_requests(derived: Recorder, function: str) -> None:
    found = drift(_strings(derived.kube[function]), _strings(rbac_rules(_role(function))))

    assert not found, f"{function}: {found}"


def test_there_is_one_role_and_one_binding_per_function_and_nothing_else() -> None:
    kinds = sorted((doc["kind"], doc["metadata"]["name"]) for doc in _documents())

    assert kinds == sorted(
        (kind, f"nodewright-{function}") for kind in ("ClusterRole", "ClusterRoleBinding") for function in FUNCTIONS
    )
    for function in FUNCTIONS:
        for rule in _role(function)["rules"]:
            assert "resourceNames" not in rule
            assert not any("*" in value for key in ("apiGroups", "resources", "verbs") for value in rule[key])


@pytest.mark.parametrize("function", FUNCTIONS)
def test_each_role_is_bound_to_the_group_of_its_functions_access_entry(function: str) -> None:
    (binding,) = [
        doc
        for doc in _documents()
        if doc["kind"] == "ClusterRoleBinding" and doc["metadata"]["name"] == f"nodewright-{function}"
    ]

    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": _role(function)["metadata"]["name"],
    }
    assert binding["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": kubernetes_group(function)}
    ]


def test_only_the_functions_that_drain_may_evict_or_patch_and_the_provisioner_only_deletes_stale_nodes(
    derived: Recorder,
) -> None:
    writes = {"create", "patch", "delete", "update", "deletecollection"}
    provisioner = rbac_rules(_role("provisioner"))
    events = {KubeAccess("events.k8s.io", "events", verb) for verb in ("create", "patch")}
    mirror = {KubeAccess("nodewright.io", "nodeclaims", verb) for verb in ("create", "patch", "delete")}

    # Besides its Events (Nominated, FailedScheduling), which every function writes, and its
    # NodeClaim mirror: the objects, and the NodePools' status (configSource=crd); the status of the
    # CapacityBuffers and NodeOverlays it read (configSource=crd); its standby nodes, cordoned
    # and tainted (patch).
    assert {a for a in provisioner if a.verb in writes} == {
        KubeAccess("", "nodes", "delete"),
        KubeAccess("", "nodes", "patch"),
        *events,
        *mirror,
        KubeAccess("nodewright.io", "nodepools/status", "patch"),
        KubeAccess("autoscaling.x-k8s.io", "capacitybuffers/status", "patch"),
        KubeAccess("karpenter.sh", "nodeoverlays/status", "patch"),
    }
    assert all(events <= rbac_rules(_role(function)) for function in FUNCTIONS)
    for function in ("interruption", "consolidator"):
        assert KubeAccess("", "pods/eviction", "create") in rbac_rules(_role(function))
        assert KubeAccess("", "pods", "delete") not in rbac_rules(_role(function))


def test_a_verb_nothing_uses_fails_the_check(derived: Recorder) -> None:
    role = copy.deepcopy(_role("provisioner"))
    role["rules"].append({"apiGroups": [""], "resources": ["nodes"], "verbs": ["update"]})

    found = drift(_strings(derived.kube["provisioner"]), _strings(rbac_rules(role)))

    assert found.unused == {"update nodes"}
    assert not found.ungranted


def test_a_request_nothing_grants_fails_the_check(derived: Recorder) -> None:
    requests = {*derived.kube["interruption"], kube_access("GET", "/api/v1/namespaces/default/pods", {"watch": "true"})}

    found = drift(_strings(requests), _strings(rbac_rules(_role("interruption"))))

    assert found.ungranted == {"watch pods"}
    assert not found.unused


@pytest.mark.parametrize(
    ("method", "path", "query", "expected"),
    [
        ("GET", "/api/v1/nodes", {"limit": 500}, KubeAccess("", "nodes", "list")),
        ("GET", "/api/v1/nodes", [("watch", True)], KubeAccess("", "nodes", "watch")),
        ("GET", "/api/v1/nodes/ip-10-0-0-1", None, KubeAccess("", "nodes", "get")),
        ("PATCH", "/api/v1/nodes/ip-10-0-0-1", None, KubeAccess("", "nodes", "patch")),
        ("DELETE", "/api/v1/nodes/ip-10-0-0-1", None, KubeAccess("", "nodes", "delete")),
        ("POST", "/api/v1/namespaces/a/pods/p/eviction", None, KubeAccess("", "pods/eviction", "create")),
        ("GET", "/apis/apps/v1/daemonsets", None, KubeAccess("apps", "daemonsets", "list")),
        ("GET", "/apis/karpenter.sh/v1/nodepools", None, KubeAccess("karpenter.sh", "nodepools", "list")),
    ],
)
def test_a_request_needs_the_verb_the_authorizer_derives(
    method: str, path: str, query: Any, expected: KubeAccess
) -> None:
    assert kube_access(method, f"https://cluster.example{path}", query) == expected
