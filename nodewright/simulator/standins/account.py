"""The simulated AWS account: moto (in-process) set up as the stack would leave it, plus what moto lacks.

What is real (moto): EC2 (a VPC, one subnet per zone and a security group carrying the tags the
EC2NodeClasses select, launch templates, CreateFleet, DescribeInstances, TerminateInstances),
DynamoDB (the state table and the idempotency table), SQS (the two interruption queues, each with
its DLQ, retention and visibility timeout) and EventBridge (the six interruption rules, built from
`nodewright.engine.interruption.rules`: EC2's own events to the priority queue, AWS Health's to the
main queue, as the stack routes them).

What is added on top, because moto does not have it:
* `SimulatedEc2` wraps the EC2 client: CreateFleet chooses what to launch as EC2 does
  (`nodewright.simulator.standins.fleet`: on-demand `lowest-price` or `prioritized` across every override
  of every config, spot `price-capacity-optimized` over the scenario's per-pool spot depth, prices
  from the scenario's price table, weighted capacity, partial fulfilment) where moto would take
  the first override; it answers with EC2's documented `InsufficientInstanceCapacity` Errors
  entries for the offerings a scenario declares out of capacity and for spot pools that ran
  short, and reports each launch, each fleet call (for the fidelity audit) and each termination
  to the world (the kubelet and the accounting).
* `PublicParameters` wraps the SSM client: AWS's public EKS/Bottlerocket AMI parameters
  (`/aws/service/...`, reserved names moto will not store) answer with moto's Amazon images.
* `MirroredStateStore` is the real DynamoDB state store whose reads of node claims, blocked
  offerings and disruption commands are served from a write-through mirror. Every write goes to DynamoDB first (its
  conditions decide, as in AWS) and then to the mirror, and every writer in the simulation shares
  the one store, so the mirror always equals the table (`verify()` checks it at the end of a run).
  Why: moto serialises each claim of a Query through its shape model (~0.4 ms per claim), and the
  provisioner reads the claims every second while pods wait; a 24-hour run would spend most of its
  time there.
* `MirroredCloud` is the real EC2 cloud provider (launches and terminations go to moto through
  `SimulatedEc2`) whose `instances()` (DescribeInstances of the cluster's live instances) is
  answered from the registry the world keeps from every CreateFleet and TerminateInstances: moto
  serialises ~6 ms per instance, and the provisioner lists them on every invocation. The registry
  is compared with moto's own list at the end of a run.
* `SimulatedLambda` is the Lambda client the interruption function's provisioner trigger
  calls: an asynchronous invoke starts a provisioner invocation in the world.

Files: this one sets the account up (`Account`: tables, network, images, queue and rules) and
names its resources; `ec2.py` is `SimulatedEc2` with its hooks and records; `mirrors.py`
holds `PublicParameters`, `MirroredCloud`, `MirroredStateStore` and `SimulatedLambda`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from nodewright.adapters.aws.state_store import create_table
from nodewright.config.noderoles import role_name
from nodewright.config.timings import (
    QUEUE_MAX_RECEIVE_COUNT,
    QUEUE_RETENTION_SECONDS,
    VISIBILITY_MARGIN_SECONDS,
    visibility_seconds,
)
from nodewright.engine.interruption.rules import interruption_rules, routes_to_priority_queue
from nodewright.model.cluster import ClusterInfo
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.simulator.standins.ec2 import (
    CAPACITY_MESSAGE,
    Ec2Hooks,
    FleetCall,
    Launched,
    SimulatedEc2,
)
from nodewright.simulator.standins.lambdas import ACCOUNT, REGION
from nodewright.simulator.standins.mirrors import (
    MirroredCloud,
    MirroredStateStore,
    PublicParameters,
    SimulatedLambda,
)

__all__ = [
    "CAPACITY_MESSAGE",
    "CLUSTER",
    "DEAD_LETTER_QUEUE",
    "IDEMPOTENCY_TABLE",
    "NODE_INSTANCE_PROFILE",
    "PRIORITY_DEAD_LETTER_QUEUE",
    "PRIORITY_QUEUE",
    "QUEUE",
    "QUEUE_MAX_RECEIVE_COUNT",
    "QUEUE_RETENTION_SECONDS",
    "STATE_TABLE",
    "VISIBILITY_MARGIN_SECONDS",
    "Account",
    "Ec2Hooks",
    "FleetCall",
    "Launched",
    "MirroredCloud",
    "MirroredStateStore",
    "PublicParameters",
    "SimulatedEc2",
    "SimulatedLambda",
    "instance_arn",
]

CLUSTER = ClusterInfo(
    name="simulated",
    endpoint="https://SIMULATED0000000000000000000000.gr7.us-east-1.eks.amazonaws.com",
    certificate_authority="LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==",
    version="1.31",
)
STATE_TABLE = "nodewright-state"
IDEMPOTENCY_TABLE = "nodewright-idempotency"
QUEUE = "nodewright-interruption"
DEAD_LETTER_QUEUE = "nodewright-interruption-dlq"
# EC2's own events (the rules `routes_to_priority_queue` picks); nothing else sends to it.
PRIORITY_QUEUE = "nodewright-interruption-priority"
PRIORITY_DEAD_LETTER_QUEUE = "nodewright-interruption-priority-dlq"
NODE_INSTANCE_PROFILE = "nodewright-simulated-node"
# The simulated stack's own node role (NODE_ROLE_ARN), held by NODE_INSTANCE_PROFILE.
NODE_ROLE = "nodewright-simulated-node-role"
_EC2_TRUST = json.dumps(
    {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}],
    }
)


class Account:
    """The moto resources of one simulation (call `create` inside `mock_aws`)."""

    def __init__(self, session: Any) -> None:
        from botocore.config import Config

        # The functions' retry policy (nodewright.adapters.aws.session): what a throttled call meets.
        config = Config(retries={"mode": "standard", "max_attempts": 5})
        self.ec2 = session.client("ec2", region_name=REGION, config=config)
        self.ssm = session.client("ssm", region_name=REGION, config=config)
        self.dynamodb = session.client("dynamodb", region_name=REGION, config=config)
        self.sqs = session.client("sqs", region_name=REGION, config=config)
        self.events = session.client("events", region_name=REGION, config=config)
        self.iam = session.client("iam", region_name=REGION, config=config)
        # The main queue (AWS Health, the function's drain continuations) and the priority one.
        self.queue_url = ""
        self.queue_arn = ""
        self.priority_queue_url = ""
        self.priority_queue_arn = ""
        # EC2 architecture (x86_64, arm64) -> the AMI AWS's public parameters point at now
        # (PublicParameters reads it live, so a release is seen once the resolver's cache expires).
        self.images: dict[str, str] = {}
        self.releases = 0
        self.rules: dict[str, str] = {}

    def create(
        self, nodeclasses: Mapping[str, EC2NodeClass], zones: Sequence[str], interruption_timeout: float
    ) -> None:
        """The network, AMIs, tables, queue and rules the stack and the cluster would provide."""
        self._network(nodeclasses, zones)
        self._images()
        create_table(self.dynamodb, STATE_TABLE)
        self.dynamodb.create_table(
            TableName=IDEMPOTENCY_TABLE,
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        self.queue_url, self.queue_arn = self._queue(QUEUE, DEAD_LETTER_QUEUE, interruption_timeout)
        self.priority_queue_url, self.priority_queue_arn = self._queue(
            PRIORITY_QUEUE, PRIORITY_DEAD_LETTER_QUEUE, interruption_timeout
        )
        for rule_id, pattern in interruption_rules().items():
            name = f"nodewright-{rule_id}"
            arn = self.events.put_rule(Name=name, EventPattern=json.dumps(pattern), State="ENABLED")["RuleArn"]
            target = self.priority_queue_arn if routes_to_priority_queue(pattern) else self.queue_arn
            self.events.put_targets(Rule=name, Targets=[{"Id": "interruption-queue", "Arn": target}])
            self.rules[rule_id] = arn

    def create_node_roles(self, nodeclasses: Mapping[str, EC2NodeClass]) -> None:
        """The stack's node role and instance profile, and every role the NodeClasses name (the
        roles a Karpenter user already has: they exist whether or not the stack may pass them).
        """
        named = {role_name(c.role) for c in nodeclasses.values() if c.role}
        for role in sorted({NODE_ROLE, *named}):
            self.iam.create_role(RoleName=role, AssumeRolePolicyDocument=_EC2_TRUST)
        self.iam.create_instance_profile(InstanceProfileName=NODE_INSTANCE_PROFILE)
        self.iam.add_role_to_instance_profile(InstanceProfileName=NODE_INSTANCE_PROFILE, RoleName=NODE_ROLE)

    def _network(self, nodeclasses: Mapping[str, EC2NodeClass], zones: Sequence[str]) -> None:
        subnet_tags: dict[str, str] = {}
        group_tags: dict[str, str] = {}
        group_names: set[str] = set()
        for nodeclass in nodeclasses.values():
            for term in nodeclass.subnet_selector_terms:
                subnet_tags.update({k: "owned" if v == "*" else v for k, v in term.tags.items()})
            for term in nodeclass.security_group_selector_terms:
                group_tags.update({k: "owned" if v == "*" else v for k, v in term.tags.items()})
                if term.name:
                    group_names.add(term.name)
        vpc = self.ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
        for index, zone in enumerate(zones):
            tags = {**subnet_tags, "Name": f"simulated-{zone}"}
            self.ec2.create_subnet(
                VpcId=vpc,
                CidrBlock=f"10.0.{index * 64}.0/18",
                AvailabilityZone=zone,
                TagSpecifications=[{"ResourceType": "subnet", "Tags": _tags(tags)}],
            )
        for name in sorted(group_names) or ["nodewright-simulated-nodes"]:
            self.ec2.create_security_group(
                GroupName=name,
                Description="nodes of the simulated cluster",
                VpcId=vpc,
                TagSpecifications=[{"ResourceType": "security-group", "Tags": _tags(group_tags)}],
            )

    def _images(self) -> None:
        # The AMIs AWS's public parameters point at (see PublicParameters): one per architecture.
        for arch in ("x86_64", "arm64"):
            image = self.ec2.register_image(
                Name=f"simulated-eks-node-{arch}{self._release_suffix()}", Architecture=arch, RootDeviceName="/dev/xvda"
            )
            self.images[arch] = str(image["ImageId"])

    def _release_suffix(self) -> str:
        return f"-r{self.releases}" if self.releases else ""

    def release_images(self) -> dict[str, str]:
        """AWS publishes a new EKS-optimized AMI release: new images, which the public parameters
        (every alias: al2023@latest, bottlerocket@latest, ...) point at from now on. The new ids.
        """
        self.releases += 1
        self._images()
        return dict(self.images)

    def _queue(self, name: str, dead_letter_name: str, timeout: float) -> tuple[str, str]:
        """A queue and its DLQ as the stack creates them; the queue's URL and ARN."""
        dlq = self.sqs.create_queue(QueueName=dead_letter_name, Attributes={"MessageRetentionPeriod": "1209600"})
        dlq_arn = self.sqs.get_queue_attributes(QueueUrl=dlq["QueueUrl"], AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        redrive = {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": QUEUE_MAX_RECEIVE_COUNT}
        url = str(
            self.sqs.create_queue(
                QueueName=name,
                Attributes={
                    "MessageRetentionPeriod": str(QUEUE_RETENTION_SECONDS),
                    "VisibilityTimeout": str(visibility_seconds(timeout)),
                    "RedrivePolicy": json.dumps(redrive),
                },
            )["QueueUrl"]
        )
        arn = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        return url, str(arn)


def _tags(tags: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in sorted(tags.items())]


def instance_arn(instance_id: str) -> str:
    """The ARN EC2 events name an instance by."""
    return f"arn:aws:ec2:{REGION}:{ACCOUNT}:instance/{instance_id}"


def launched_roles(instance_profiles: Mapping[str, str], iam: Any) -> dict[str, tuple[str, ...]]:
    """The roles of the instance profile of every instance Nodewright launched, by instance id:
    `instance_profiles` is what the simulated EC2 launched each with (`SimulatedEc2`), the roles
    are what IAM says each profile holds.
    """
    held: dict[str, tuple[str, ...]] = {}
    for profile in sorted(set(instance_profiles.values()) - {""}):
        roles = iam.get_instance_profile(InstanceProfileName=profile)["InstanceProfile"]["Roles"]
        held[profile] = tuple(sorted(r["RoleName"] for r in roles))
    return {instance: held.get(profile, ()) for instance, profile in sorted(instance_profiles.items())}
