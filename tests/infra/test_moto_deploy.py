"""The synthesized template deployed into moto's CloudFormation over HTTP, then fed an event.

What is real: the template the app synthesizes, moto's CloudFormation, EventBridge, SQS and
DynamoDB over HTTP with boto3, and the interruption function's handler code. What is adapted (in
this test only, see `for_moto`): the parts moto's CloudFormation cannot create; the handler's
cluster is the in-memory one (no kube-apiserver here). What is observed: a spot interruption
warning put on the default event bus arrives in the deployed queue, and the handler, deduplicating
on the deployed idempotency table, cordons and drains the node of that instance.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import boto3
import pytest

from functions.interruption import handler as interruption_handler
from nodewright.adapters.idempotency import EventDeduplicator
from nodewright.inmemory.clock import VirtualClock
from tests.controllers.test_interruption import World
from tests.infra.conftest import Synthesized
from tests.moto_server import moto_server

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore:No application metrics to publish")]

REGION = "us-east-1"
# moto's CloudFormation has no model for these types; it skips them with a warning, after which any
# Ref/GetAtt to them fails the stack. They are checked by the template assertions instead.
UNSUPPORTED_BY_MOTO = {
    "AWS::CloudWatch::Alarm",
    "AWS::EKS::AccessEntry",
    "AWS::Lambda::EventInvokeConfig",
    "AWS::Logs::QueryDefinition",
    "AWS::SQS::QueuePolicy",
}


def _references(node: object) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "Ref" and isinstance(value, str):
                yield value
            elif key == "Fn::GetAtt":
                yield value[0] if isinstance(value, list) else str(value).split(".")[0]
            else:
                yield from _references(value)
    elif isinstance(node, list):
        for item in node:
            yield from _references(item)


def for_moto(document: dict[str, Any]) -> dict[str, Any]:
    """Return a copy of the template that moto's CloudFormation can create."""
    template: dict[str, Any] = json.loads(json.dumps(document))
    resources: dict[str, Any] = template["Resources"]
    # The code asset lives in the CDK bootstrap bucket, which moto does not have: inline a stub.
    for resource in resources.values():
        if resource["Type"] == "AWS::Lambda::Function":
            resource["Properties"]["Code"] = {"ZipFile": "def handler(event, context):\n    return None\n"}
        # moto matches a schedule-only rule against every put_events (no pattern = match all) and
        # cannot deliver to Lambda targets, so the schedules lose their targets here.
        if resource["Type"] == "AWS::Events::Rule" and "ScheduleExpression" in resource["Properties"]:
            resource["Properties"].pop("Targets", None)
    # Unsupported resources, and whatever refers to them (the dashboard embeds alarm ARNs).
    removed = {key for key, resource in resources.items() if resource["Type"] in UNSUPPORTED_BY_MOTO}
    grown = True
    while grown:
        dependants = {
            key
            for key, resource in resources.items()
            if key not in removed and set(_references(resource.get("Properties", {}))) & removed
        }
        removed |= dependants
        grown = bool(dependants)
    for key in removed:
        del resources[key]
    for resource in resources.values():
        if "DependsOn" in resource:
            depends = resource["DependsOn"]
            resource["DependsOn"] = [
                d for d in ([depends] if isinstance(depends, str) else depends) if d not in removed
            ]
    template["Outputs"] = {
        key: output for key, output in template.get("Outputs", {}).items() if not set(_references(output)) & removed
    }
    # The bootstrap-version check reads an SSM parameter that only `cdk bootstrap` creates.
    template.pop("Rules", None)
    template.get("Parameters", {}).pop("BootstrapVersion", None)
    return template


@pytest.fixture(scope="module")
def moto_endpoint() -> Iterator[str]:
    with moto_server() as endpoint:
        yield endpoint


@pytest.fixture(scope="module")
def deployed(moto_endpoint: str, synthesized: Synthesized) -> dict[str, str]:
    """Create the stack in moto; return its outputs."""
    cloudformation = moto_client("cloudformation", moto_endpoint)
    cloudformation.create_stack(
        StackName="nodewright-test",
        TemplateBody=json.dumps(for_moto(synthesized.document)),
        Capabilities=["CAPABILITY_IAM"],
    )
    (stack,) = cloudformation.describe_stacks(StackName="nodewright-test")["Stacks"]
    assert stack["StackStatus"] == "CREATE_COMPLETE", stack.get("StackStatusReason")
    return {output["OutputKey"]: output["OutputValue"] for output in stack["Outputs"]}


