"""Least privilege: each function role holds exactly the permissions its function needs."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Match

from infra.config import load_config
from infra.constructs import permissions
from tests.infra.conftest import CLUSTER, Synthesized

OWNED = {"StringEquals": {"aws:ResourceTag/nodewright.io/cluster": CLUSTER}}
REQUESTED = {"aws:RequestTag/nodewright.io/cluster": CLUSTER}


def ec2_arn(kind: str, *, account: bool = True) -> dict[str, object]:
    owner: list[object] = [":", {"Ref": "AWS::AccountId"}, f":{kind}/*"] if account else [f"::{kind}/*"]
    return {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":ec2:", {"Ref": "AWS::Region"}, *owner]]}


def policy_of(synthesized: Synthesized, role: iam.IRole, statements: list[Any]) -> None:
    synthesized.template.has_resource_properties(
        "AWS::IAM::Policy",
        {
            "Roles": [synthesized.resolve(role.role_name)],
            "PolicyDocument": {"Statement": Match.array_with(statements), "Version": "2012-10-17"},
        },
    )


@pytest.fixture(params=["provisioner", "consolidator"])
def launcher(request: pytest.FixtureRequest, synthesized: Synthesized) -> iam.IRole:
    role: iam.IRole = getattr(synthesized.stack, request.param).role
    return role


def test_launchers_create_fleets_instances_and_templates_only_with_our_request_tags(
    synthesized: Synthesized, launcher: iam.IRole
) -> None:
    fleet = ["fleet", "instance", "volume", "network-interface", "spot-instances-request"]
    created = [*fleet, "launch-template"]
    policy_of(
        synthesized,
        launcher,
        [
            Match.object_like(
                {
                    "Action": ["ec2:CreateFleet", "ec2:RunInstances"],
                    "Resource": [ec2_arn(kind) for kind in fleet],
                    "Condition": {
                        "StringEquals": REQUESTED,
                        "StringLike": {"aws:RequestTag/nodewright.io/nodepool": "*"},
                    },
                }
            ),
            Match.object_like(
                {
                    "Action": "ec2:CreateLaunchTemplate",
                    "Resource": ec2_arn("launch-template"),
                    "Condition": {
                        "StringEquals": REQUESTED,
                        "StringLike": {"aws:RequestTag/nodewright.io/nodeclass": "*"},
                    },
                }
            ),
            Match.object_like(
                {
                    "Action": "ec2:CreateTags",
                    "Resource": [ec2_arn(kind) for kind in created],
                    "Condition": {
                        "StringEquals": {
                            "ec2:CreateAction": ["CreateFleet", "RunInstances", "CreateLaunchTemplate"],
                            **REQUESTED,
                        }
                    },
                }
            ),
            Match.object_like(
                {
                    "Effect": "Deny",
                    "Action": "ec2:CreateTags",
                    "Resource": [ec2_arn(kind) for kind in created],
                    "Condition": {
                        "Null": {"ec2:CreateAction": "true"},
                        "ForAnyValue:StringLike": {"aws:TagKeys": ["nodewright.io/*"]},
                    },
                }
            ),
            Match.object_like(
                {
                    "Action": ["ec2:CreateFleet", "ec2:DeleteLaunchTemplate", "ec2:RunInstances"],
                    "Resource": ec2_arn("launch-template"),
                    # Templates the functions created: they carry both tags the creating call wrote.
                    "Condition": {**OWNED, "StringLike": {"aws:ResourceTag/nodewright.io/nodeclass": "*"}},
                }
            ),
        ],
    )


def test_launchers_reference_only_discovery_tagged_networks_and_amazon_or_listed_images(
    synthesized: Synthesized, launcher: iam.IRole
) -> None:
    config = load_config({"clusterName": CLUSTER})
    discovery = {f"aws:ResourceTag/{config.discovery_tag_key}": config.effective_discovery_tag_value}
    policy_of(
        synthesized,
        launcher,
        [
            Match.object_like(
                {
                    "Action": ["ec2:CreateFleet", "ec2:RunInstances"],
                    "Resource": Match.array_with([ec2_arn("capacity-reservation"), ec2_arn("placement-group")]),
                }
            ),
            Match.object_like(
                {
                    "Action": ["ec2:CreateFleet", "ec2:RunInstances"],
                    "Resource": [ec2_arn("subnet"), ec2_arn("security-group")],
                    "Condition": {"StringEquals": discovery},
                }
            ),
            Match.object_like(
                {
                    "Action": ["ec2:CreateFleet", "ec2:RunInstances"],
                    "Resource": ec2_arn("image", account=False),
                    "Condition": {"StringEquals": {"ec2:Owner": ["amazon"]}},
                }
            ),
        ],
    )
    for statement in synthesized.statements_of(launcher):
        resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        if any(r in (ec2_arn("subnet"), ec2_arn("security-group"), ec2_arn("image", account=False)) for r in resources):
            assert "Condition" in statement, statement


def test_launchers_are_denied_instances_without_imdsv2_and_unencrypted_volumes(
    synthesized: Synthesized, launcher: iam.IRole
) -> None:
    policy_of(
        synthesized,
        launcher,
        [
            Match.object_like(
                {
                    "Effect": "Deny",
                    "Action": "ec2:RunInstances",
                    "Resource": ec2_arn("instance"),
                    "Condition": {"StringNotEquals": {"ec2:MetadataHttpTokens": "required"}},
                }
            ),
            Match.object_like(
                {
                    "Effect": "Deny",
                    "Action": "ec2:RunInstances",
                    "Resource": ec2_arn("volume"),
                    "Condition": {"Bool": {"ec2:Encrypted": "false"}},
                }
            ),
        ],
    )


def test_launchers_pass_only_the_node_role_and_only_to_ec2(synthesized: Synthesized, launcher: iam.IRole) -> None:
    policy_of(
        synthesized,
        launcher,
        [
            Match.object_like(
                {
                    "Action": "iam:PassRole",
                    "Resource": synthesized.resolve(synthesized.stack.access.node_role.role_arn),
                    "Condition": {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}},
                }
            )
        ],
    )


def test_launchers_read_prices_public_ami_parameters_and_this_cluster_only(
    synthesized: Synthesized, launcher: iam.IRole
) -> None:
    ssm = ["arn:", {"Ref": "AWS::Partition"}, ":ssm:", {"Ref": "AWS::Region"}]
    policy_of(
        synthesized,
        launcher,
        [
            Match.object_like({"Action": "pricing:GetProducts", "Resource": "*"}),
            Match.object_like(
                {
                    "Action": "ssm:GetParameter",
                    "Resource": [
                        {"Fn::Join": ["", [*ssm, "::parameter/aws/service/eks/optimized-ami/*"]]},
                        {"Fn::Join": ["", [*ssm, "::parameter/aws/service/bottlerocket/*"]]},
                    ],
                }
            ),
            Match.object_like(
                {
                    "Action": "eks:DescribeCluster",
                    "Resource": {
                        "Fn::Join": [
                            "",
                            [
                                "arn:",
                                {"Ref": "AWS::Partition"},
                                ":eks:",
                                {"Ref": "AWS::Region"},
                                ":",
                                {"Ref": "AWS::AccountId"},
                                f":cluster/{CLUSTER}",
                            ],
                        ]
                    },
                }
            ),
        ],
    )


@pytest.mark.parametrize("name", ["provisioner", "interruption", "consolidator"])
def test_instances_are_terminated_only_when_they_carry_our_cluster_tag(synthesized: Synthesized, name: str) -> None:
    role = getattr(synthesized.stack, name).role
    profile = synthesized.resolve(synthesized.stack.access.instance_profile.instance_profile_arn)
    owned = {**OWNED, "ArnLike": {"ec2:InstanceProfile": [profile]}}
    policy_of(
        synthesized,
        role,
        [Match.object_like({"Action": "ec2:TerminateInstances", "Resource": ec2_arn("instance"), "Condition": owned})],
    )
    for statement in synthesized.statements_of(role):
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        if "ec2:TerminateInstances" in actions:
            assert statement["Condition"] == owned


@pytest.mark.parametrize("name", ["provisioner", "interruption", "consolidator"])
def test_tags_are_written_only_by_the_call_that_creates_the_resource(synthesized: Synthesized, name: str) -> None:
    """No CreateTags on existing resources: a role could otherwise rewrite the ownership tag."""
    for statement in synthesized.statements_of(getattr(synthesized.stack, name).role):
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        if "ec2:CreateTags" in actions and statement.get("Effect") == "Allow":
            assert actions == ["ec2:CreateTags"]
            assert "ec2:CreateAction" in statement["Condition"]["StringEquals"]


def test_describe_actions_are_the_only_ec2_grants_on_star(synthesized: Synthesized) -> None:
    """Describe* calls have no resource-level permissions, so "*" is unavoidable for them only."""
    for role in (
        synthesized.stack.provisioner.role,
        synthesized.stack.consolidator.role,
        synthesized.stack.interruption.role,
    ):
        for statement in synthesized.statements_of(role):
            if statement["Resource"] == "*":
                actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
                assert all(a.startswith("ec2:Describe") or a == "pricing:GetProducts" for a in actions), actions


def test_interruption_may_invoke_the_provisioner_send_and_receive_on_its_queues(synthesized: Synthesized) -> None:
    stack = synthesized.stack
    queue_arn = synthesized.resolve(stack.interruption.queue.queue_arn)
    priority_arn = synthesized.resolve(stack.interruption.priority_queue.queue_arn)
    policy_of(
        synthesized,
        stack.interruption.role,
        [
            Match.object_like(
                {
                    "Action": "lambda:InvokeFunction",
                    "Resource": synthesized.resolve(stack.provisioner.function.function_arn),
                }
            ),
            Match.object_like(
                {
                    "Action": ["sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ReceiveMessage", "sqs:SendMessage"],
                    "Resource": queue_arn,
                }
            ),
            # The priority queue: polled by its event source, never sent to.
            Match.object_like(
                {
                    "Action": ["sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ReceiveMessage"],
                    "Resource": priority_arn,
                }
            ),
        ],
    )


def test_interruption_cannot_launch_or_pass_roles(synthesized: Synthesized) -> None:
    actions = synthesized.actions_of(synthesized.stack.interruption.role)

    assert not actions & {"ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate", "iam:PassRole"}
    assert "pricing:GetProducts" not in actions


def test_only_interruption_invokes_functions_or_touches_the_queue(synthesized: Synthesized) -> None:
    for role in (synthesized.stack.provisioner.role, synthesized.stack.consolidator.role):
        actions = synthesized.actions_of(role)
        assert "lambda:InvokeFunction" not in actions
        assert not {a for a in actions if a.startswith("sqs:")}


def test_no_role_is_granted_a_wildcard_action(synthesized: Synthesized) -> None:
    stack = synthesized.stack
    for role in (stack.provisioner.role, stack.interruption.role, stack.consolidator.role):
        assert not {a for a in synthesized.actions_of(role) if "*" in a}


def test_functions_write_logs_only_to_their_own_log_group(synthesized: Synthesized) -> None:
    stack = synthesized.stack
    for construct in (stack.provisioner, stack.interruption, stack.consolidator):
        policy_of(
            synthesized,
            construct.role,
            [
                Match.object_like(
                    {
                        "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
                        "Resource": synthesized.resolve(construct.handler.log_group.log_group_arn),
                    }
                )
            ],
        )


@pytest.mark.parametrize(
    ("imdsv2", "encrypted", "guards"),
    [
        (True, True, {"instance", "volume"}),
        (False, True, {"volume"}),
        (True, False, {"instance"}),
        (False, False, set()),
    ],
)
def test_each_launch_guard_can_be_turned_off_at_deploy_time(imdsv2: bool, encrypted: bool, guards: set[str]) -> None:
    config = load_config({"requireImdsv2": str(imdsv2).lower(), "requireEncryptedVolumes": str(encrypted).lower()})
    policy = permissions.PolicyBuilder()
    permissions.allow_launch(
        policy,
        cluster_name=CLUSTER,
        node_role_arn="arn:aws:iam::123456789012:role/node",
        discovery_tag=(config.discovery_tag_key, config.effective_discovery_tag_value),
        require_imdsv2=config.require_imdsv2,
        require_encrypted_volumes=config.require_encrypted_volumes,
    )

    denied = {
        resource.rsplit(":", 1)[-1].split("/")[0]
        for statement in policy.statements
        if statement.effect == iam.Effect.DENY and "ec2:RunInstances" in statement.actions
        for resource in statement.resources
    }

    assert denied == guards
