"""Deploy configuration: presets, `-c key=value` overrides and readable validation errors (no jsii)."""

from __future__ import annotations

import pytest

from infra.config import (
    ENVIRONMENTS,
    ConfigError,
    ConfigSource,
    ConsolidationMode,
    DeployConfig,
    FunctionConfig,
    RebalancePolicy,
    load_config,
)


def test_defaults_are_the_dev_preset_with_replace_then_drain_and_dynamodb() -> None:
    config = load_config({})

    assert config == ENVIRONMENTS["dev"]
    assert config.rebalance_policy is RebalancePolicy.REPLACE_THEN_DRAIN
    assert config.config_source is ConfigSource.DYNAMODB
    assert config.alarm_topic_arn is None
    assert config.bundle_dependencies is True
    assert config.stack_name == "Nodewright-demo"
    assert config.effective_discovery_tag_value == "demo"


def test_string_context_values_override_the_chosen_preset() -> None:
    config = load_config(
        {
            "environment": "prod",
            "clusterName": "payments",
            "account": "123456789012",
            "region": "eu-west-1",
            "provisionerRateMinutes": "2",
            "interruptionMemoryMb": "256",
            "consolidatorTimeoutSeconds": 300,
            "configSource": "CRD",
            "rebalancePolicy": "cordon",
            "logRetentionDays": "365",
            "logLevel": "warning",
            "discoveryTagKey": "karpenter.sh/discovery",
            "alarmTopicArn": "arn:aws:sns:eu-west-1:123456789012:ops",
            "bundle": "false",
            "consolidationMode": "Karpenter",
            "consolidationMinSavings": "0.02",
            "consolidationMinSavingsPercent": 5,
        }
    )

    assert config == DeployConfig(
        environment="prod",
        cluster_name="payments",
        account="123456789012",
        region="eu-west-1",
        provisioner_rate_minutes=2,
        interruption=FunctionConfig(memory_mb=256, timeout_seconds=15),
        consolidator=FunctionConfig(memory_mb=1024, timeout_seconds=300),
        config_source=ConfigSource.CRD,
        rebalance_policy=RebalancePolicy.CORDON,
        log_retention_days=365,
        log_level="WARNING",
        discovery_tag_key="karpenter.sh/discovery",
        alarm_topic_arn="arn:aws:sns:eu-west-1:123456789012:ops",
        bundle_dependencies=False,
        consolidation_mode=ConsolidationMode.KARPENTER,
        consolidation_min_savings=0.02,
        consolidation_min_savings_percent=5.0,
    )
    assert config.effective_discovery_tag_value == "payments"


def test_every_invalid_key_is_named_in_one_error() -> None:
    with pytest.raises(ConfigError) as raised:
        load_config(
            {
                "clusterName": "-bad name",
                "account": "12345",
                "provisionerRateMinutes": "often",
                "logRetentionDays": "8",
                "rebalancePolicy": "Drain",
                "interruptionTimeoutSeconds": "120",
                "alarmTopicArn": "arn:aws:sqs:eu-west-1:123456789012:q",
                "bundle": "maybe",
            }
        )

    message = str(raised.value)
    for key in (
        "clusterName",
        "account",
        "provisionerRateMinutes",
        "logRetentionDays",
        "rebalancePolicy",
        "interruptionTimeoutSeconds",
        "alarmTopicArn",
        "bundle",
    ):
        assert f"'{key}'" in message
    assert "ReplaceThenDrain" in message  # the allowed values are listed


@pytest.mark.parametrize(
    ("context", "fragment"),
    [
        pytest.param({"environment": "staging"}, "'environment'", id="unknown-environment"),
        pytest.param({"region": "Europe"}, "'region'", id="region-name"),
        pytest.param({"consolidatorRateMinutes": "0"}, "1-60", id="rate-below-a-minute"),
        pytest.param({"provisionerMemoryMb": "64"}, "128-10240", id="memory-too-small"),
        pytest.param({"discoveryTagKey": "aws:reserved"}, "'discoveryTagKey'", id="aws-tag-prefix"),
        pytest.param({"logLevel": "verbose"}, "'logLevel'", id="log-level"),
        pytest.param({"consolidationMode": "eager"}, "'consolidationMode'", id="consolidation-mode"),
        pytest.param({"consolidationMinSavings": "-1"}, "0-1000", id="negative-savings"),
        pytest.param({"consolidationMinSavingsPercent": "lots"}, "'consolidationMinSavingsPercent'", id="percent"),
        pytest.param({"provisionerIdleExitSeconds": "600"}, "'provisionerIdleExitSeconds'", id="idle-past-timeout"),
        pytest.param({"interruptionMaxConcurrency": "1"}, "'interruptionMaxConcurrency': 1 is outside 2-1000", id="mc"),
        pytest.param(
            {"interruptionPriorityMaxConcurrency": "1001"},
            "'interruptionPriorityMaxConcurrency': 1001 is outside 2-1000",
            id="priority-max-concurrency",
        ),
    ],
)
def test_invalid_value_is_rejected_with_the_key_named(context: dict[str, object], fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        load_config(context)


def test_empty_alarm_topic_means_no_topic() -> None:
    assert load_config({"alarmTopicArn": ""}).alarm_topic_arn is None


def test_the_economy_key_is_off_unless_set() -> None:
    assert load_config({}).provisioner_idle_exit_seconds is None
    assert load_config({"provisionerIdleExitSeconds": "0"}).provisioner_idle_exit_seconds == 0.0


def test_every_deploy_key_is_documented_in_deploy_md() -> None:
    from pathlib import Path

    from infra.config import CONTEXT_KEYS

    text = (Path(__file__).resolve().parents[2] / "docs" / "deploy.md").read_text()
    assert [key for key in sorted(CONTEXT_KEYS) if f"`{key}`" not in text] == []
