"""`nodewright uninstall --cluster NAME` against moto (EKS, EC2, CloudFormation, Lambda, EventBridge) and
the in-memory cluster served over HTTP by the project's API emulator.

What is real: the CLI entry point, DescribeCluster, the EC2 cloud provider's instance listing and
termination, the stack's functions and schedules found through CloudFormation, the Kubernetes
adapter (cordon, Eviction API, node deletion) over HTTP, the in-memory cluster's PDB rules.
The cluster: two nodes Nodewright launched (one whose pod a PodDisruptionBudget protects), one
Karpenter node, and an instance tagged as Nodewright's that never became a node. What is
observed: the nodes and pods left in the cluster, the instances' states in moto, the functions'
reserved concurrency and the schedule's state, the exit code and the report.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from typer.testing import CliRunner

from nodewright.adapters.aws.instance_profiles import profile_name, profile_path
from nodewright.cli import app
from nodewright.cli import commands as _commands  # noqa: F401 - registers the commands
from nodewright.inmemory.apiserver import ApiServer
from nodewright.inmemory.cluster import InMemoryCluster
from nodewright.model import labels as wk
from nodewright.model.node import Node
from nodewright.model.resources import Resources
from nodewright.model.selectors import LabelSelector
from nodewright.model.workloads import PodDisruptionBudget
from tests.builders import pod
from tests.cli.test_plan_cluster import write_kubeconfig
from tests.moto_server import moto_server

REGION = "us-east-1"
CLUSTER = "demo"
STACK = {
    "Resources": {
        "Role": {
            "Type": "AWS::IAM::Role",
            "Properties": {
                "AssumeRolePolicyDocument": {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Effect": "Allow",
                            "Principal": {"Service": "lambda.amazonaws.com"},
                            "Action": "sts:AssumeRole",
                        }
                    ],
                }
            },
        },
        "Provisioner": {
            "Type": "AWS::Lambda::Function",
            "Properties": {
                "Runtime": "python3.12",
                "Handler": "index.handler",
                "Role": {"Fn::GetAtt": ["Role", "Arn"]},
                "Code": {"ZipFile": "def handler(event, context):\n    return None\n"},
            },
        },
        "Schedule": {"Type": "AWS::Events::Rule", "Properties": {"ScheduleExpression": "rate(1 minute)"}},
    }
}


@pytest.fixture
def moto(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[str]:
    with moto_server() as endpoint:
        for name, value in {
            "AWS_ENDPOINT_URL": endpoint,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": REGION,
            "AWS_CONFIG_FILE": str(tmp_path / "none"),
            "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
        }.items():
            monkeypatch.setenv(name, value)
        yield endpoint


def _client(service: str) -> Any:
    return boto3.client(service, region_name=REGION)


def _instance(ec2: Any, tags: dict[str, str]) -> str:
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    launched = ec2.run_instances(
        ImageId=image,
        InstanceType="m5.large",
        MinCount=1,
        MaxCount=1,
        Placement={"AvailabilityZone": "us-east-1a"},
        TagSpecifications=[{"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}],
    )
    return str(launched["Instances"][0]["InstanceId"])


def _node(cluster: InMemoryCluster, name: str, instance_id: str, labels: dict[str, str]) -> None:
    capacity = Resources.parse({"cpu": "2", "memory": "8Gi", "pods": "29"})
    cluster.add_node(
        Node(
            name=name,
            labels={wk.HOSTNAME: name, wk.ZONE: "us-east-1a", **labels},
            capacity=capacity,
            allocatable=capacity,
            provider_id=f"aws:///us-east-1a/{instance_id}",
            ready=True,
        )
    )


def test_uninstall_drains_what_nodewright_launched_within_pdbs_and_leaves_the_rest(moto: str, tmp_path: Path) -> None:
    ours = {"nodewright.io/cluster": CLUSTER, "nodewright.io/nodepool": "default"}
    ec2 = _client("ec2")
    free, protected, stray = _instance(ec2, ours), _instance(ec2, ours), _instance(ec2, ours)
    karpenter = _instance(ec2, {"karpenter.sh/nodepool": "default"})
    _client("eks").create_cluster(
        name=CLUSTER, roleArn="arn:aws:iam::123456789012:role/eks", resourcesVpcConfig={"subnetIds": []}
    )
    _client("cloudformation").create_stack(StackName=f"Nodewright-{CLUSTER}", TemplateBody=json.dumps(STACK))
    created = _profiles()

    cluster = InMemoryCluster()
    nodewright_labels = {wk.NW_NODEPOOL: "default", wk.NODEPOOL: "default"}
    _node(cluster, "nw-free", free, nodewright_labels)
    _node(cluster, "nw-protected", protected, nodewright_labels)
    _node(cluster, "karpenter-1", karpenter, {wk.NODEPOOL: "default"})
    for index in range(3):
        cluster.bind(cluster.add_pod(pod(f"web-{index}", labels={"app": "web"})), "nw-free")
        cluster.bind(cluster.add_pod(pod(f"kp-{index}", labels={"app": "kp"})), "karpenter-1")
    cluster.bind(cluster.add_pod(pod("db-0", labels={"app": "db"})), "nw-protected")
    cluster.add_pdb(PodDisruptionBudget("default", "db", LabelSelector.parse({"matchLabels": {"app": "db"}}), 1))
    server = ApiServer(cluster)
    config = write_kubeconfig(tmp_path / "kubeconfig", server.start())
    try:
        result = CliRunner().invoke(
            app,
            ["uninstall", "--cluster", CLUSTER, "--kubeconfig", str(config), "--deadline", "1", "--yes", "-o", "json"],
        )
    finally:
        server.stop()

    assert result.exit_code == 2, result.output  # something is left
    report = json.loads(result.stdout[: result.stdout.rindex("}") + 1])
    assert report["deleted_nodes"] == ["nw-free"]
    assert sorted(report["terminated"]) == sorted([free, stray])
    assert report["left"] == {"nw-protected": ["default/db-0"]}
    assert report["untouched"] == ["karpenter-1"]
    assert report["evicted"] == 3
    # The cluster: the free node is gone, the protected one cordoned, Karpenter's as it was.
    assert cluster.get_node("nw-free") is None
    protected_node = cluster.get_node("nw-protected")
    assert protected_node is not None
    assert protected_node.unschedulable
    karpenter_node = cluster.get_node("karpenter-1")
    assert karpenter_node is not None
    assert not karpenter_node.unschedulable
    assert len(cluster.pods_on("karpenter-1")) == 3
    # EC2: only the drained node's instance and the stray one were terminated.
    states = {
        i["InstanceId"]: i["State"]["Name"] for r in ec2.describe_instances()["Reservations"] for i in r["Instances"]
    }
    assert states[free] in ("shutting-down", "terminated")
    assert states[stray] in ("shutting-down", "terminated")
    assert states[protected] == "running"
    assert states[karpenter] == "running"
    # The functions and schedules are stopped.
    (function,) = _client("lambda").list_functions()["Functions"]
    concurrency = _client("lambda").get_function_concurrency(FunctionName=function["FunctionName"])
    assert concurrency["ReservedConcurrentExecutions"] == 0
    (rule,) = _client("events").list_rules()["Rules"]
    assert rule["State"] == "DISABLED"
    # A node is left, so its instance may still use the profile Nodewright created: kept.
    assert report["removed_profiles"] == []
    assert created in _profile_names()


def _profiles(cluster: str = CLUSTER) -> str:
    """Three profiles holding the same role: the one Nodewright created for `cluster` (its path,
    name and tag), one under its path tagged for another cluster, and Karpenter's; returns the first.
    """
    iam = _client("iam")
    role = f"KarpenterNodeRole-{cluster}"
    iam.create_role(RoleName=role, AssumeRolePolicyDocument="{}")
    ours = profile_name(cluster, REGION, role)
    for name, path, tagged in (
        (ours, profile_path(cluster), cluster),
        (f"nodewright_{cluster}_0000000000000000", profile_path(cluster), "another"),
        (f"KarpenterNodeInstanceProfile-{cluster}", "/", cluster),
    ):
        iam.create_instance_profile(
            InstanceProfileName=name, Path=path, Tags=[{"Key": "nodewright.io/cluster", "Value": tagged}]
        )
        iam.add_role_to_instance_profile(InstanceProfileName=name, RoleName=role)
    return ours


def _profile_names() -> set[str]:
    return {p["InstanceProfileName"] for p in _client("iam").list_instance_profiles()["InstanceProfiles"]}


def test_uninstall_deletes_only_the_instance_profiles_nodewright_created_once_nothing_is_left(
    moto: str, tmp_path: Path
) -> None:
    cluster = "drained"  # the moto server's state outlives a test: a cluster of its own
    _client("eks").create_cluster(
        name=cluster, roleArn="arn:aws:iam::123456789012:role/eks", resourcesVpcConfig={"subnetIds": []}
    )
    _client("cloudformation").create_stack(StackName=f"Nodewright-{cluster}", TemplateBody=json.dumps(STACK))
    ours = _profiles(cluster)
    others = {f"nodewright_{cluster}_0000000000000000", f"KarpenterNodeInstanceProfile-{cluster}"}
    server = ApiServer(InMemoryCluster())
    config = write_kubeconfig(tmp_path / "kubeconfig", server.start())
    command = ["uninstall", "--cluster", cluster, "--kubeconfig", str(config), "--yes", "-o", "json"]
    try:
        first = CliRunner().invoke(app, command)
        again = CliRunner().invoke(app, command)
    finally:
        server.stop()

    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout[: first.stdout.rindex("}") + 1])["removed_profiles"] == [ours]
    assert ours not in _profile_names()
    assert others <= _profile_names()
    assert f"KarpenterNodeRole-{cluster}" in {r["RoleName"] for r in _client("iam").list_roles()["Roles"]}
    assert again.exit_code == 0, again.output  # a second run: nothing more to delete
    assert json.loads(again.stdout[: again.stdout.rindex("}") + 1])["removed_profiles"] == []
