"""Deploy-time discovery of where a private cluster's functions run: a CloudFormation custom resource.

Role: the stack's `ClusterNetwork` construct (infra/constructs/network.py) asks this function, at
deploy time, for the network of the EKS cluster it manages, so `cdk synth` needs no AWS
credentials and the template stays the same whatever the cluster's subnets are (a synth-time
lookup would need credentials and freeze the answer into cdk.context.json).

Contract: `discover(eks, ec2, cluster_name)` reads DescribeCluster's `resourcesVpcConfig` and the
subnets' route tables and returns plain strings (CloudFormation attributes are strings; lists are
joined with commas and split again in the template):

  * `VpcId`: the cluster's VPC;
  * `SubnetIds`: the cluster subnets with no default route to an internet gateway (Lambda ENIs get
    no public address, so a public subnet would give the functions no way out); all cluster
    subnets when none is private;
  * `EndpointSubnetIds`: one of those per Availability Zone (an interface endpoint takes at most
    one subnet per zone);
  * `SecurityGroupId`: the cluster security group (EKS attaches it to the endpoint's network
    interfaces, so a rule on it opens 443 to the functions);
  * `RouteTableIds`: the route tables of `SubnetIds` (the DynamoDB gateway endpoint's routes);
  * `EndpointPrivateAccess`: "true" or "false", as the cluster reports it.

`handler` is the Lambda entry point: Create and Update answer with `discover`'s result, Delete
answers success (nothing was created), and any error is reported to CloudFormation with its
message so the stack fails with a readable reason instead of waiting an hour.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Mapping
from typing import Any


class DiscoveryError(Exception):
    """The cluster's network cannot host the functions; the message says why."""


def discover(eks: Any, ec2: Any, cluster_name: str) -> dict[str, str]:
    """The network facts of `cluster_name` (see the module docstring for each key)."""
    cluster = eks.describe_cluster(name=cluster_name)["cluster"]
    config = cluster.get("resourcesVpcConfig") or {}
    subnet_ids = list(config.get("subnetIds") or [])
    if not subnet_ids:
        raise DiscoveryError(f"cluster {cluster_name}: DescribeCluster reports no subnets")
    # EKS creates a cluster security group for every cluster since platform version eks.3 (2019);
    # an older cluster's first additional group is the one its endpoint interfaces carry.
    group = config.get("clusterSecurityGroupId") or next(iter(config.get("securityGroupIds") or []), "")
    if not group:
        raise DiscoveryError(f"cluster {cluster_name}: DescribeCluster reports no cluster security group")
    subnets = ec2.describe_subnets(SubnetIds=subnet_ids)["Subnets"]
    vpc_id = config.get("vpcId") or subnets[0]["VpcId"]
    tables = ec2.describe_route_tables(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])["RouteTables"]
    table_of = _route_table_of(subnet_ids, tables)
    private = [s for s in subnets if not _routes_to_internet_gateway(table_of.get(s["SubnetId"]))]
    chosen = sorted(private or subnets, key=lambda s: (s["AvailabilityZone"], s["SubnetId"]))[:16]
    per_zone: dict[str, str] = {}
    for subnet in chosen:
        per_zone.setdefault(subnet["AvailabilityZone"], subnet["SubnetId"])
    route_tables = sorted(
        {table_of[s["SubnetId"]]["RouteTableId"] for s in chosen if table_of.get(s["SubnetId"]) is not None}
    )
    return {
        "VpcId": vpc_id,
        "SubnetIds": ",".join(s["SubnetId"] for s in chosen),
        "EndpointSubnetIds": ",".join(per_zone.values()),
        "SecurityGroupId": group,
        "RouteTableIds": ",".join(route_tables),
        "EndpointPrivateAccess": "true" if config.get("endpointPrivateAccess") else "false",
    }


def _route_table_of(subnet_ids: list[str], tables: list[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """Each subnet's route table: its explicit association, else the VPC's main route table."""
    main: Mapping[str, Any] | None = None
    explicit: dict[str, Mapping[str, Any]] = {}
    for table in tables:
        for association in table.get("Associations") or []:
            if association.get("Main"):
                main = table
            elif association.get("SubnetId"):
                explicit[association["SubnetId"]] = table
    found: dict[str, Mapping[str, Any]] = {}
    for subnet in subnet_ids:
        chosen = explicit.get(subnet) or main
        if chosen is not None:
            found[subnet] = chosen
    return found


def _routes_to_internet_gateway(table: Mapping[str, Any] | None) -> bool:
    return table is not None and any(
        str(route.get("GatewayId", "")).startswith("igw-") and route.get("DestinationCidrBlock") == "0.0.0.0/0"
        for route in table.get("Routes") or []
    )


def handler(event: Mapping[str, Any], context: Any) -> None:
    """CloudFormation custom resource entry point (see the module docstring)."""
    import boto3  # provided by the Lambda runtime; imported here so tests can import `discover` alone

    status, reason, data = "SUCCESS", "", {}
    try:
        if event["RequestType"] in ("Create", "Update"):
            name = event["ResourceProperties"]["ClusterName"]
            data = discover(boto3.client("eks"), boto3.client("ec2"), name)
    except Exception as error:
        status, reason = "FAILED", f"{type(error).__name__}: {error}"[:1000]
    respond(event, status=status, reason=reason, data=data, log_stream=getattr(context, "log_stream_name", ""))


def respond(event: Mapping[str, Any], *, status: str, reason: str, data: Mapping[str, str], log_stream: str) -> None:
    """PUT the custom resource's answer to CloudFormation's presigned ResponseURL."""
    body = json.dumps(
        {
            "Status": status,
            "Reason": reason or f"see CloudWatch log stream {log_stream}",
            "PhysicalResourceId": event.get("PhysicalResourceId") or f"{event['LogicalResourceId']}-network",
            "StackId": event["StackId"],
            "RequestId": event["RequestId"],
            "LogicalResourceId": event["LogicalResourceId"],
            "Data": dict(data),
        }
    ).encode()
    request = urllib.request.Request(
        event["ResponseURL"], data=body, method="PUT", headers={"Content-Type": "", "Content-Length": str(len(body))}
    )
    with urllib.request.urlopen(request, timeout=30):
        pass
