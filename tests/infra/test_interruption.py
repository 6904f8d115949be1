"""Interruption construct: the six rules, the queue and its policy, the DLQ and the event source."""

from __future__ import annotations

import pytest
from aws_cdk.assertions import Match

from tests.infra.conftest import Synthesized

RULES = [
    pytest.param(
        {"source": ["aws.ec2"], "detail-type": ["EC2 Spot Instance Interruption Warning"]},
        id="spot-interruption-warning",
    ),
    pytest.param(
        {"source": ["aws.ec2"], "detail-type": ["EC2 Instance Rebalance Recommendation"]},
        id="rebalance-recommendation",
    ),
    pytest.param(
        {
            "source": ["aws.ec2"],
            "detail-type": ["EC2 Instance State-change Notification"],
            "detail": {"state": ["stopping", "stopped", "shutting-down", "terminated"]},
        },
        id="instance-state-change",
    ),
    pytest.param(
        {
            "source": ["aws.ec2"],
            "detail-type": [
                "EC2 Capacity Reservation Instance Interruption Warning",
                "EC2 Interruptible Capacity Reservation Instance Interruption Warning",
            ],
        },
        id="capacity-reservation-interruption-both-detail-types",
    ),
    pytest.param(
        {
            "source": ["aws.health"],
            "detail-type": ["AWS Health Event"],
            "detail": {"service": ["EC2"], "eventTypeCategory": ["scheduledChange"]},
        },
        id="health-scheduled-change",
    ),
]


@pytest.mark.parametrize("pattern", RULES)
def test_interruption_signal_is_routed_to_the_queue(synthesized: Synthesized, pattern: dict[str, object]) -> None:
    queue_arn = synthesized.resolve(synthesized.stack.interruption.queue.queue_arn)
    synthesized.template.has_resource_properties(
        "AWS::Events::Rule",
        {"EventPattern": pattern, "State": "ENABLED", "Targets": [Match.object_like({"Arn": queue_arn})]},
    )


def test_there_are_exactly_six_interruption_rules_and_two_schedules(synthesized: Synthesized) -> None:
    rules = synthesized.resources("AWS::Events::Rule").values()

    assert sum("EventPattern" in r["Properties"] for r in rules) == 6
    assert sum("ScheduleExpression" in r["Properties"] for r in rules) == 2


def test_queue_keeps_messages_300s_with_sqs_managed_encryption_and_a_dlq(synthesized: Synthesized) -> None:
    interruption = synthesized.stack.interruption
    synthesized.template.has_resource_properties(
        "AWS::SQS::Queue",
        {
            "MessageRetentionPeriod": 300,
            "SqsManagedSseEnabled": True,
            "KmsMasterKeyId": Match.absent(),
            "VisibilityTimeout": 20,  # the 15 s function + 5 s (nodewright/config/timings.py)
            "RedrivePolicy": {
                "deadLetterTargetArn": synthesized.resolve(interruption.dead_letter_queue.queue_arn),
                "maxReceiveCount": 3,
            },
        },
    )
    synthesized.template.has_resource_properties(
        "AWS::SQS::Queue", {"MessageRetentionPeriod": 1209600, "SqsManagedSseEnabled": True}
    )


def test_queue_accepts_send_message_only_from_our_rules_and_only_over_tls(synthesized: Synthesized) -> None:
    """Only the rules (by aws:SourceArn) and the function's role may send; everyone else is denied."""
    interruption = synthesized.stack.interruption
    role_arn = synthesized.resolve(interruption.role.role_arn)
    queue_arn = synthesized.resolve(interruption.queue.queue_arn)
    rule_arns = [synthesized.resolve(rule.rule_arn) for rule in interruption.rules.values()]
    synthesized.template.has_resource_properties(
        "AWS::SQS::QueuePolicy",
        {
            "Queues": [synthesized.resolve(interruption.queue.queue_url)],
            "PolicyDocument": {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Deny",
                        "Principal": {"AWS": "*"},
                        "Action": "sqs:*",
                        "Resource": queue_arn,
                        "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                    },
                    {
                        "Sid": "AllowInterruptionRules",
                        "Effect": "Allow",
                        "Principal": {"Service": "events.amazonaws.com"},
                        "Action": "sqs:SendMessage",
                        "Resource": queue_arn,
                        "Condition": {"ArnEquals": {"aws:SourceArn": rule_arns}},
                    },
                    {
                        "Sid": "DenyOtherSenders",
                        "Effect": "Deny",
                        "Principal": {"AWS": "*"},
                        "Action": "sqs:SendMessage",
                        "Resource": queue_arn,
                        "Condition": {"ArnNotEquals": {"aws:SourceArn": rule_arns, "aws:PrincipalArn": [role_arn]}},
                    },
                ],
            },
        },
    )


def test_a_flood_cannot_take_the_accounts_concurrency(synthesized: Synthesized) -> None:
    interruption = synthesized.stack.interruption
    synthesized.template.has_resource_properties(
        "AWS::Lambda::EventSourceMapping",
        {
            "EventSourceArn": synthesized.resolve(interruption.queue.queue_arn),
            "ScalingConfig": {"MaximumConcurrency": 10},
        },
    )
    role = synthesized.resolve(interruption.role.role_arn)
    [function] = [f for f in synthesized.resources("AWS::Lambda::Function").values() if f["Properties"]["Role"] == role]
    assert function["Properties"]["ReservedConcurrentExecutions"] == 10


def test_function_consumes_batches_of_ten_reporting_item_failures(synthesized: Synthesized) -> None:
    interruption = synthesized.stack.interruption
    synthesized.template.has_resource_properties(
        "AWS::Lambda::EventSourceMapping",
        {
            "EventSourceArn": synthesized.resolve(interruption.queue.queue_arn),
            "FunctionName": synthesized.resolve(interruption.function.function_name),
            "BatchSize": 10,
            "FunctionResponseTypes": ["ReportBatchItemFailures"],
        },
    )


def test_function_knows_which_provisioner_to_invoke(synthesized: Synthesized) -> None:
    stack = synthesized.stack
    synthesized.template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Handler": "functions.interruption.handler.handler",
            "Environment": {
                "Variables": Match.object_like(
                    {"PROVISIONER_FUNCTION_NAME": synthesized.resolve(stack.provisioner.function.function_name)}
                )
            },
        },
    )
