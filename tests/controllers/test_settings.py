"""Settings read once from the functions' environment: defaults, and errors naming each variable."""

from __future__ import annotations

import pytest

from nodewright.controllers.settings import Settings, SettingsError

BASE = {"CLUSTER_NAME": "prod", "STATE_TABLE_NAME": "state", "CONFIG_TABLE_NAME": "config"}


def test_defaults_follow_the_stack() -> None:
    settings = Settings.from_env(BASE)
    assert settings.config_source == "dynamodb"
    assert settings.rebalance_policy == "ReplaceThenDrain"
    assert settings.consolidation == "nodewright"
    assert settings.discovery_tag_value == "prod"


@pytest.mark.parametrize(
    ("env", "words"),
    [
        ({"CLUSTER_NAME": ""}, "CLUSTER_NAME is not set"),
        ({"STATE_TABLE_NAME": " "}, "STATE_TABLE_NAME is not set"),
        ({"CONFIG_TABLE_NAME": ""}, "CONFIG_TABLE_NAME is not set (CONFIG_SOURCE is dynamodb)"),
        ({"CONFIG_SOURCE": "etcd"}, "CONFIG_SOURCE 'etcd' is not one of dynamodb, crd"),
        ({"REBALANCE_POLICY": "Panic"}, "REBALANCE_POLICY 'Panic' is not one of"),
        ({"CONSOLIDATION_MODE": "aggressive"}, "CONSOLIDATION_MODE 'aggressive' is not one of nodewright, karpenter"),
    ],
)
def test_a_bad_environment_names_the_variable(env: dict[str, str], words: str) -> None:
    with pytest.raises(SettingsError, match=words.replace("(", r"\(").replace(")", r"\)")):
        Settings.from_env({**BASE, **env})


def test_every_problem_is_reported_at_once() -> None:
    with pytest.raises(SettingsError) as error:
        Settings.from_env({"CONSOLIDATION_MODE": "x"})
    assert str(error.value).count(";") >= 2
