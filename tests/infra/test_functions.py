"""What the three functions share: runtime, handler, environment, log groups and one code asset."""

from __future__ import annotations

import pytest
from aws_cdk.assertions import Match

from tests.infra.conftest import CLUSTER, Synthesized

NAMES = ("provisioner", "interruption", "consolidator")


@pytest.mark.parametrize("name", NAMES)
def test_function_runs_its_handler_on_python_312_arm64_with_powertools_settings(
    synthesized: Synthesized, name: str
) -> None:
    stack = synthesized.stack
    synthesized.template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Handler": f"functions.{name}.handler.handler",
            "Runtime": "python3.12",
            "Architectures": ["arm64"],
            "Environment": {
                "Variables": Match.object_like(
                    {
                        "POWERTOOLS_SERVICE_NAME": name,
                        "POWERTOOLS_METRICS_NAMESPACE": "Nodewright",
                        "LOG_LEVEL": "DEBUG",
                        "CLUSTER_NAME": CLUSTER,
                        "CONFIG_SOURCE": "dynamodb",
                        "REBALANCE_POLICY": "ReplaceThenDrain",
                        "DISCOVERY_TAG_KEY": "nodewright.io/discovery",
                        "DISCOVERY_TAG_VALUE": CLUSTER,
                        "CONFIG_TABLE_NAME": synthesized.resolve(stack.state.config_table.table_name),
                        "STATE_TABLE_NAME": synthesized.resolve(stack.state.state_table.table_name),
                        "IDEMPOTENCY_TABLE_NAME": synthesized.resolve(stack.state.idempotency_table.table_name),
                        "INTERRUPTION_QUEUE_URL": synthesized.resolve(stack.interruption.queue.queue_url),
                        "NODE_ROLE_ARN": synthesized.resolve(stack.access.node_role.role_arn),
                        "NODE_INSTANCE_PROFILE": synthesized.resolve(
                            stack.access.instance_profile.instance_profile_name
                        ),
                    }
                )
            },
        },
    )


def test_no_environment_variable_looks_like_a_secret(synthesized: Synthesized) -> None:
    for function in synthesized.resources("AWS::Lambda::Function").values():
        for key in function["Properties"]["Environment"]["Variables"]:
            assert not any(word in key for word in ("SECRET", "PASSWORD", "TOKEN", "ACCESS_KEY")), key


def test_the_three_functions_share_one_code_asset(synthesized: Synthesized) -> None:
    codes = [f["Properties"]["Code"] for f in synthesized.resources("AWS::Lambda::Function").values()]

    assert len(codes) == 3
    assert codes[0] == codes[1] == codes[2]
    assets = [p for p in synthesized.outdir.iterdir() if p.name.startswith("asset.")]
    assert len(assets) == 1


def test_each_function_logs_to_its_own_log_group_with_the_configured_retention(synthesized: Synthesized) -> None:
    stack = synthesized.stack
    synthesized.template.resource_count_is("AWS::Logs::LogGroup", 3)
    synthesized.template.all_resources_properties("AWS::Logs::LogGroup", {"RetentionInDays": 14})
    for construct in (stack.provisioner, stack.interruption, stack.consolidator):
        synthesized.template.has_resource_properties(
            "AWS::Lambda::Function",
            {
                "Role": synthesized.resolve(construct.role.role_arn),
                "LoggingConfig": {"LogGroup": synthesized.resolve(construct.handler.log_group.log_group_name)},
            },
        )


def test_every_function_has_its_own_role(synthesized: Synthesized) -> None:
    roles = {str(f["Properties"]["Role"]) for f in synthesized.resources("AWS::Lambda::Function").values()}

    assert len(roles) == 3


def test_no_role_uses_the_aws_managed_lambda_execution_policy(synthesized: Synthesized) -> None:
    for role in synthesized.resources("AWS::IAM::Role").values():
        assert "AWSLambdaBasicExecutionRole" not in str(role["Properties"].get("ManagedPolicyArns", []))


def test_the_consolidator_learns_its_mode_and_stability_guard(synthesized: Synthesized) -> None:
    synthesized.template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Handler": "functions.consolidator.handler.handler",
            "Environment": {
                "Variables": Match.object_like(
                    {
                        "CONSOLIDATION_MODE": "nodewright",
                        "CONSOLIDATION_MIN_SAVINGS": "0.0",
                        "CONSOLIDATION_MIN_SAVINGS_PERCENT": "0.0",
                    }
                )
            },
        },
    )


def test_the_provisioner_waits_for_pods_until_its_deadline_by_default(synthesized: Synthesized) -> None:
    for function in synthesized.resources("AWS::Lambda::Function").values():
        assert "PROVISIONER_IDLE_EXIT_SECONDS" not in function["Properties"]["Environment"]["Variables"]
