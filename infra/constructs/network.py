"""Private-endpoint clusters: run the functions in the cluster's VPC (deploy key `vpcAccess`).

Role: with `vpcAccess=endpoints` or `existing` the stack builds one `ClusterNetwork` and attaches
each function to it (`attach`); with the default `public` nothing here is built and the template
is the public one, byte for byte (tests/infra/test_private_network.py).

What it creates:
  * Where: the VPC, subnets, cluster security group and route tables come from the deploy keys
    (`vpcId`, `vpcSubnetIds`, `vpcSecurityGroupIds`, `vpcRouteTableIds`) or, for each one left
    empty, from a custom resource that reads DescribeCluster's `resourcesVpcConfig` at deploy time
    (infra/discovery/index.py). A custom resource rather than a synth-time lookup: `cdk synth`
    stays offline and credential-free (tests, CI), and nothing account-specific is frozen into
    cdk.context.json.
  * Reaching the API server: without `vpcSecurityGroupIds`, a security group for the functions
    (egress 443 only: the API server and the AWS APIs are all HTTPS; DNS goes to the VPC resolver,
    which security groups do not filter) and a rule on the cluster security group admitting 443
    from it. EKS puts the private endpoint's network interfaces in the cluster security group.
  * Reaching AWS (`endpoints` only): an interface endpoint with private DNS for every service the
    functions call (`INTERFACE_SERVICES`, the botocore services of infra.grants.IAM_PREFIX except
    DynamoDB and Pricing), a gateway endpoint for DynamoDB (free) and, only in the three regions
    that host the Price List API, one for `pricing.api`. Elsewhere the functions price on-demand
    capacity with the bundled estimates (`PRICE_SOURCE=estimates`) and spot capacity from EC2's
    spot price history, which the EC2 endpoint serves. CloudWatch Logs, Monitoring and
    EventBridge get no endpoint: the Lambda service ships the functions' logs and metrics (EMF)
    from outside the VPC, and no function calls EventBridge.
  * Lambda's own needs: each function role may manage its network interfaces (the actions of
    AWSLambdaVPCAccessExecutionRole, inline so no managed policy is attached).
"""

from __future__ import annotations

from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.config import DeployConfig, VpcAccess
from infra.constructs import permissions
from infra.constructs.function import retention

DISCOVERY_CODE = Path(__file__).resolve().parents[1] / "discovery"
# The interface endpoints `endpoints` creates: what the functions call, by botocore service name
# (infra.grants.IAM_PREFIX; tests/infra/test_private_network.py keeps the two in step).
INTERFACE_SERVICES: tuple[str, ...] = ("ec2", "eks", "lambda", "sqs", "ssm", "sts")
GATEWAY_SERVICES: tuple[str, ...] = ("dynamodb",)
# The regions with a Price List API endpoint of their own (nodewright.adapters.aws.pricing).
PRICE_LIST_REGIONS: tuple[str, ...] = ("us-east-1", "ap-south-1", "eu-central-1")
HTTPS = 443
# Lambda Developer Guide, "Giving Lambda functions access to resources in an Amazon VPC":
# the execution role's permissions to create and remove the function's network interfaces.
ENI_ACTIONS: tuple[str, ...] = (
    "ec2:AssignPrivateIpAddresses",
    "ec2:CreateNetworkInterface",
    "ec2:DeleteNetworkInterface",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeSubnets",
    "ec2:UnassignPrivateIpAddresses",
)


