"""Interruption construct: the six rules, the two queues and their policies, the DLQs and the event sources."""

from __future__ import annotations

import pytest
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Match

from tests.infra.conftest import Synthesized

# Each pattern, and the queue it feeds: EC2's own events the priority queue, AWS Health the main one.
RULES = [
    pytest.param(
        {"source": ["aws.ec2"], "detail-type": ["EC2 Spot Instance Interruption Warning"]},
        "priority_queue",
        id="spot-interruption-warning",
    ),
    pytest.param(
        {"source": ["aws.ec2"], "detail-type": ["EC2 Instance Rebalance Recommendation"]},
        "priority_queue",
        id="rebalance-recommendation",
    ),
    pytest.param(
        {
            "source": ["aws.ec2"],
            "detail-type": ["EC2 Instance State-change Notification"],
            "detail": {"state": ["stopping", "stopped", "shutting-down", "terminated"]},
        },
        "priority_queue",
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
        "priority_queue",
        id="capacity-reservation-interruption-both-detail-types",
    ),
    pytest.param(
        {
            "source": ["aws.ec2"],
            "detail-type": ["Capacity Block Reservation Expiration Warning", "Capacity Block Expiration Warning"],
        },
        "priority_queue",
        id="capacity-block-expiration-both-detail-types",
    ),
    pytest.param(
        {
            "source": ["aws.health"],
            "detail-type": ["AWS Health Event"],
            "detail": {"service": ["EC2"], "eventTypeCategory": ["scheduledChange"]},
        },
        "queue",
        id="health-scheduled-change",
    ),
]


@pytest.mark.parametrize(("pattern", "queue"), RULES)
def test_interruption_signal_is_routed_to_its_queue(
    synthesized: Synthesized, pattern: dict[str, object], queue: str
) -> None:
    queue_arn = synthesized.resolve(getattr(synthesized.stack.interruption, queue).queue_arn)
    synthesized.template.has_resource_properties(
        "AWS::Events::Rule",
        {"EventPattern": pattern, "State": "ENABLED", "Targets": [Match.object_like({"Arn": queue_arn})]},
    )


def test_there_are_exactly_six_interruption_rules_and_two_schedules(synthesized: Synthesized) -> None:
    rules = synthesized.resources("AWS::Events::Rule").values()

    assert sum("EventPattern" in r["Properties"] for r in rules) == 6
    assert sum("ScheduleExpression" in r["Properties"] for r in rules) == 2


@pytest.mark.parametrize("prefix", ["", "priority_"])
def test_queue_keeps_messages_300s_with_sqs_managed_encryption_and_its_own_dlq(
    synthesized: Synthesized, prefix: str
) -> None:
    interruption = synthesized.stack.interruption
    dead_letter_queue = getattr(interruption, f"{prefix}dead_letter_queue")
    synthesized.template.has_resource_properties(
        "AWS::SQS::Queue",
        {
            "MessageRetentionPeriod": 300,
            "SqsManagedSseEnabled": True,
            "KmsMasterKeyId": Match.absent(),
            "VisibilityTimeout": 20,  # the 15 s function + 5 s (nodewright/config/timings.py)
            "RedrivePolicy": {
                "deadLetterTargetArn": synthesized.resolve(dead_letter_queue.queue_arn),
                "maxReceiveCount": 3,
            },
        },
    )
    [logical_id, _] = synthesized.resolve(dead_letter_queue.queue_arn)["Fn::GetAtt"]
    properties = synthesized.resources("AWS::SQS::Queue")[logical_id]["Properties"]
    assert (properties["MessageRetentionPeriod"], properties["SqsManagedSseEnabled"]) == (1209600, True)


def _queue_policy(
    synthesized: Synthesized, queue: sqs.IQueue, rule_arns: list[object], deny: dict[str, object]
) -> None:
    queue_arn = synthesized.resolve(queue.queue_arn)
    synthesized.template.has_resource_properties(
        "AWS::SQS::QueuePolicy",
        {
            "Queues": [synthesized.resolve(queue.queue_url)],
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
                        "Condition": {"ArnNotEquals": deny},
                    },
                ],
            },
        },
    )


def test_main_queue_accepts_send_message_only_from_the_health_rule_and_the_function(
    synthesized: Synthesized,
) -> None:
    """Only the AWS Health rule (by aws:SourceArn) and the function's role (its continuations)
    may send; everyone else is denied, and only over TLS.
    """
    interruption = synthesized.stack.interruption
    rule_arns = [synthesized.resolve(interruption.rules["ScheduledChangeRule"].rule_arn)]
    role_arn = synthesized.resolve(interruption.role.role_arn)
    _queue_policy(
        synthesized, interruption.queue, rule_arns, {"aws:SourceArn": rule_arns, "aws:PrincipalArn": [role_arn]}
    )


def test_priority_queue_accepts_send_message_only_from_the_ec2_rules_not_even_the_function(
    synthesized: Synthesized,
) -> None:
    """The rules matching `source: aws.ec2` only, which EventBridge fills with EC2's own events:
    no principal, the function's role included, is excepted from the Deny.
    """
    interruption = synthesized.stack.interruption
    rule_arns = [
        synthesized.resolve(rule.rule_arn)
        for rule_id, rule in interruption.rules.items()
        if rule_id != "ScheduledChangeRule"
    ]
    assert len(rule_arns) == 5
    _queue_policy(synthesized, interruption.priority_queue, rule_arns, {"aws:SourceArn": rule_arns})


def test_the_function_may_send_only_to_the_main_queue(synthesized: Synthesized) -> None:
    interruption = synthesized.stack.interruption
    main, priority = (synthesized.resolve(q.queue_arn) for q in (interruption.queue, interruption.priority_queue))
    sends = [
        s["Resource"]
        for s in synthesized.statements_of(interruption.role)
        if "sqs:SendMessage" in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
    ]
    assert sends == [main]
    receives = [
        s["Resource"]
        for s in synthesized.statements_of(interruption.role)
        if "sqs:ReceiveMessage" in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
    ]
    assert receives == [main, priority]


@pytest.mark.parametrize(("queue", "source"), [("queue", "QueueSource"), ("priority_queue", "PriorityQueueSource")])
def test_each_queue_has_its_own_event_source_with_its_own_maximum_concurrency(
    synthesized: Synthesized, queue: str, source: str
) -> None:
    interruption = synthesized.stack.interruption
    synthesized.template.has_resource_properties(
        "AWS::Lambda::EventSourceMapping",
        {
            "EventSourceArn": synthesized.resolve(getattr(interruption, queue).queue_arn),
            "FunctionName": synthesized.resolve(interruption.function.function_name),
            "BatchSize": 10,
            "FunctionResponseTypes": ["ReportBatchItemFailures"],
            "ScalingConfig": {"MaximumConcurrency": 10},
        },
    )


def test_a_flood_cannot_take_the_accounts_concurrency_nor_the_priority_queues(synthesized: Synthesized) -> None:
    """Reserved concurrency is the sum of the two event sources' maxima: the main queue's can
    never use the priority queue's slots.
    """
    role = synthesized.resolve(synthesized.stack.interruption.role.role_arn)
    [function] = [f for f in synthesized.resources("AWS::Lambda::Function").values() if f["Properties"]["Role"] == role]
    assert function["Properties"]["ReservedConcurrentExecutions"] == 10 + 10
    synthesized.template.resource_count_is("AWS::Lambda::EventSourceMapping", 2)


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
