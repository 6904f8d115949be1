"""Who may do what inside the EKS cluster: the node role and the functions' Kubernetes identity.

- The node role and instance profile every launched instance gets, with the four AWS-managed
  policies an EKS worker needs, and an EC2_LINUX access entry so its kubelet can join.
- `grant_cluster_access(construct_id, role, function)` adds a STANDARD access entry mapping a
  function's role to that function's own Kubernetes group (`nodewright-<function>`). No EKS
  access policy is associated: the function's least-privilege ClusterRole in deploy/rbac.yaml,
  bound to that group, is its only grant.

The cluster itself is not created here: Nodewright installs into an existing cluster by name.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_eks as eks
from aws_cdk import aws_iam as iam
from constructs import Construct


def kubernetes_group(function: str) -> str:
    """The Kubernetes group of one function's role (its ClusterRole in deploy/rbac.yaml is bound to it)."""
    return f"nodewright-{function}"


NODE_MANAGED_POLICIES: tuple[str, ...] = (
    "AmazonEKSWorkerNodePolicy",
    "AmazonEKS_CNI_Policy",
    "AmazonEC2ContainerRegistryReadOnly",
    "AmazonSSMManagedInstanceCore",
)


class ClusterAccess(Construct):
    """Node role + instance profile + access entries for the cluster `cluster_name`."""

    node_role: iam.Role
    instance_profile: iam.InstanceProfile
    node_access_entry: eks.CfnAccessEntry

    def __init__(self, scope: Construct, construct_id: str, *, cluster_name: str) -> None:
        """Create the node identity and let it join the cluster `cluster_name`."""
        super().__init__(scope, construct_id)
        self._cluster_name = cluster_name
        self.node_role = iam.Role(
            self,
            "NodeRole",
            assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"),
            description=f"Nodes launched by Nodewright for EKS cluster {cluster_name}",
            managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(name) for name in NODE_MANAGED_POLICIES],
        )
        for name in NODE_MANAGED_POLICIES:
            cdk.Validations.of(self.node_role).acknowledge(
                cdk.Acknowledgment(
                    id=f"AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/{name}]",
                    reason="EKS requires this AWS-managed worker-node policy; AWS keeps it current with EKS.",
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
