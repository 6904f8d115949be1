"""`deploy/pod-patch-policy.yaml`: the admission policy that bounds the consolidator's `patch` on pods.

RBAC cannot name fields, so the consolidator's `patch` on pods (deletion-cost steering) is bounded
by a ValidatingAdmissionPolicy: a request from the `nodewright-consolidator` group may change a
pod's two deletion-cost annotations and nothing else. These tests run the policy's own CEL, read
from the file kubectl applies, with a CEL evaluator (cel-python), in the order kube-apiserver does:
match conditions, then the variables in order, then every validation.

Real: the policy file; the adapter's merge patch (`KubeCluster.annotate_pod`) over HTTP against the
API emulator, whose pod JSON before and after is what the policy judges. Observed: whether the
request matches and which validations deny it.

What the evaluator here does not do that kube-apiserver does: type-check the expressions against
the pod's OpenAPI schema and bound their cost; the policy uses only standard CEL (`has`, `all`,
`in`, map and list equality), which both evaluate alike.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import celpy
import pytest
import yaml
from celpy.adapter import json_to_cel

from nodewright.inmemory.apiserver import ApiServer
from tests.inmemory.test_apiserver import adapter, call, populated

pytestmark = pytest.mark.integration

POLICY = Path(__file__).resolve().parents[2] / "deploy" / "pod-patch-policy.yaml"
COST = "controller.kubernetes.io/pod-deletion-cost"
STEERED = "nodewright.io/deletion-cost"
CONSOLIDATOR = {"username": "nodewright-consolidator", "groups": ["nodewright-consolidator", "system:authenticated"]}


@dataclass(frozen=True)
class Verdict:
    """What admission decided for one request: whether the policy applied, and its denials."""

    matched: bool
    denials: tuple[str, ...]

    @property
    def admitted(self) -> bool:
        return not self.denials


class Policy:
    """The ValidatingAdmissionPolicy of one file, evaluated as kube-apiserver evaluates it."""

    def __init__(self, path: Path) -> None:
        documents = [d for d in yaml.safe_load_all(path.read_text()) if d]
        policies = [d for d in documents if d["kind"] == "ValidatingAdmissionPolicy"]
        bindings = [d for d in documents if d["kind"] == "ValidatingAdmissionPolicyBinding"]
        assert len(policies) == 1, f"{path}: one ValidatingAdmissionPolicy expected"
        assert len(bindings) == 1, f"{path}: one ValidatingAdmissionPolicyBinding expected"
        self.spec: dict[str, Any] = policies[0]["spec"]
        self.binding: dict[str, Any] = bindings[0]["spec"]
        self._env = celpy.Environment()
        # Compiled once: a syntax error in the file fails here, naming the expression.
        self._programs = {
            expr: self._env.program(self._env.compile(expr))
            for expr in self._expressions()
        }  # fmt: skip

    def _expressions(self) -> list[str]:
        spec = self.spec
        return [
            *(c["expression"] for c in spec.get("matchConditions", [])),
            *(v["expression"] for v in spec.get("variables", [])),
            *(v["expression"] for v in spec["validations"]),
        ]

    def _eval(self, expression: str, activation: dict[str, Any]) -> Any:
        return self._programs[expression].evaluate(activation)

    def review(
        self, old: dict[str, Any], new: dict[str, Any], user: dict[str, Any], operation: str = "UPDATE"
    ) -> Verdict:
        """The policy's verdict on `user` turning pod `old` into `new`."""
        rules = self.spec["matchConstraints"]["resourceRules"]
        if not any(operation in r["operations"] and "pods" in r["resources"] for r in rules):
            return Verdict(False, ())
        activation: dict[str, Any] = {
            "object": json_to_cel(new),
            "oldObject": json_to_cel(old),
            "request": json_to_cel({"operation": operation, "userInfo": user}),
        }
        if not all(_true(self._eval(c["expression"], activation)) for c in self.spec.get("matchConditions", [])):
            return Verdict(False, ())
        variables: dict[str, Any] = {}
        for variable in self.spec.get("variables", []):  # each sees the ones before it
            activation["variables"] = _cel_map(variables)
            variables[variable["name"]] = self._eval(variable["expression"], activation)
        activation["variables"] = _cel_map(variables)
        denials = tuple(
            v["message"] for v in self.spec["validations"] if not _true(self._eval(v["expression"], activation))
        )
        return Verdict(True, denials)


def _cel_map(values: dict[str, Any]) -> Any:
    return celpy.celtypes.MapType({celpy.celtypes.StringType(k): v for k, v in values.items()})