class ClusterNetwork(Construct):
    """The subnets and security groups the functions run in, and the endpoints they call through."""

    subnet_ids: list[str]
    security_group_ids: list[str]
    price_source: str

    def __init__(self, scope: Construct, construct_id: str, *, config: DeployConfig) -> None:
        """Build the network of `config` (whose `vpc_access` is not public)."""
        super().__init__(scope, construct_id)
        if config.vpc_access is VpcAccess.PUBLIC:
            raise ValueError("ClusterNetwork is only built for vpcAccess endpoints or existing")
        endpoints = config.vpc_access is VpcAccess.ENDPOINTS
        # Without security groups the stack opens the cluster security group, which it must learn.
        needs_discovery = (
            not config.vpc_subnet_ids
            or not config.vpc_security_group_ids
            or (endpoints and not (config.vpc_id and config.vpc_route_table_ids))
        )
        discovered = self._discovery(config.cluster_name) if needs_discovery else None

        def value(given: str | None, attribute: str) -> str:
            if given:
                return given
            assert discovered is not None
            return discovered.get_att_string(attribute)

        def values(given: tuple[str, ...], attribute: str) -> list[str]:
            return list(given) if given else cdk.Fn.split(",", value(None, attribute))

        self.subnet_ids = values(config.vpc_subnet_ids, "SubnetIds")
        if config.vpc_security_group_ids:
            self.security_group_ids = list(config.vpc_security_group_ids)
        else:
            vpc_id = value(config.vpc_id, "VpcId")
            functions = ec2.CfnSecurityGroup(
                self,
                "FunctionsSecurityGroup",
                vpc_id=vpc_id,
                group_description=f"Nodewright functions of {config.cluster_name}: HTTPS out only",
                security_group_egress=[
                    ec2.CfnSecurityGroup.EgressProperty(
                        ip_protocol="tcp",
                        from_port=HTTPS,
                        to_port=HTTPS,
                        cidr_ip="0.0.0.0/0",
                        description="Cluster API server and AWS APIs (HTTPS)",
                    )
                ],
            )
            self.security_group_ids = [functions.attr_group_id]
            ec2.CfnSecurityGroupIngress(
                self,
                "ClusterEndpointIngress",
                group_id=value(None, "SecurityGroupId"),
                ip_protocol="tcp",
                from_port=HTTPS,
                to_port=HTTPS,
                source_security_group_id=functions.attr_group_id,
                description="Nodewright functions to the cluster API server",
            )
        self.price_source = "api"
        if endpoints:
            self._endpoints(
                vpc_id=value(config.vpc_id, "VpcId"),
                # Given subnets are used as they are (docs/deploy.md: at most one per zone).
                subnet_ids=values(config.vpc_subnet_ids, "EndpointSubnetIds"),
                route_table_ids=values(config.vpc_route_table_ids, "RouteTableIds"),
                cluster_name=config.cluster_name,
            )

    def _discovery(self, cluster_name: str) -> cdk.CustomResource:
        """The custom resource that reads the cluster's network at deploy time."""
        log_group = logs.LogGroup(
            self, "DiscoveryLogGroup", retention=retention(14), removal_policy=cdk.RemovalPolicy.DESTROY
        )
        policy = permissions.PolicyBuilder()
        permissions.allow_describe_cluster(policy, cluster_name=cluster_name)
        permissions.allow_describe(policy, actions=("ec2:DescribeRouteTables", "ec2:DescribeSubnets"))
        policy.allow(["logs:CreateLogStream", "logs:PutLogEvents"], [log_group.log_group_arn])
        role = iam.Role(
            self,
            "DiscoveryRole",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"Nodewright: reads the network of cluster {cluster_name} at deploy time",
        )
        for statement in policy.statements:
            role.add_to_principal_policy(statement)
        policy.acknowledge(role)
        function = lambda_.Function(
            self,
            "Discovery",
            description="Nodewright: the cluster's VPC, private subnets, security group and route tables",
            runtime=lambda_.Runtime.PYTHON_3_12,
            architecture=lambda_.Architecture.ARM_64,
            handler="index.handler",
            code=lambda_.Code.from_asset(str(DISCOVERY_CODE), exclude=["__pycache__", "*.pyc"]),
            timeout=cdk.Duration.seconds(60),
            memory_size=128,
            role=role,
            log_group=log_group,
        )
        cdk.Validations.of(function).acknowledge(
            cdk.Acknowledgment(id="AwsSolutions-L1", reason="Python 3.12, as the other functions (infra/bundling.py).")
        )
        return cdk.CustomResource(
            self,
            "Discovered",
            service_token=function.function_arn,
            resource_type="Custom::NodewrightClusterNetwork",
            properties={"ClusterName": cluster_name},
        )

    def _endpoints(self, *, vpc_id: str, subnet_ids: list[str], route_table_ids: list[str], cluster_name: str) -> None:
        """Interface endpoints (private DNS) for the functions' services, DynamoDB's gateway, Pricing's."""
        group = ec2.CfnSecurityGroup(
            self,
            "EndpointsSecurityGroup",
            vpc_id=vpc_id,
            group_description=f"Nodewright VPC endpoints of {cluster_name}: HTTPS from the functions",
            security_group_ingress=[
                ec2.CfnSecurityGroup.IngressProperty(
                    ip_protocol="tcp",
                    from_port=HTTPS,
                    to_port=HTTPS,
                    source_security_group_id=group_id,
                    description="Nodewright functions",
                )
                for group_id in self.security_group_ids
            ],
        )
        for service in INTERFACE_SERVICES:
            ec2.CfnVPCEndpoint(
                self,
                f"{service.capitalize()}Endpoint",
                vpc_id=vpc_id,
                service_name=cdk.Fn.sub(f"com.amazonaws.${{AWS::Region}}.{service}"),
                vpc_endpoint_type="Interface",
                private_dns_enabled=True,
                subnet_ids=subnet_ids,
                security_group_ids=[group.attr_group_id],
            )
        for service in GATEWAY_SERVICES:
            ec2.CfnVPCEndpoint(
                self,
                f"{service.capitalize()}Endpoint",
                vpc_id=vpc_id,
                service_name=cdk.Fn.sub(f"com.amazonaws.${{AWS::Region}}.{service}"),
                vpc_endpoint_type="Gateway",
                route_table_ids=route_table_ids,
            )
        in_price_list_region = cdk.CfnCondition(
            self,
            "PriceListRegion",
            expression=cdk.Fn.condition_or(
                *(cdk.Fn.condition_equals(cdk.Aws.REGION, region) for region in PRICE_LIST_REGIONS)
            ),
        )
        pricing = ec2.CfnVPCEndpoint(
            self,
            "PricingEndpoint",
            vpc_id=vpc_id,
            service_name=cdk.Fn.sub("com.amazonaws.${AWS::Region}.pricing.api"),
            vpc_endpoint_type="Interface",
            private_dns_enabled=True,
            subnet_ids=subnet_ids,
            security_group_ids=[group.attr_group_id],
        )
        pricing.cfn_options.condition = in_price_list_region
        self.price_source = cdk.Fn.condition_if(in_price_list_region.logical_id, "api", "estimates").to_string()

    def attach(self, name: str, function: lambda_.Function, role: iam.Role) -> None:
        """Run `function` in the subnets and security groups, with the rights Lambda needs for it."""
        cfn = function.node.default_child
        assert isinstance(cfn, lambda_.CfnFunction)
        cfn.vpc_config = lambda_.CfnFunction.VpcConfigProperty(
            subnet_ids=self.subnet_ids, security_group_ids=self.security_group_ids
        )
        function.add_environment("PRICE_SOURCE", self.price_source)
        policy = permissions.PolicyBuilder()
        policy.allow(
            ENI_ACTIONS,
            [permissions.ANY],
            wildcard_reason="Lambda's VPC network interfaces: no resource level for Describe*; Lambda names the ENIs.",
        )
        network_policy = iam.Policy(self, f"{name.capitalize()}NetworkPolicy", statements=policy.statements)
        network_policy.attach_to_role(role)
        policy.acknowledge(network_policy)
        # Lambda checks the role can create network interfaces when the function is created.
        function.node.add_dependency(network_policy)
