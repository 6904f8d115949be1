"""Private-endpoint clusters (deploy key `vpcAccess`): synthesized, checked, discovered, deployed into moto.

What is real: the app built as app.py builds it with `-c vpcAccess=...` (cdk-nag plugin, bundle
off), cdk-nag's AwsSolutions pack and cfn-lint over that template; the discovery custom resource's
code (infra/discovery/index.py) against moto's EKS and EC2 over HTTP; moto's CloudFormation
creating the private template (adapted as tests/infra/test_moto_deploy.py adapts the public one).
What is observed: the functions' VpcConfig, the endpoints and security group rules in the template
and in moto's EC2 after the deploy, the discovered network, and that the default (public)
template is exactly the private one minus what the network adds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import boto3
import cdk_nag
import pytest
from cfnlint.api import ManualArgs, lint

import app as nodewright_app
from infra.config import ConfigError
from infra.constructs.network import GATEWAY_SERVICES, INTERFACE_SERVICES
from infra.discovery.index import discover
from infra.grants import IAM_PREFIX
from nodewright.adapters.aws.pricing import PriceCache, Prices
from nodewright.adapters.offline_catalog import estimated_on_demand_prices
from nodewright.controllers.settings import Settings, SettingsError
from tests.infra.conftest import CONTEXT, Synthesized
from tests.infra.test_compliance import CFN_LINT_IGNORED
from tests.infra.test_moto_deploy import for_moto, moto_client, moto_endpoint  # noqa: F401 - fixture

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

FUNCTIONS = ("Provisioner", "Interruption", "Consolidator")


def synth_stack(outdir: Path, **context: str) -> dict[str, Any]:
    app = cdk.App(context={**CONTEXT, **context}, outdir=str(outdir))
    stack = nodewright_app.build_app(app, environ={})
    document = app.synth().get_stack_by_name(stack.stack_name).template
    return {"app": app, "document": json.loads(json.dumps(document))}


@pytest.fixture(scope="module")
def private(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The app with vpcAccess=endpoints and every network id discovered at deploy time."""
    return synth_stack(tmp_path_factory.mktemp("private.out"), vpcAccess="endpoints")


