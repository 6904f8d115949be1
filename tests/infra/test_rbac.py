"""deploy/rbac.yaml: the ClusterRole bound to the `nodewright` group grants only what the functions use."""

from __future__ import annotations

from typing import Any

import yaml

from infra.constructs.access import KUBERNETES_GROUP
from tests.infra.conftest import REPO_ROOT

EXPECTED_RULES = {
    ("", "nodes"): {"get", "list", "watch", "patch", "delete"},
    ("", "pods"): {"get", "list", "watch"},
    ("", "pods/eviction"): {"create"},
    ("", "events"): {"create"},
    ("policy", "poddisruptionbudgets"): {"list", "watch"},
    ("apps", "daemonsets"): {"list", "watch"},
    ("events.k8s.io", "events"): {"create"},
    ("nodewright.io", "nodepools"): {"get", "list", "watch"},
    ("nodewright.io", "ec2nodeclasses"): {"get", "list", "watch"},
}


def _documents() -> list[dict[str, Any]]:
    with (REPO_ROOT / "deploy" / "rbac.yaml").open() as stream:
        return [doc for doc in yaml.safe_load_all(stream) if doc]


def test_cluster_role_grants_exactly_the_listed_verbs() -> None:
    (role,) = [doc for doc in _documents() if doc["kind"] == "ClusterRole"]
    granted: dict[tuple[str, str], set[str]] = {}
    for rule in role["rules"]:
        assert "resourceNames" not in rule
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                granted.setdefault((group, resource), set()).update(rule["verbs"])

    assert granted == EXPECTED_RULES
    assert not any("*" in verb for verbs in granted.values() for verb in verbs)


def test_cluster_role_is_bound_to_the_group_of_the_access_entries() -> None:
    documents = _documents()
    (role,) = [doc for doc in documents if doc["kind"] == "ClusterRole"]
    (binding,) = [doc for doc in documents if doc["kind"] == "ClusterRoleBinding"]

    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": role["metadata"]["name"],
    }
    assert binding["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": KUBERNETES_GROUP}]
