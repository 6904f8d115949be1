"""Provisioner and consolidator constructs: schedules, single-flight concurrency, async settings."""

from __future__ import annotations

import pytest
from aws_cdk.assertions import Match

from tests.infra.conftest import Synthesized


@pytest.mark.parametrize("name", ["provisioner", "consolidator"])
def test_scheduled_function_runs_every_minute_one_at_a_time(synthesized: Synthesized, name: str) -> None:
    construct = getattr(synthesized.stack, name)
    function_arn = synthesized.resolve(construct.function.function_arn)

    synthesized.template.has_resource_properties(
        "AWS::Lambda::Function",
        {"Handler": f"functions.{name}.handler.handler", "ReservedConcurrentExecutions": 1},
    )
    synthesized.template.has_resource_properties(
        "AWS::Events::Rule",
        {
            "ScheduleExpression": "rate(1 minute)",
            "State": "ENABLED",
            "Targets": [Match.object_like({"Arn": function_arn})],
        },
    )
    synthesized.template.has_resource_properties(
        "AWS::Lambda::Permission",
        {"Action": "lambda:InvokeFunction", "Principal": "events.amazonaws.com", "FunctionName": function_arn},
    )


@pytest.mark.parametrize("name", ["provisioner", "consolidator"])
def test_stale_or_failed_async_invocations_are_dropped_not_queued(synthesized: Synthesized, name: str) -> None:
    function = getattr(synthesized.stack, name).function
    synthesized.template.has_resource_properties(
        "AWS::Lambda::EventInvokeConfig",
        {
            "FunctionName": synthesized.resolve(function.function_name),
            "MaximumEventAgeInSeconds": 60,
            "MaximumRetryAttempts": 0,
        },
    )


def test_interruption_function_runs_in_parallel_up_to_its_reserved_concurrency(synthesized: Synthesized) -> None:
    # A spot storm is handled in parallel; a flood cannot take the account's whole concurrency.
    # Reserved: the main queue's event source (10) and the priority queue's (10).
    synthesized.template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Handler": "functions.interruption.handler.handler",
            "ReservedConcurrentExecutions": 20,
        },
    )