def moto_client(service: str, endpoint: str) -> Any:
    return boto3.client(
        service,
        endpoint_url=endpoint,
        region_name=REGION,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


def test_stack_creates_tables_and_queues(moto_endpoint: str, deployed: dict[str, str]) -> None:
    dynamodb = moto_client("dynamodb", moto_endpoint)
    table = dynamodb.describe_table(TableName=deployed["StateTableName"])["Table"]

    assert table["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
    for queue in ("InterruptionQueueUrl", "PriorityQueueUrl"):
        attributes = moto_client("sqs", moto_endpoint).get_queue_attributes(
            QueueUrl=deployed[queue], AttributeNames=["All"]
        )["Attributes"]
        assert attributes["MessageRetentionPeriod"] == "300"
        assert json.loads(attributes["RedrivePolicy"])["maxReceiveCount"] == 3


def test_spot_interruption_warning_lands_in_the_priority_queue(moto_endpoint: str, deployed: dict[str, str]) -> None:
    detail = {"instance-id": "i-0123456789abcdef0", "instance-action": "terminate"}
    sent = moto_client("events", moto_endpoint).put_events(
        Entries=[
            {
                "Source": "aws.ec2",
                "DetailType": "EC2 Spot Instance Interruption Warning",
                "Detail": json.dumps(detail),
                "Resources": [f"arn:aws:ec2:{REGION}:123456789012:instance/i-0123456789abcdef0"],
            }
        ]
    )
    assert sent["FailedEntryCount"] == 0

    sqs = moto_client("sqs", moto_endpoint)
    # EC2's own event: the priority queue, not the main one (which only AWS Health and the
    # function's continuations use).
    main = sqs.receive_message(QueueUrl=deployed["InterruptionQueueUrl"], MaxNumberOfMessages=10, WaitTimeSeconds=1)
    assert main.get("Messages", []) == []
    received = sqs.receive_message(QueueUrl=deployed["PriorityQueueUrl"], MaxNumberOfMessages=10, WaitTimeSeconds=2)
    messages = received.get("Messages", [])
    for message in messages:  # leave the queue empty for the other tests
        sqs.delete_message(QueueUrl=deployed["PriorityQueueUrl"], ReceiptHandle=message["ReceiptHandle"])
    bodies = [json.loads(message["Body"]) for message in messages]
    assert [(b["source"], b["detail-type"], b["detail"]) for b in bodies] == [
        ("aws.ec2", "EC2 Spot Instance Interruption Warning", detail)
    ]
    # The handler deduplicates on the EventBridge id inside the body (karpenter-facts.md).
    assert bodies[0]["id"] == sent["Entries"][0]["EventId"]

    # The message, as Lambda's SQS event source hands it over, through the handler code, a second
    # after EventBridge stamped it (the handler drops a message older than the queue keeps one).
    sent_at = datetime.fromisoformat(bodies[0]["time"].replace("Z", "+00:00")).timestamp()
    world = World(clock=VirtualClock(sent_at + 1.0))
    world.spot_node("ip-10-0-1-1", pods=3, instance_id="i-0123456789abcdef0")
    table = _idempotency_table(moto_endpoint)
    once = EventDeduplicator(world.controller.process, table=table, client=moto_client("dynamodb", moto_endpoint))
    interruption_handler.configure(once)
    try:
        event = {"Records": [_lambda_record(m, deployed["PriorityQueueUrl"]) for m in messages]}
        assert interruption_handler.handler(event, _Context()) == {"batchItemFailures": []}
        assert interruption_handler.handler(event, _Context()) == {"batchItemFailures": []}  # redelivered
    finally:
        interruption_handler.configure(None)
    assert world.cluster.changes_of("node_cordoned")
    assert len(world.cluster.changes_of("pod_evicted")) == 3  # once, not twice
    records = moto_client("dynamodb", moto_endpoint).scan(TableName=table)["Items"]
    assert len(records) == 1
    assert records[0]["status"]["S"] == "COMPLETED"


def test_an_unrelated_event_does_not_reach_the_queue(moto_endpoint: str, deployed: dict[str, str]) -> None:
    moto_client("events", moto_endpoint).put_events(
        Entries=[
            {
                "Source": "aws.ec2",
                "DetailType": "EC2 Instance State-change Notification",
                "Detail": json.dumps({"instance-id": "i-0123456789abcdef0", "state": "running"}),
            }
        ]
    )

    for queue in ("InterruptionQueueUrl", "PriorityQueueUrl"):
        received = moto_client("sqs", moto_endpoint).receive_message(
            QueueUrl=deployed[queue], MaxNumberOfMessages=10, WaitTimeSeconds=1
        )
        assert received.get("Messages", []) == []


class _Context:
    function_name = "nodewright-interruption"
    memory_limit_in_mb = 512
    invoked_function_arn = f"arn:aws:lambda:{REGION}:123456789012:function:nodewright-interruption"
    aws_request_id = "0d15ea5e-0000-4000-8000-000000000001"

    def get_remaining_time_in_millis(self) -> int:
        return 60_000


def _idempotency_table(endpoint: str) -> str:
    resources = moto_client("cloudformation", endpoint).describe_stack_resources(StackName="nodewright-test")
    (table,) = [
        r["PhysicalResourceId"]
        for r in resources["StackResources"]
        if r["ResourceType"] == "AWS::DynamoDB::Table" and "Idempotency" in r["LogicalResourceId"]
    ]
    return str(table)


def _lambda_record(message: dict[str, Any], queue_url: str) -> dict[str, Any]:
    """One SQS message as the Lambda event source mapping delivers it."""
    name = queue_url.rsplit("/", 1)[-1]
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": message.get("Attributes", {}),
        "messageAttributes": {},
        "md5OfBody": message["MD5OfBody"],
        "eventSource": "aws:sqs",
        "eventSourceARN": f"arn:aws:sqs:{REGION}:123456789012:{name}",
        "awsRegion": REGION,
    }
