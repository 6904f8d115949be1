"""IAM statements the Nodewright functions need, built so that every wildcard carries its reason.

Role: each function construct asks a `PolicyBuilder` for exactly the permissions it uses (the
building blocks below are shared so the provisioner and consolidator launch nodes under the same
rules). The builder records, next to each statement, the cdk-nag AwsSolutions-IAM5 findings the
statement will raise and the one-line reason for accepting it; `acknowledge(construct)` then
records those acknowledgements on the construct holding the policy. A wildcard without a reason is
a programming error, raised at synth time.

Ownership is proved by tags, as Karpenter does it: everything Nodewright creates carries
`nodewright.io/cluster: <cluster>` (enforced with `aws:RequestTag` on create), and destructive or
mutating calls on existing instances require that tag (`aws:ResourceTag`). A tag is not enough on
its own (anyone allowed to tag could claim an instance), so termination also requires the node
instance profile (`ec2:InstanceProfile`), and a `nodewright.io/*` tag is never written after
creation. Launches reference only subnets and security groups carrying the discovery tag, images
owned by Amazon or by the accounts the deploy lists (`ec2:Owner`), and launch templates carrying
both the cluster and the EC2NodeClass tags the functions write when they create one.

ARNs are written with the pseudo-parameter tokens (`cdk.Aws.REGION`, ...) rather than the stack's
concrete region so the nag finding ids below are the same for env-agnostic and pinned stacks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from constructs import IConstruct

CLUSTER_TAG_KEY = "nodewright.io/cluster"

# Describe calls and the Price List API support no resource-level permissions (AWS Service
# Authorization Reference), so they can only be granted on "*". What launching needs: the
# catalog (instance types, offerings, spot prices, the capacity reservations a NodeClass selects)
# and NodeClass resolution (subnets, security groups, AMIs selected by id, name or tags). Exactly
# what the functions call: see tests/infra/test_derived_grants.py.
EC2_DESCRIBE_ACTIONS: tuple[str, ...] = (
    "ec2:DescribeCapacityReservations",
    "ec2:DescribeImages",
    "ec2:DescribeInstanceTypeOfferings",
    "ec2:DescribeInstanceTypes",
    "ec2:DescribeSecurityGroups",
    "ec2:DescribeSpotPriceHistory",
    "ec2:DescribeSubnets",
)
# The provisioner also lists the cluster's instances (launches that never registered, orphans).
DESCRIBE_INSTANCES = "ec2:DescribeInstances"
# The interruption function asks EC2 what a message claims: the instance's state (by id) and a
# spot instance's request status (controllers/verification.py).
DESCRIBE_SPOT_REQUESTS = "ec2:DescribeSpotInstanceRequests"
# The consolidator reads the EC2 status checks of the cluster's instances (node repair).
DESCRIBE_INSTANCE_STATUS = "ec2:DescribeInstanceStatus"
LAUNCH_ACTIONS: tuple[str, ...] = ("ec2:CreateFleet", "ec2:RunInstances")
# Resource types a fleet launch creates; with launch templates, every resource type Nodewright
# creates (and so tags at creation).
CREATED_BY_FLEET: tuple[str, ...] = ("fleet", "instance", "volume", "network-interface", "spot-instances-request")
CREATED_BY_LAUNCH: tuple[str, ...] = (*CREATED_BY_FLEET, "launch-template")
# Tags every launch and every launch template carries (nodewright.adapters.aws.ec2 and
# .launch_template): the NodePool a node is for, the EC2NodeClass a template is built from.
NODEPOOL_TAG_KEY = "nodewright.io/nodepool"
NODECLASS_TAG_KEY = "nodewright.io/nodeclass"
NO_RESOURCE_LEVEL = "EC2 Describe* and pricing:GetProducts support no resource-level permissions."


@dataclass(frozen=True)
class Arn:
    """An ARN as CloudFormation receives it (`value`) and as cdk-nag prints it (`nag`)."""

    value: str
    nag: str


def arn(service: str, resource: str, *, regional: bool = True, in_account: bool = True) -> Arn:
    """Build `arn:<partition>:<service>:<region>:<account>:<resource>` with pseudo-parameters."""
    region, nag_region = (cdk.Aws.REGION, "<AWS::Region>") if regional else ("", "")
    account, nag_account = (cdk.Aws.ACCOUNT_ID, "<AWS::AccountId>") if in_account else ("", "")
    return Arn(
        value=f"arn:{cdk.Aws.PARTITION}:{service}:{region}:{account}:{resource}",
        nag=f"arn:<AWS::Partition>:{service}:{nag_region}:{nag_account}:{resource}",
    )


def ec2_arn(resource_type: str, *, in_account: bool = True) -> Arn:
    """ARN of every EC2 resource of `resource_type` in this region (and account)."""
    return arn("ec2", f"{resource_type}/*", in_account=in_account)


ANY = Arn(value="*", nag="*")


class PolicyBuilder:
    """Collects policy statements and the nag findings (with reasons) their wildcards raise."""

    def __init__(self) -> None:
        """Start empty."""
        self.statements: list[iam.PolicyStatement] = []
        self.acknowledgements: dict[str, str] = {}

    def allow(
        self,
        actions: Sequence[str],
        resources: Iterable[Arn | str],
        *,
        conditions: Mapping[str, Mapping[str, object]] | None = None,
        wildcard_reason: str | None = None,
    ) -> PolicyBuilder:
        """Add an Allow statement; `wildcard_reason` is required when a resource contains '*'."""
        values: list[str] = []
        for resource in resources:
            if isinstance(resource, str):  # a token such as a table ARN: never a wildcard
                values.append(resource)
                continue
            values.append(resource.value)
            if "*" in resource.nag:
                if not wildcard_reason:
                    raise ValueError(f"wildcard resource {resource.nag} granted without a reason")
                finding = f"AwsSolutions-IAM5[Resource::{resource.nag}]"
                previous = self.acknowledgements.get(finding)
                if previous is None:
                    self.acknowledgements[finding] = wildcard_reason
                elif wildcard_reason not in previous:
                    self.acknowledgements[finding] = f"{previous} {wildcard_reason}"
        if any("*" in action for action in actions):
            raise ValueError(f"wildcard actions are not allowed: {actions}")
        self.statements.append(
            iam.PolicyStatement(
                actions=sorted(actions),
                resources=values,
                conditions=dict(conditions) if conditions else None,
            )
        )
        return self

    def deny(
        self, actions: Sequence[str], resources: Iterable[Arn], *, conditions: Mapping[str, Mapping[str, object]]
    ) -> PolicyBuilder:
        """Add a conditional Deny statement (a guard on what an Allow above permits)."""
        self.statements.append(
            iam.PolicyStatement(
                effect=iam.Effect.DENY,
                actions=sorted(actions),
                resources=[resource.value for resource in resources],
                conditions=dict(conditions),
            )
        )
        return self

    def acknowledge(self, scope: IConstruct) -> None:
        """Record every collected finding as an acknowledged cdk-nag rule on `scope`."""
        for finding, reason in sorted(self.acknowledgements.items()):
            cdk.Validations.of(scope).acknowledge(cdk.Acknowledgment(id=finding, reason=reason))


def _owned(cluster_name: str) -> dict[str, dict[str, object]]:
    return {"StringEquals": {f"aws:ResourceTag/{CLUSTER_TAG_KEY}": cluster_name}}


def _requested(cluster_name: str) -> dict[str, object]:
    return {f"aws:RequestTag/{CLUSTER_TAG_KEY}": cluster_name}


def allow_describe(policy: PolicyBuilder, *, actions: Sequence[str] = EC2_DESCRIBE_ACTIONS) -> None:
    """Read-only EC2 discovery: instance types, offerings, subnets, security groups, images, prices."""
    policy.allow(actions, [ANY], wildcard_reason=NO_RESOURCE_LEVEL)


def allow_terminate_owned_instances(
    policy: PolicyBuilder, *, cluster_name: str, instance_profile_arns: Sequence[str]
) -> None:
    """Terminate instances, but only those carrying this cluster's ownership tag and running with
    one of `instance_profile_arns` (the node instance profile; a tag alone anyone may write).

    No CreateTags on existing instances: nothing tags an instance after its launch, and that
    right would let a role rewrite the ownership tag itself.
    """
    policy.allow(
        ["ec2:TerminateInstances"],
        [ec2_arn("instance")],
        conditions={
            **_owned(cluster_name),
            "ArnLike": {"ec2:InstanceProfile": list(instance_profile_arns)},
        },
        wildcard_reason=f"Scoped by aws:ResourceTag {CLUSTER_TAG_KEY}={cluster_name} and ec2:InstanceProfile.",
    )


def allow_stop_start_owned_instances(
    policy: PolicyBuilder, *, cluster_name: str, instance_profile_arns: Sequence[str]
) -> None:
    """Stop and start standby instances, on the same terms as termination: only instances carrying
    this cluster's ownership tag and running with one of `instance_profile_arns`.
    """
    policy.allow(
        ["ec2:StartInstances", "ec2:StopInstances"],
        [ec2_arn("instance")],
        conditions={
            **_owned(cluster_name),
            "ArnLike": {"ec2:InstanceProfile": list(instance_profile_arns)},
        },
        wildcard_reason=f"Scoped by aws:ResourceTag {CLUSTER_TAG_KEY}={cluster_name} and ec2:InstanceProfile.",
    )


def allow_launch(
    policy: PolicyBuilder,
    *,
    cluster_name: str,
    node_role_arn: str,
    discovery_tag: tuple[str, str],
    image_owners: Sequence[str] = (),
    node_roles: Sequence[str] = (),
    require_imdsv2: bool = True,
    require_encrypted_volumes: bool = True,
) -> None:
    """Create launch templates and fleets/instances that carry this cluster's ownership tag.

    Split the way Karpenter's controller policy is: resources the call creates must be requested
    with our tag (and, tighter than Karpenter where it costs nothing, a launch with its NodePool's
    tag and a template with its EC2NodeClass's); existing resources it only references (images,
    snapshots, subnets, security groups, capacity reservations, placement groups) cannot carry a
    request tag, so
    they are granted by type; our own launch templates are referenced only when tagged as ours.
    Two guards deny, whatever a NodeClass says, an instance without IMDSv2 tokens and an
    unencrypted volume (EC2 User Guide, "Require the use of IMDSv2" and the `ec2:Encrypted`
    condition key); each can be turned off at deploy time. Subnets and security groups must carry
    `discovery_tag` (key, value); images must be owned by Amazon or one of `image_owners`.
    """
    owned_tag = f"Scoped by aws:RequestTag {CLUSTER_TAG_KEY}={cluster_name}."
    policy.allow(
        LAUNCH_ACTIONS,
        [ec2_arn(kind) for kind in CREATED_BY_FLEET],
        conditions={
            "StringEquals": _requested(cluster_name),
            "StringLike": {f"aws:RequestTag/{NODEPOOL_TAG_KEY}": "*"},
        },
        wildcard_reason=owned_tag,
    )
    policy.allow(
        ["ec2:CreateLaunchTemplate"],
        [ec2_arn("launch-template")],
        conditions={
            "StringEquals": _requested(cluster_name),
            "StringLike": {f"aws:RequestTag/{NODECLASS_TAG_KEY}": "*"},
        },
        wildcard_reason=owned_tag,
    )
    if require_imdsv2:
        policy.deny(
            ["ec2:RunInstances"],
            [ec2_arn("instance")],
            conditions={"StringNotEquals": {"ec2:MetadataHttpTokens": "required"}},
        )
    if require_encrypted_volumes:
        policy.deny(["ec2:RunInstances"], [ec2_arn("volume")], conditions={"Bool": {"ec2:Encrypted": "false"}})
    policy.allow(
        ["ec2:CreateTags"],
        [ec2_arn(kind) for kind in CREATED_BY_LAUNCH],
        conditions={
            "StringEquals": {
                "ec2:CreateAction": ["CreateFleet", "RunInstances", "CreateLaunchTemplate"],
                **_requested(cluster_name),
            }
        },
        wildcard_reason="Tag-on-create only (ec2:CreateAction).",
    )
    # Belt and braces on the Allow above: a nodewright.io/* tag is written at creation or never.
    policy.deny(
        ["ec2:CreateTags"],
        [ec2_arn(kind) for kind in CREATED_BY_LAUNCH],
        conditions={
            "Null": {"ec2:CreateAction": "true"},
            "ForAnyValue:StringLike": {"aws:TagKeys": ["nodewright.io/*"]},
        },
    )
    referenced = (
        "Referenced, not created, by a launch: selected at run time from NodeClass selectors, "
        "so granted by type in this region"
    )
    policy.allow(
        LAUNCH_ACTIONS,
        [
            ec2_arn("snapshot", in_account=False),
            ec2_arn("capacity-reservation"),
            # An EC2NodeClass placementGroupSelector puts the group in the launch template.
            ec2_arn("placement-group"),
        ],
        wildcard_reason=f"{referenced}.",
    )
    key, value = discovery_tag
    policy.allow(
        LAUNCH_ACTIONS,
        [ec2_arn("subnet"), ec2_arn("security-group")],
        conditions={"StringEquals": {f"aws:ResourceTag/{key}": value}},
        wildcard_reason=f"{referenced}, and only those carrying the discovery tag {key}={value}.",
    )
    policy.allow(
        LAUNCH_ACTIONS,
        [ec2_arn("image", in_account=False)],
        conditions={"StringEquals": {"ec2:Owner": ["amazon", *image_owners]}},
        wildcard_reason=f"{referenced}, and only images owned by Amazon or an account the deploy lists.",
    )
    policy.allow(
        [*LAUNCH_ACTIONS, "ec2:DeleteLaunchTemplate"],
        [ec2_arn("launch-template")],
        conditions={
            **_owned(cluster_name),
            "StringLike": {f"aws:ResourceTag/{NODECLASS_TAG_KEY}": "*"},
        },
        wildcard_reason=(
            f"Scoped by aws:ResourceTag {CLUSTER_TAG_KEY}={cluster_name} and the {NODECLASS_TAG_KEY} tag "
            "the functions write on the templates they create."
        ),
    )
    allow_node_roles(policy, cluster_name=cluster_name, node_role_arn=node_role_arn, node_roles=node_roles)


def role_arn(role: str) -> Arn | str:
    """A role of the deploy key nodeRoles as IAM names it: an ARN as given, a name in this account."""
    return role if role.startswith("arn:") else arn("iam", f"role/{role}", regional=False)


def allow_node_roles(
    policy: PolicyBuilder, *, cluster_name: str, node_role_arn: str, node_roles: Sequence[str] = ()
) -> None:
    """Pass exactly the deployment's node roles to EC2, and keep instance profiles for the listed ones.

    `node_roles` is the deploy key nodeRoles (names or ARNs); the stack's own role is always
    passable. For a listed role the functions create an instance profile, as Karpenter does
    (nodewright.adapters.aws.instance_profiles): only under the path `/nodewright/<cluster>/`,
    only with the cluster's tag at creation, and they change the role of only such a tagged
    profile. AddRoleToInstanceProfile also needs iam:PassRole on the role (granted above it).
    iam:GetInstanceProfile (read-only, with nodeRoles only) reads which role a profile holds:
    without it a NodeClass's `instanceProfile` is used unchecked and PassRole alone decides.
    Nothing deletes a profile (docs/deploy.md, "Node roles", says how to remove them).
    """
    policy.allow(
        ["iam:PassRole"],
        [node_role_arn, *(role_arn(role) for role in node_roles)],
        conditions={"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}},
    )
    if not node_roles:
        return
    policy.allow(
        ["iam:GetInstanceProfile"],
        [arn("iam", "instance-profile/*", regional=False)],
        wildcard_reason="Read-only: which role an instance profile holds, checked before a launch.",
    )
    ours = arn("iam", f"instance-profile/nodewright/{cluster_name}/*", regional=False)
    reason = f"Only profiles under /nodewright/{cluster_name}/ with the tag {CLUSTER_TAG_KEY}={cluster_name}."
    policy.allow(
        ["iam:CreateInstanceProfile", "iam:TagInstanceProfile"],
        [ours],
        conditions={"StringEquals": _requested(cluster_name)},
        wildcard_reason=reason,
    )
    policy.allow(
        ["iam:AddRoleToInstanceProfile", "iam:RemoveRoleFromInstanceProfile"],
        [ours],
        conditions=_owned(cluster_name),
        wildcard_reason=reason,
    )


def allow_node_catalog(policy: PolicyBuilder) -> None:
    """On-demand prices and the public EKS-optimized / Bottlerocket AMI parameters."""
    policy.allow(["pricing:GetProducts"], [ANY], wildcard_reason=NO_RESOURCE_LEVEL)
    policy.allow(
        ["ssm:GetParameter"],
        [
            arn("ssm", "parameter/aws/service/eks/optimized-ami/*", in_account=False),
            arn("ssm", "parameter/aws/service/bottlerocket/*", in_account=False),
        ],
        wildcard_reason="Public AWS-owned AMI parameters, read-only; the path depends on version and architecture.",
    )


def allow_describe_cluster(policy: PolicyBuilder, *, cluster_name: str) -> None:
    """Read the cluster's endpoint and certificate authority to talk to its API server."""
    policy.allow(["eks:DescribeCluster"], [arn("eks", f"cluster/{cluster_name}")])