def _true(result: Any) -> bool:
    """A validation holds only on a boolean true: an evaluation error (cel-python returns it as a
    value) denies, as `failurePolicy: Fail` makes kube-apiserver deny.
    """
    return isinstance(result, celpy.celtypes.BoolType) and bool(result)


@pytest.fixture(scope="module")
def policy() -> Policy:
    return Policy(POLICY)


def served(server: ApiServer, name: str) -> dict[str, Any]:
    answer = call(server, "GET", f"/api/v1/namespaces/default/pods/{name}")
    assert answer.status == 200
    body: dict[str, Any] = answer.body
    return body


def test_the_binding_denies_and_names_the_policy(policy: Policy) -> None:
    assert policy.binding["policyName"] == "nodewright-consolidator-pod-patches"
    assert policy.binding["validationActions"] == ["Deny"]
    assert policy.spec["failurePolicy"] == "Fail"


def test_the_consolidators_real_writes_are_admitted(policy: Policy) -> None:
    cluster = populated()
    web = cluster.get_pod("default/web-1")
    assert web is not None
    with ApiServer(cluster) as server:
        kube = adapter(server)
        bare = served(server, "web-1")  # a pod with no annotations at all: `has()` must hold
        assert kube.annotate_pod(web, {COST: "-999998", STEERED: "-999998"})
        steered = served(server, "web-1")
        assert kube.annotate_pod(web, {COST: "-999997", STEERED: "-999997"})
        moved = served(server, "web-1")
        assert kube.annotate_pod(web, {COST: None, STEERED: None})
        taken_back = served(server, "web-1")

    assert steered["metadata"]["annotations"][COST] == "-999998"
    for old, new in ((bare, steered), (steered, moved), (moved, taken_back)):
        verdict = policy.review(old, new, CONSOLIDATOR)
        assert verdict.matched
        assert verdict.admitted, verdict.denials


def _changed(pod: dict[str, Any], change: Any) -> dict[str, Any]:
    new = copy.deepcopy(pod)
    change(new)
    return new


def _annotate(pod: dict[str, Any], key: str, value: str | None) -> None:
    annotations = pod["metadata"].setdefault("annotations", {})
    if value is None:
        annotations.pop(key, None)
    else:
        annotations[key] = value


@pytest.mark.parametrize(
    ("change", "denial"),
    [
        (lambda p: p["spec"].update(nodeName="node-2"), "spec"),
        (lambda p: p["spec"]["containers"][0].update(image="attacker/miner"), "spec"),
        (lambda p: p["metadata"].setdefault("labels", {}).update(app="other"), "labels"),
        (lambda p: p["metadata"]["labels"].clear(), "labels"),
        (lambda p: p["metadata"].setdefault("finalizers", []).append("example.com/hold"), "owners or finalizers"),
        (lambda p: p["metadata"].update(ownerReferences=[]), "owners or finalizers"),
        (lambda p: _annotate(p, "team", "payments"), "deletion-cost annotations"),
        (lambda p: _annotate(p, "owner", "someone-else"), "deletion-cost annotations"),
        (lambda p: _annotate(p, "owner", None), "deletion-cost annotations"),
    ],
    ids=[
        "node", "image", "label-changed", "labels-removed", "finalizer", "owners",
        "annotation-added", "annotation-changed", "annotation-removed",
    ],
)  # fmt: skip
def test_any_other_change_is_denied(policy: Policy, change: Any, denial: str) -> None:
    cluster = populated()
    web = cluster.get_pod("default/web-2")
    assert web is not None
    cluster.annotate_pod(web, {"owner": "platform"})
    with ApiServer(cluster) as server:
        old = served(server, "web-2")
    assert old["metadata"].get("ownerReferences"), "the emulator serves the pod's owner"

    def forged(pod: dict[str, Any]) -> None:
        """The change with a deletion cost beside it, as a forged steering write would carry it."""
        change(pod)
        _annotate(pod, COST, "-999998")

    new = _changed(old, forged)
    verdict = policy.review(old, new, CONSOLIDATOR)

    assert verdict.matched
    assert [d for d in verdict.denials if denial in d], verdict.denials


def test_other_users_and_other_operations_are_not_this_policys_business(policy: Policy) -> None:
    cluster = populated()
    with ApiServer(cluster) as server:
        old = served(server, "web-1")
    relabelled = _changed(old, lambda p: p["metadata"].setdefault("labels", {}).update(app="other"))

    assert not policy.review(old, relabelled, {"username": "alice", "groups": ["system:masters"]}).matched
    assert not policy.review(old, relabelled, CONSOLIDATOR, operation="CREATE").matched
