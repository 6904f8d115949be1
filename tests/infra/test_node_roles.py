"""The deploy key nodeRoles: the node roles the functions may pass, and the instance profiles they keep.

What is real: the app synthesized as app.py builds it with `-c nodeRoles=...` (and the session's
default synthesis, without it); cdk-nag over it. Observed: the launching roles' IAM statements,
the functions' environment and the NodeRoles output.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import cdk_nag
import pytest

import app as nodewright_app
from infra.config import ConfigError, load_config
from tests.infra.conftest import CLUSTER, CONTEXT, Synthesized

ROLE_ARN = "arn:aws:iam::123456789012:role/teams/PaymentsNodeRole"
PROFILES = ["arn:", {"Ref": "AWS::Partition"}, ":iam::", {"Ref": "AWS::AccountId"}]


@pytest.fixture(scope="module")
def with_roles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    app = cdk.App(
        context={**CONTEXT, "nodeRoles": f"KarpenterNodeRole-{CLUSTER},{ROLE_ARN}"},
        outdir=str(tmp_path_factory.mktemp("cdk.out")),
    )
    stack = nodewright_app.build_app(app, environ={})
    document = app.synth().get_stack_by_name(stack.stack_name).template
    return {"app": app, "stack": stack, "document": json.loads(json.dumps(document))}


def _statements(document: dict[str, Any], function: str) -> list[dict[str, Any]]:
    return [
        statement
        for key, resource in document["Resources"].items()
        if resource["Type"] == "AWS::IAM::Policy" and key.startswith(function)
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]
    ]


def _iam(document: dict[str, Any], function: str) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for statement in _statements(document, function):
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        for action in actions:
            if action.startswith("iam:"):
                found[action] = statement
    return found


def test_by_default_only_the_stacks_own_role_is_passed_and_no_profile_is_touched(synthesized: Synthesized) -> None:
    for role in (synthesized.stack.provisioner.role, synthesized.stack.consolidator.role):
        actions = {a for a in synthesized.actions_of(role) if a.startswith("iam:")}
        assert actions == {"iam:PassRole"}
        (passing,) = [s for s in synthesized.statements_of(role) if s["Action"] == "iam:PassRole"]
        assert passing["Resource"] == synthesized.resolve(synthesized.stack.access.node_role.role_arn)


@pytest.mark.parametrize("function", ["Provisioner", "Consolidator"])
def test_listed_roles_are_passed_and_their_profiles_kept_only_under_the_clusters_path_and_tag(
    with_roles: dict[str, Any], function: str
) -> None:
    iam = _iam(with_roles["document"], function)
    stack = with_roles["stack"]

    passed = iam["iam:PassRole"]["Resource"]
    assert passed[0] == stack.resolve(stack.access.node_role.role_arn)
    assert passed[1] == {"Fn::Join": ["", [*PROFILES, f":role/KarpenterNodeRole-{CLUSTER}"]]}
    assert passed[2] == ROLE_ARN
    assert iam["iam:PassRole"]["Condition"] == {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}}
    ours = {"Fn::Join": ["", [*PROFILES, f":instance-profile/nodewright/{CLUSTER}/*"]]}
    for action in ("iam:CreateInstanceProfile", "iam:TagInstanceProfile"):
        assert iam[action]["Resource"] == ours
        assert iam[action]["Condition"] == {"StringEquals": {"aws:RequestTag/nodewright.io/cluster": CLUSTER}}
    for action in ("iam:AddRoleToInstanceProfile", "iam:RemoveRoleFromInstanceProfile"):
        assert iam[action]["Resource"] == ours
        assert iam[action]["Condition"] == {"StringEquals": {"aws:ResourceTag/nodewright.io/cluster": CLUSTER}}
    assert "iam:DeleteInstanceProfile" not in iam
    assert set(iam) == {
        "iam:PassRole",
        "iam:GetInstanceProfile",
        "iam:CreateInstanceProfile",
        "iam:TagInstanceProfile",
        "iam:AddRoleToInstanceProfile",
        "iam:RemoveRoleFromInstanceProfile",
    }
    assert _iam(with_roles["document"], "Interruption") == {}


def test_the_functions_learn_the_roles_and_the_output_lists_them_for_validate(with_roles: dict[str, Any]) -> None:
    document = with_roles["document"]
    functions = [r for r in document["Resources"].values() if r["Type"] == "AWS::Lambda::Function"]
    variables = [f["Properties"]["Environment"]["Variables"] for f in functions]
    assert variables
    assert {v.get("NODE_ROLES") for v in variables} == {f"KarpenterNodeRole-{CLUSTER},{ROLE_ARN}"}
    output = document["Outputs"]["NodeRoles"]["Value"]["Fn::Join"]
    assert output[0] == ","
    assert ",".join(output[1][1:]) == f"KarpenterNodeRole-{CLUSTER},{ROLE_ARN}"  # CDK joins the literals


def test_the_template_with_roles_passes_cdk_nag(with_roles: dict[str, Any]) -> None:
    report = cdk_nag.AwsSolutionsChecks(with_roles["app"]).validate_scope(with_roles["app"])
    findings = [
        f"{violation.rule_name} at {resource.construct_path}"
        for violation in report.violations
        for resource in violation.violating_resources
    ]
    assert findings == []


def test_a_bad_role_is_named_in_the_deploy_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="context key 'nodeRoles': 'not a role!' is neither an IAM role name"):
        load_config({"clusterName": CLUSTER, "nodeRoles": "KarpenterNodeRole-demo,not a role!"})
    assert load_config({"clusterName": CLUSTER, "nodeRoles": ["a", "b"]}).node_roles == ("a", "b")


@pytest.mark.parametrize("function", ["Provisioner", "Interruption", "Consolidator"])
def test_instances_launched_with_a_listed_roles_profile_may_be_terminated(
    with_roles: dict[str, Any], function: str
) -> None:
    # The termination condition names the profiles the functions keep for the listed roles (a
    # path pattern, hence ArnLike), beside the stack's own: their nodes can be consolidated.
    (terminate,) = [s for s in _statements(with_roles["document"], function) if s["Action"] == "ec2:TerminateInstances"]
    profiles = terminate["Condition"]["ArnLike"]["ec2:InstanceProfile"]
    stack = with_roles["stack"]
    assert profiles[0] == stack.resolve(stack.access.instance_profile.instance_profile_arn)
    assert {"Fn::Join": ["", [*PROFILES, f":instance-profile/nodewright/{CLUSTER}/*"]]} in profiles
