"""Settings read once from the functions' environment: defaults, and errors naming each variable."""

from __future__ import annotations

import pytest

from nodewright.controllers.algorithms import EngineDecisions, decisions_for, schedule_for
from nodewright.controllers.settings import Settings, SettingsError
from nodewright.reference.karpenter.disruption import Disruption
from nodewright.reference.karpenter.scheduler import schedule as karpenter_schedule

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
        (
            {"CONSOLIDATION_MODE": "aggressive"},
            "CONSOLIDATION_MODE 'aggressive' is not one of nodewright, many-to-one, karpenter",
        ),
        ({"CONSOLIDATION_MIN_SAVINGS": "cheap"}, "CONSOLIDATION_MIN_SAVINGS 'cheap' is not a number"),
        ({"CONSOLIDATION_MIN_SAVINGS_PERCENT": "150"}, "CONSOLIDATION_MIN_SAVINGS_PERCENT '150' is outside 0-100"),
    ],
)
def test_a_bad_environment_names_the_variable(env: dict[str, str], words: str) -> None:
    with pytest.raises(SettingsError, match=words.replace("(", r"\(").replace(")", r"\)")):
        Settings.from_env({**BASE, **env})


def test_every_problem_is_reported_at_once() -> None:
    with pytest.raises(SettingsError) as error:
        Settings.from_env({"CONSOLIDATION_MODE": "x"})
    assert str(error.value).count(";") >= 2


def test_the_consolidation_settings_choose_the_disruption_options() -> None:
    settings = Settings.from_env(
        {
            **BASE,
            "CONSOLIDATION_MODE": "many-to-one",
            "CONSOLIDATION_MIN_SAVINGS": "0.05",
            "CONSOLIDATION_MIN_SAVINGS_PERCENT": "10",
        }
    )
    options = settings.disruption_options()
    assert options.many_to_many is False
    assert options.min_savings == pytest.approx(0.05)
    assert options.min_savings_fraction == pytest.approx(0.10)
    assert Settings.from_env(BASE).disruption_options().many_to_many is True


def test_the_economy_key_ends_the_provisioner_early_only_when_set() -> None:
    assert Settings.from_env(BASE).provisioner_idle_exit is None
    assert Settings.from_env({**BASE, "PROVISIONER_IDLE_EXIT_SECONDS": "0"}).provisioner_idle_exit == 0.0
    with pytest.raises(SettingsError, match="PROVISIONER_IDLE_EXIT_SECONDS"):
        Settings.from_env({**BASE, "PROVISIONER_IDLE_EXIT_SECONDS": "soon"})


def test_spot_to_spot_consolidation_and_node_roles_reach_the_consolidator_and_the_launches() -> None:
    settings = Settings.from_env(
        {
            **BASE,
            "SPOT_TO_SPOT_CONSOLIDATION": "false",
            "NODE_ROLE_ARN": "arn:aws:iam::111122223333:role/prod-node",
            "NODE_ROLES": "KarpenterNodeRole-prod, arn:aws:iam::111122223333:role/teams/Payments",
        }
    )

    assert Settings.from_env(BASE).disruption_options().spot_to_spot is True
    assert settings.disruption_options().spot_to_spot is False
    assert settings.roles().allowed == {"prod-node", "KarpenterNodeRole-prod", "Payments"}
    with pytest.raises(SettingsError, match="SPOT_TO_SPOT_CONSOLIDATION 'maybe' is not true or false"):
        Settings.from_env({**BASE, "SPOT_TO_SPOT_CONSOLIDATION": "maybe"})


def test_karpenter_mode_runs_the_karpenter_reference_and_its_batching() -> None:
    settings = Settings.from_env({**BASE, "CONSOLIDATION_MODE": "karpenter"})
    assert isinstance(decisions_for(settings.consolidation), Disruption)
    assert schedule_for(settings.consolidation) is karpenter_schedule
    options = settings.provisioner_options()
    assert (options.batch_idle, options.batch_max, options.batch_growth) == (1.0, 10.0, 0.0)
    # Nodewright's own modes keep the engine and its batching.
    for mode in ("nodewright", "many-to-one"):
        mine = Settings.from_env({**BASE, "CONSOLIDATION_MODE": mode})
        assert isinstance(decisions_for(mine.consolidation), EngineDecisions)
        assert schedule_for(mine.consolidation) is None
        assert mine.provisioner_options().batch_growth > 0
