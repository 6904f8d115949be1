"""Who may do what inside the EKS cluster: the node role and the functions' Kubernetes identity.

- The node role and instance profile every launched instance gets, with the three AWS-managed
  policies an EKS worker needs (and Session Manager's only when the deploy key
  `nodeSessionManager` asks for it: EKS does not need it, and it opens a shell on every node to
  whoever may start sessions), and an EC2_LINUX access entry so its kubelet can join.
- `grant_cluster_access(construct_id, role, function)` adds a STANDARD access entry mapping a
  function's role to that function's own Kubernetes group (`nodewright-<function>`). No EKS
  access policy is associated: the function's least-privilege ClusterRole in deploy/rbac.yaml,
  bound to that group, is its only grant.

The cluster itself is not created here: Nodewright installs into an existing cluster by name.
"""

from __future__ import annotations

from collections.abc import Mapping

import aws_cdk as cdk
from aws_cdk import aws_eks as eks
from aws_cdk import aws_iam as iam
from constructs import Construct


def kubernetes_group(function: str) -> str:
    """The Kubernetes group of one function's role (its ClusterRole in deploy/rbac.yaml is bound to it)."""
    return f"nodewright-{function}"


# Each AWS-managed policy of the node role, with why a node needs it (EKS User Guide, "Amazon EKS
# node IAM role"); AWS keeps them current with EKS. The reason is also the cdk-nag acknowledgement.
NODE_MANAGED_POLICIES: Mapping[str, str] = {
    "AmazonEKSWorkerNodePolicy": "The kubelet needs it to join the cluster and describe its node.",
    "AmazonEKS_CNI_Policy": (
        "The Amazon VPC CNI on each node assigns pod IP addresses with it "
        "(unless aws-node has its own role through IRSA or Pod Identity)."
    ),
    "AmazonEC2ContainerRegistryReadOnly": "Nodes pull the EKS add-on and pause images from ECR with it.",
}
SESSION_MANAGER_POLICY = "AmazonSSMManagedInstanceCore"
SESSION_MANAGER_REASON = "Session Manager access to the nodes, asked for with the deploy key nodeSessionManager."


class ClusterAccess(Construct):
    """Node role + instance profile + access entries for the cluster `cluster_name`."""

    node_role: iam.Role
    instance_profile: iam.InstanceProfile
    node_access_entry: eks.CfnAccessEntry

    def __init__(
        self, scope: Construct, construct_id: str, *, cluster_name: str, session_manager: bool = False
    ) -> None:
        """Create the node identity and let it join the cluster `cluster_name`; `session_manager`
        adds the Session Manager policy to the nodes.
        """
        super().__init__(scope, construct_id)
        self._cluster_name = cluster_name
        policies = dict(NODE_MANAGED_POLICIES)
        if session_manager:
            policies[SESSION_MANAGER_POLICY] = SESSION_MANAGER_REASON
        self.node_role = iam.Role(
            self,
            "NodeRole",
            assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"),
            description=f"Nodes launched by Nodewright for EKS cluster {cluster_name}",
            managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(name) for name in policies],
        )
        for name, reason in policies.items():
            cdk.Validations.of(self.node_role).acknowledge(
                cdk.Acknowledgment(
                    id=f"AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/{name}]", reason=reason
                )
            )
        self.instance_profile = iam.InstanceProfile(self, "NodeInstanceProfile", role=self.node_role)
        self.node_access_entry = eks.CfnAccessEntry(
            self,
            "NodeAccessEntry",
            cluster_name=cluster_name,
            principal_arn=self.node_role.role_arn,
            type="EC2_LINUX",
        )

    def grant_cluster_access(self, construct_id: str, role: iam.IRole, function: str) -> eks.CfnAccessEntry:
        """Map `role` to `function`'s Kubernetes group (its RBAC in deploy/rbac.yaml does the rest)."""
        return eks.CfnAccessEntry(
            self,
            construct_id,
            cluster_name=self._cluster_name,
            principal_arn=role.role_arn,
            type="STANDARD",
            kubernetes_groups=[kubernetes_group(function)],
        )
