"""app.py: how CDK context and the CLI's default account/region become the deploy configuration."""

from __future__ import annotations

import aws_cdk as cdk
import pytest

import app as nodewright_app
from infra.config import ConfigError


def test_unknown_plain_context_key_is_rejected_naming_the_known_ones() -> None:
    with pytest.raises(
        ConfigError, match=r"unknown context key\(s\): clustername \(did you mean clusterName\?\); known: .*clusterName"
    ):
        nodewright_app.read_config(cdk.App(context={"clustername": "typo"}), environ={})


def test_a_misspelt_deploy_key_gets_a_did_you_mean() -> None:
    with pytest.raises(ConfigError, match=r"nodeRole \(did you mean nodeRoles\?\), provisionerIdleExit \(did you"):
        nodewright_app.read_config(cdk.App(context={"nodeRole": "x", "provisionerIdleExit": "0"}), environ={})


def test_cdk_namespaced_keys_pass_and_cli_defaults_fill_account_and_region() -> None:
    app = cdk.App(context={"@aws-cdk/core:newStyleStackSynthesis": True, "aws:cdk:bundling-stacks": ["x"]})

    config = nodewright_app.read_config(
        app, environ={"CDK_DEFAULT_ACCOUNT": "123456789012", "CDK_DEFAULT_REGION": "eu-west-1"}
    )

    assert (config.account, config.region) == ("123456789012", "eu-west-1")


def test_context_account_wins_over_the_cli_default() -> None:
    app = cdk.App(context={"account": "210987654321"})

    config = nodewright_app.read_config(app, environ={"CDK_DEFAULT_ACCOUNT": "123456789012"})

    assert config.account == "210987654321"
