"""Monitoring construct: dashboard metrics, alarms to the optional topic, saved queries."""

from __future__ import annotations

import json
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk import assertions
from aws_cdk.assertions import Match

import app as nodewright_app
from infra.constructs.monitoring import SERVICE_METRICS, nodewright_metric
from tests.infra.conftest import ALARM_TOPIC_ARN, CLUSTER, CONTEXT, Synthesized

METRICS = [
    "PendingPods",
    "NodesLaunched",
    "NodesTerminated",
    "LaunchFailures",
    "SchedulingSeconds",
    "PendingToLaunchSeconds",
    "ClusterHourlyCost",
    "InterruptionsReceived",
    "NodesCordoned",
    "PodsEvicted",
    "EvictionsBlockedByPDB",
    "MessageAgeSeconds",
    "ConsolidationSavingsPerHour",
    "NodesDisrupted",
    "CommandsFailed",
    "EligibleNodes",
]


def _dashboard_body(synthesized: Synthesized) -> str:
    (dashboard,) = synthesized.resources("AWS::CloudWatch::Dashboard").values()
    return json.dumps(dashboard["Properties"]["DashboardBody"])


@pytest.mark.parametrize("metric", METRICS)
def test_dashboard_graphs_every_nodewright_metric_with_the_service_dimension(
    synthesized: Synthesized, metric: str
) -> None:
    body = _dashboard_body(synthesized)

    assert f'\\"Nodewright\\",\\"{metric}\\",\\"service\\"' in body


def test_dashboard_shows_function_errors_and_durations(synthesized: Synthesized) -> None:
    body = _dashboard_body(synthesized)

    assert '\\"AWS/Lambda\\",\\"Errors\\"' in body
    assert '\\"AWS/Lambda\\",\\"Duration\\"' in body


def test_a_metric_from_the_wrong_service_is_a_programming_error() -> None:
    assert "PendingPods" in SERVICE_METRICS["provisioner"]
    with pytest.raises(ValueError, match="does not emit"):
        nodewright_metric("interruption", "PendingPods")


@pytest.mark.parametrize("prefix", ["", "priority_"])
def test_each_dlq_alarm_fires_on_any_message_and_notifies_the_topic(synthesized: Synthesized, prefix: str) -> None:
    dead_letter_queue = getattr(synthesized.stack.interruption, f"{prefix}dead_letter_queue")
    synthesized.template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Namespace": "AWS/SQS",
            "MetricName": "ApproximateNumberOfMessagesVisible",
            "Dimensions": [
                {
                    "Name": "QueueName",
                    "Value": synthesized.resolve(dead_letter_queue.queue_name),
                }
            ],
            "Threshold": 1,
            "ComparisonOperator": "GreaterThanOrEqualToThreshold",
            "AlarmActions": [ALARM_TOPIC_ARN],
            "OKActions": [ALARM_TOPIC_ARN],
        },
    )


@pytest.mark.parametrize("name", ["provisioner", "interruption", "consolidator"])
def test_each_function_has_an_errors_alarm(synthesized: Synthesized, name: str) -> None:
    function = getattr(synthesized.stack, name).function
    synthesized.template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Namespace": "AWS/Lambda",
            "MetricName": "Errors",
            "Dimensions": [{"Name": "FunctionName", "Value": synthesized.resolve(function.function_name)}],
            "AlarmActions": [ALARM_TOPIC_ARN],
        },
    )


def test_pods_pending_alarm_needs_five_minutes_without_a_single_clear_minute(synthesized: Synthesized) -> None:
    synthesized.template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Namespace": "Nodewright",
            "MetricName": "PendingPods",
            "Dimensions": [{"Name": "service", "Value": "provisioner"}],
            "Statistic": "Minimum",
            "Period": 60,
            "EvaluationPeriods": 5,
            "Threshold": 1,
            "TreatMissingData": "notBreaching",
            "AlarmActions": [ALARM_TOPIC_ARN],
        },
    )
    # 2 DLQs, pods pending, 3 function errors, 2 oldest messages, failed records, rejected
    # continuations, dropped messages.
    synthesized.template.resource_count_is("AWS::CloudWatch::Alarm", 11)


@pytest.mark.parametrize("prefix", ["", "priority_"])
def test_each_queue_alarms_when_its_oldest_message_waited_over_30s(synthesized: Synthesized, prefix: str) -> None:
    queue = getattr(synthesized.stack.interruption, f"{prefix}queue")
    synthesized.template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Namespace": "AWS/SQS",
            "MetricName": "ApproximateAgeOfOldestMessage",
            "Dimensions": [{"Name": "QueueName", "Value": synthesized.resolve(queue.queue_name)}],
            "Statistic": "Maximum",
            "Period": 60,
            "Threshold": 30,
            "ComparisonOperator": "GreaterThanThreshold",
            "AlarmActions": [ALARM_TOPIC_ARN],
        },
    )


@pytest.mark.parametrize("metric", ["RecordsFailed", "ContinuationsRejected", "MessagesDropped"])
def test_interruption_guard_metrics_alarm_on_the_first_one(synthesized: Synthesized, metric: str) -> None:
    synthesized.template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Namespace": "Nodewright",
            "MetricName": metric,
            "Dimensions": [{"Name": "service", "Value": "interruption"}],
            "Threshold": 1,
            "AlarmActions": [ALARM_TOPIC_ARN],
        },
    )


@pytest.mark.parametrize("name", ["Decisions", "Launches", "Interruptions", "Consolidation", "Errors"])
def test_saved_logs_insights_query_searches_the_function_log_groups(synthesized: Synthesized, name: str) -> None:
    stack = synthesized.stack
    groups = [
        synthesized.resolve(c.handler.log_group.log_group_name)
        for c in (stack.provisioner, stack.interruption, stack.consolidator)
    ]
    synthesized.template.has_resource_properties(
        "AWS::Logs::QueryDefinition",
        {
            "Name": f"Nodewright/{CLUSTER}/{name}",
            "QueryString": Match.string_like_regexp(r"^fields @timestamp[\s\S]*\| sort @timestamp desc"),
            "LogGroupNames": groups,
        },
    )


def test_without_an_alarm_topic_the_stack_creates_one_and_every_alarm_notifies_it(
    tmp_path: Path,
) -> None:
    app = cdk.App(context={k: v for k, v in CONTEXT.items() if k != "alarmTopicArn"}, outdir=str(tmp_path))
    stack = nodewright_app.build_app(app, environ={})
    template = assertions.Template.from_stack(stack)
    topics = template.find_resources("AWS::SNS::Topic")
    assert len(topics) == 1
    [topic_id] = topics
    alarms = template.find_resources("AWS::CloudWatch::Alarm")
    assert len(alarms) == 11
    assert all(alarm["Properties"]["AlarmActions"] == [{"Ref": topic_id}] for alarm in alarms.values())
