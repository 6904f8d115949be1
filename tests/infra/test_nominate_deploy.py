"""The `nominateAfterSeconds` deploy key: it reaches the provisioner as NOMINATE_AFTER_SECONDS,
`Settings` reads it, and the provisioner's options carry it (a pod's Nominated Event waits that long).

Real: the app synthesized as app.py builds it (tests/infra/conftest.py), `load_config`,
`Settings.from_env` and the composition root's options. Observed: the template's function
environment, the settings read back and the config errors.
"""

from __future__ import annotations

import pytest
from aws_cdk.assertions import Match

from infra.config import ConfigError, load_config
from nodewright.controllers.settings import Settings, SettingsError
from tests.infra.conftest import Synthesized

BASE = {"CLUSTER_NAME": "demo", "STATE_TABLE_NAME": "state", "CONFIG_TABLE_NAME": "config"}


def test_the_provisioner_learns_how_long_a_pod_waits_before_its_nominated_event(synthesized: Synthesized) -> None:
    synthesized.template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Handler": "functions.provisioner.handler.handler",
            "Environment": {"Variables": Match.object_like({"NOMINATE_AFTER_SECONDS": "30.0"})},
        },
    )


def test_the_key_is_seconds_up_to_an_hour() -> None:
    assert load_config({"nominateAfterSeconds": "0"}).nominate_after_seconds == 0
    assert load_config({}).nominate_after_seconds == 30
    with pytest.raises(ConfigError, match=r"'nominateAfterSeconds': 3601\.0 is outside 0-3600"):
        load_config({"nominateAfterSeconds": 3601})


def test_the_setting_reaches_the_provisioners_options() -> None:
    assert Settings.from_env(BASE).nominate_after == 30.0
    settings = Settings.from_env({**BASE, "NOMINATE_AFTER_SECONDS": "0.0"})
    assert settings.provisioner_options().nominate_after == 0.0
    with pytest.raises(SettingsError, match="NOMINATE_AFTER_SECONDS 'soon' is not a number"):
        Settings.from_env({**BASE, "NOMINATE_AFTER_SECONDS": "soon"})
