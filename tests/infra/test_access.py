"""Access construct: the node role and instance profile, and the EKS access entries."""

from __future__ import annotations

from aws_cdk.assertions import Match

from tests.infra.conftest import CLUSTER, Synthesized


def _managed(name: str) -> dict[str, object]:
    return {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, f":iam::aws:policy/{name}"]]}


def test_node_role_has_the_three_eks_worker_policies_and_an_instance_profile(synthesized: Synthesized) -> None:
    synthesized.template.has_resource_properties(
        "AWS::IAM::Role",
        {
            "AssumeRolePolicyDocument": Match.object_like(
                {"Statement": [Match.object_like({"Principal": {"Service": "ec2.amazonaws.com"}})]}
            ),
            "ManagedPolicyArns": [
                _managed("AmazonEKSWorkerNodePolicy"),
                _managed("AmazonEKS_CNI_Policy"),
                _managed("AmazonEC2ContainerRegistryReadOnly"),
            ],
        },
    )
    synthesized.template.has_resource_properties(
        "AWS::IAM::InstanceProfile",
        {"Roles": [synthesized.resolve(synthesized.stack.access.node_role.role_name)]},
    )


def test_nodes_join_through_an_ec2_linux_access_entry(synthesized: Synthesized) -> None:
    synthesized.template.has_resource_properties(
        "AWS::EKS::AccessEntry",
        {
            "ClusterName": CLUSTER,
            "Type": "EC2_LINUX",
            "PrincipalArn": synthesized.resolve(synthesized.stack.access.node_role.role_arn),
        },
    )


def test_each_function_role_maps_to_its_own_group_without_an_access_policy(synthesized: Synthesized) -> None:
    stack = synthesized.stack
    for function in ("provisioner", "interruption", "consolidator"):
        role = getattr(stack, function).role
        synthesized.template.has_resource_properties(
            "AWS::EKS::AccessEntry",
            {
                "ClusterName": CLUSTER,
                "Type": "STANDARD",
                "KubernetesGroups": [f"nodewright-{function}"],
                "PrincipalArn": synthesized.resolve(role.role_arn),
                "AccessPolicies": Match.absent(),
            },
        )
    synthesized.template.resource_count_is("AWS::EKS::AccessEntry", 4)


def test_session_manager_on_the_nodes_is_a_deploy_key_off_by_default() -> None:
    from infra.config import load_config

    assert load_config({}).node_session_manager is False
    assert load_config({"nodeSessionManager": "true"}).node_session_manager is True


def test_with_the_key_the_nodes_get_session_manager_with_its_reason() -> None:
    import aws_cdk as cdk
    from aws_cdk import assertions

    from infra.constructs.access import SESSION_MANAGER_REASON, ClusterAccess

    stack = cdk.Stack(cdk.App(), "SessionManager")
    ClusterAccess(stack, "Access", cluster_name=CLUSTER, session_manager=True)

    assertions.Template.from_stack(stack).has_resource_properties(
        "AWS::IAM::Role", {"ManagedPolicyArns": Match.array_with([_managed("AmazonSSMManagedInstanceCore")])}
    )
    assert "nodeSessionManager" in SESSION_MANAGER_REASON