def resources_of(document: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {key: value for key, value in document["Resources"].items() if value["Type"] == kind}


def _function(document: dict[str, Any], name: str) -> dict[str, Any]:
    (found,) = [
        resource
        for resource in resources_of(document, "AWS::Lambda::Function").values()
        if resource["Properties"].get("Handler") == f"functions.{name.lower()}.handler.handler"
    ]
    return found


def test_the_three_functions_run_in_the_discovered_subnets_behind_their_own_security_group(
    private: dict[str, Any],
) -> None:
    document = private["document"]
    (discovered,) = resources_of(document, "Custom::NodewrightClusterNetwork")
    (functions_group,) = [
        key
        for key, group in resources_of(document, "AWS::EC2::SecurityGroup").items()
        if "HTTPS out only" in group["Properties"]["GroupDescription"]
    ]
    for name in FUNCTIONS:
        vpc = _function(document, name)["Properties"]["VpcConfig"]
        assert vpc["SubnetIds"] == {"Fn::Split": [",", {"Fn::GetAtt": [discovered, "SubnetIds"]}]}
        assert vpc["SecurityGroupIds"] == [{"Fn::GetAtt": [functions_group, "GroupId"]}]
    egress = resources_of(document, "AWS::EC2::SecurityGroup")[functions_group]["Properties"]["SecurityGroupEgress"]
    assert [(rule["IpProtocol"], rule["FromPort"], rule["ToPort"]) for rule in egress] == [("tcp", 443, 443)]
    # The cluster security group (where EKS puts the private endpoint) admits them on 443 only.
    (ingress,) = resources_of(document, "AWS::EC2::SecurityGroupIngress").values()
    assert ingress["Properties"]["GroupId"] == {"Fn::GetAtt": [discovered, "SecurityGroupId"]}
    assert ingress["Properties"]["SourceSecurityGroupId"] == {"Fn::GetAtt": [functions_group, "GroupId"]}
    assert (ingress["Properties"]["FromPort"], ingress["Properties"]["ToPort"]) == (443, 443)


def test_endpoints_cover_every_service_the_functions_call_and_pricing_only_where_it_exists(
    private: dict[str, Any],
) -> None:
    document = private["document"]
    endpoints = resources_of(document, "AWS::EC2::VPCEndpoint")
    by_type: dict[str, set[str]] = {"Interface": set(), "Gateway": set()}
    conditional = set()
    for resource in endpoints.values():
        service = resource["Properties"]["ServiceName"]["Fn::Sub"].split("${AWS::Region}.", 1)[1]
        if "Condition" in resource:
            conditional.add(service)
        else:
            by_type[resource["Properties"]["VpcEndpointType"]].add(service)
    # Every botocore service the functions call (the grants' table) has a way out, Pricing aside.
    assert by_type["Interface"] | by_type["Gateway"] == set(IAM_PREFIX) - {"pricing"}
    assert by_type["Gateway"] == set(GATEWAY_SERVICES) == {"dynamodb"}
    assert by_type["Interface"] == set(INTERFACE_SERVICES)
    assert conditional == {"pricing.api"}
    (condition,) = {resource["Condition"] for resource in endpoints.values() if "Condition" in resource}
    regions = [term["Fn::Equals"][1] for term in document["Conditions"][condition]["Fn::Or"]]
    assert sorted(regions) == ["ap-south-1", "eu-central-1", "us-east-1"]
    # Outside those regions the functions are told to price on-demand with the bundled estimates.
    for name in FUNCTIONS:
        variables = _function(document, name)["Properties"]["Environment"]["Variables"]
        assert variables["PRICE_SOURCE"] == {"Fn::If": [condition, "api", "estimates"]}


def test_private_template_passes_cdk_nag_and_cfn_lint(private: dict[str, Any]) -> None:
    report = cdk_nag.AwsSolutionsChecks(private["app"]).validate_scope(private["app"])
    findings = [
        f"{violation.rule_name} at {resource.construct_path}"
        for violation in report.violations
        for resource in violation.violating_resources
    ]
    assert findings == []
    matches = lint(
        json.dumps(private["document"]),
        config=ManualArgs(regions=["us-east-1", "eu-west-1"], ignore_checks=CFN_LINT_IGNORED),
    )
    assert [f"{m.rule.id} {m.message} ({'/'.join(map(str, m.path))})" for m in matches] == []


def test_the_public_default_is_the_private_template_minus_the_network(
    private: dict[str, Any], synthesized: Synthesized
) -> None:
    public = synthesized.document
    assert not resources_of(public, "AWS::EC2::VPCEndpoint")
    assert not resources_of(public, "AWS::EC2::SecurityGroup")
    assert "Conditions" not in public
    # CDK's logical ids start with the construct path: everything under the stack's "Network".
    network = {key for key in private["document"]["Resources"] if key.startswith("Network")}
    stripped = json.loads(json.dumps({k: v for k, v in private["document"]["Resources"].items() if k not in network}))
    for resource in stripped.values():
        if resource["Type"] == "AWS::Lambda::Function":
            resource["Properties"].pop("VpcConfig", None)
            resource["Properties"]["Environment"]["Variables"].pop("PRICE_SOURCE", None)
        # A function waits for its network policy, and CDK passes that on to what uses the function.
        depends = [d for d in resource.pop("DependsOn", []) if d not in network]
        if depends:
            resource["DependsOn"] = depends
    expected = json.loads(json.dumps(public["Resources"]))
    for resources in (stripped, expected):
        for resource in resources.values():
            if resource["Type"] == "AWS::Lambda::Function":
                # The code asset's name is a hash of the sources at synth time, and the two synths
                # may see different sources (the working tree is edited while tests run).
                resource["Properties"]["Code"].pop("S3Key")
    assert stripped == expected


def test_explicit_ids_replace_discovery_and_bad_ones_name_the_key(tmp_path: Path) -> None:
    document = synth_stack(
        tmp_path,
        vpcAccess="existing",
        vpcSubnetIds="subnet-0aaaaaaaaaaaaaaa1,subnet-0aaaaaaaaaaaaaaa2",
        vpcSecurityGroupIds="sg-0bbbbbbbbbbbbbbb1",
    )["document"]
    assert not resources_of(document, "Custom::NodewrightClusterNetwork")
    assert not resources_of(document, "AWS::EC2::VPCEndpoint")  # existing: NAT or endpoints made elsewhere
    vpc = _function(document, "Provisioner")["Properties"]["VpcConfig"]
    assert vpc == {
        "SubnetIds": ["subnet-0aaaaaaaaaaaaaaa1", "subnet-0aaaaaaaaaaaaaaa2"],
        "SecurityGroupIds": ["sg-0bbbbbbbbbbbbbbb1"],
    }
    with pytest.raises(ConfigError) as raised:
        synth_stack(tmp_path / "bad", vpcSubnetIds="subnet-1", vpcAccess="nowhere")
    assert "context key 'vpcAccess'" in str(raised.value)
    with pytest.raises(ConfigError) as raised:
        synth_stack(tmp_path / "bad2", vpcAccess="existing", vpcSubnetIds="subnet-1")
    assert "context key 'vpcSubnetIds': 'subnet-1' is not a subnet id" in str(raised.value)


@pytest.fixture
def network(moto_endpoint: str) -> dict[str, Any]:  # noqa: F811 - the imported fixture
    """A VPC in moto shaped like an EKS one: a public and a private subnet in each of two zones."""
    ec2 = moto_client("ec2", moto_endpoint)
    vpc = ec2.create_vpc(CidrBlock="10.20.0.0/16")["Vpc"]["VpcId"]
    igw = ec2.create_internet_gateway()["InternetGateway"]["InternetGatewayId"]
    ec2.attach_internet_gateway(InternetGatewayId=igw, VpcId=vpc)
    public_table = ec2.create_route_table(VpcId=vpc)["RouteTable"]["RouteTableId"]
    ec2.create_route(RouteTableId=public_table, DestinationCidrBlock="0.0.0.0/0", GatewayId=igw)
    private_table = ec2.create_route_table(VpcId=vpc)["RouteTable"]["RouteTableId"]
    subnets: dict[str, str] = {}
    for index, (zone, kind) in enumerate(
        [("us-east-1a", "public"), ("us-east-1a", "private"), ("us-east-1b", "public"), ("us-east-1b", "private")]
    ):
        subnet = ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.20.{index}.0/24", AvailabilityZone=zone)["Subnet"]
        subnets[f"{kind}-{zone}"] = subnet["SubnetId"]
        ec2.associate_route_table(
            RouteTableId=public_table if kind == "public" else private_table, SubnetId=subnet["SubnetId"]
        )
    group = ec2.create_security_group(GroupName="eks-cluster-sg-demo", Description="cluster", VpcId=vpc)["GroupId"]
    return {"vpc": vpc, "subnets": subnets, "group": group, "private_table": private_table, "ec2": ec2}


def _eks_cluster(endpoint: str, network: dict[str, Any], name: str) -> Any:
    """An EKS cluster in moto over all four subnets, with a private endpoint; its EKS client."""
    eks = moto_client("eks", endpoint)
    eks.create_cluster(
        name=name,
        roleArn="arn:aws:iam::123456789012:role/eks",
        resourcesVpcConfig={
            "subnetIds": list(network["subnets"].values()),
            "securityGroupIds": [network["group"]],
            "endpointPrivateAccess": True,
            "endpointPublicAccess": False,
        },
    )
    return eks


def test_discovery_reads_the_clusters_private_subnets_group_and_route_tables(
    moto_endpoint: str,  # noqa: F811 - the imported fixture
    network: dict[str, Any],
) -> None:
    eks = _eks_cluster(moto_endpoint, network, "private-demo")

    found = discover(eks, network["ec2"], "private-demo")

    private = [network["subnets"]["private-us-east-1a"], network["subnets"]["private-us-east-1b"]]
    assert found["VpcId"] == network["vpc"]
    assert found["SubnetIds"].split(",") == private  # the public subnets would give no way out
    assert found["EndpointSubnetIds"].split(",") == private  # one per zone
    assert found["RouteTableIds"] == network["private_table"]
    # moto reports the group it was given as the cluster's; EKS would add its own cluster group.
    assert found["SecurityGroupId"]
    assert found["EndpointPrivateAccess"] == "true"


def _answered(document: dict[str, Any], answer: dict[str, str]) -> dict[str, Any]:
    """The template as CloudFormation resolves it once the discovery resource has answered `answer`."""
    (custom,) = resources_of(document, "Custom::NodewrightClusterNetwork")

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            if list(node) == ["Fn::GetAtt"] and node["Fn::GetAtt"][0] == custom:
                return answer[node["Fn::GetAtt"][1]]
            return {key: resolve(value) for key, value in node.items()}
        if isinstance(node, list):
            return [resolve(item) for item in node]
        return node

    resolved: dict[str, Any] = resolve(document)
    del resolved["Resources"][custom]
    return resolved


def test_private_template_deploys_into_moto_with_its_endpoints_and_rules(
    moto_endpoint: str,  # noqa: F811 - the imported fixture
    network: dict[str, Any],
    private: dict[str, Any],
) -> None:
    eks = _eks_cluster(moto_endpoint, network, "demo")
    # moto's CloudFormation cannot run the discovery function: its code runs here against moto,
    # and its answer goes where CloudFormation would put it.
    answer = discover(eks, network["ec2"], "demo")
    cloudformation = moto_client("cloudformation", moto_endpoint)
    cloudformation.create_stack(
        StackName="nodewright-private",
        TemplateBody=json.dumps(for_moto(_answered(private["document"], answer))),
        Capabilities=["CAPABILITY_IAM"],
    )
    (stack,) = cloudformation.describe_stacks(StackName="nodewright-private")["Stacks"]
    assert stack["StackStatus"] == "CREATE_COMPLETE", stack.get("StackStatusReason")
    subnets = [network["subnets"]["private-us-east-1a"], network["subnets"]["private-us-east-1b"]]

    ec2 = network["ec2"]
    endpoints = ec2.describe_vpc_endpoints(Filters=[{"Name": "vpc-id", "Values": [network["vpc"]]}])["VpcEndpoints"]
    assert sorted(e["ServiceName"].removeprefix("com.amazonaws.us-east-1.") for e in endpoints) == sorted(
        [*INTERFACE_SERVICES, *GATEWAY_SERVICES, "pricing.api"]
    )
    gateway = next(e for e in endpoints if e["VpcEndpointType"] == "Gateway")
    assert gateway["RouteTableIds"] == [network["private_table"]]
    groups = ec2.describe_security_groups(Filters=[{"Name": "vpc-id", "Values": [network["vpc"]]}])["SecurityGroups"]
    functions = next(g for g in groups if "HTTPS out only" in g["Description"])
    cluster_group = next(g for g in groups if g["GroupId"] == network["group"])
    assert [
        (p["FromPort"], [pair["GroupId"] for pair in p["UserIdGroupPairs"]]) for p in cluster_group["IpPermissions"]
    ] == [(443, [functions["GroupId"]])]
    endpoint_group = next(g for g in groups if "VPC endpoints" in g["Description"])
    assert [
        (p["FromPort"], [pair["GroupId"] for pair in p["UserIdGroupPairs"]]) for p in endpoint_group["IpPermissions"]
    ] == [(443, [functions["GroupId"]])]
    lambdas = moto_client("lambda", moto_endpoint).list_functions()["Functions"]
    placed = [f for f in lambdas if f.get("VpcConfig", {}).get("SubnetIds")]
    assert len(placed) == 3
    for function in placed:
        assert sorted(function["VpcConfig"]["SubnetIds"]) == sorted(subnets)
        assert function["VpcConfig"]["SecurityGroupIds"] == [functions["GroupId"]]


def test_price_source_estimates_prices_on_demand_from_the_bundled_estimates_without_the_price_list() -> None:
    env = {"CLUSTER_NAME": "demo", "STATE_TABLE_NAME": "state", "CONFIG_TABLE_NAME": "config"}
    assert Settings.from_env(env).price_source == "api"
    assert Settings.from_env({**env, "PRICE_SOURCE": "estimates"}).price_source == "estimates"
    with pytest.raises(SettingsError, match="PRICE_SOURCE 'guess'"):
        Settings.from_env({**env, "PRICE_SOURCE": "guess"})

    class Clock:
        def now(self) -> float:
            return 1_700_000_000.0

    ec2 = boto3.client(
        "ec2",
        region_name="eu-west-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
        endpoint_url="http://0.0.0.0:9",
    )
    estimates = estimated_on_demand_prices()
    cache = PriceCache("eu-west-1", pricing=None, ec2=ec2, clock=Clock(), initial=Prices(on_demand=estimates))
    cache.refresh()  # the spot half fails here (no EC2); the on-demand half asks nobody

    assert cache.on_demand_price("m5.large") == estimates["m5.large"] > 0
    assert cache.last_error is not None
    assert cache.last_error.startswith("spot")
