#!/usr/bin/env python3
"""CDK entry point: `cdk synth` / `cdk deploy` run this (see "app" in cdk.json).

Role: the only place that reads CDK context (cdk.json defaults and `-c key=value` overrides) and
the CLI's default account/region. It turns them into a validated `DeployConfig`, builds one
`NodewrightStack` from it, and registers cdk-nag's AwsSolutions pack so synthesis fails on any
unacknowledged finding.
"""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Mapping
from pathlib import Path

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks

from infra.config import CONTEXT_KEYS, ConfigError, DeployConfig, load_config
from infra.stack import NodewrightStack

REPO_ROOT = Path(__file__).resolve().parent


def read_config(app: cdk.App, environ: Mapping[str, str]) -> DeployConfig:
    """Collect our context keys from `app` and validate them; unknown plain keys are errors.

    Account and region fall back to the CLI's CDK_DEFAULT_ACCOUNT / CDK_DEFAULT_REGION; without
    either the stack is environment-agnostic.
    """
    everything = app.node.get_all_context()
    # CDK's own keys are namespaced ("@aws-cdk/...", "aws:cdk:..."); anything else is meant for us.
    unknown = sorted(
        key for key in everything if key not in CONTEXT_KEYS and not key.startswith("@") and ":" not in key
    )
    if unknown:
        raise ConfigError(
            f"unknown context key(s): {', '.join(_with_guess(key) for key in unknown)}; "
            f"known: {', '.join(sorted(CONTEXT_KEYS))} (docs/deploy.md lists each)"
        )
    context = {key: everything[key] for key in CONTEXT_KEYS if everything.get(key) is not None}
    context.setdefault("account", environ.get("CDK_DEFAULT_ACCOUNT"))
    context.setdefault("region", environ.get("CDK_DEFAULT_REGION"))
    return load_config(context)


def _with_guess(key: str) -> str:
    """`key`, with the known key it most likely misspells: `nodeRole (did you mean nodeRoles?)`."""
    close = difflib.get_close_matches(key, sorted(CONTEXT_KEYS), n=1, cutoff=0.6)
    if not close:
        lowered = {known.lower(): known for known in CONTEXT_KEYS}
        close = [lowered[key.lower()]] if key.lower() in lowered else []
    return f"{key} (did you mean {close[0]}?)" if close else key


def build_app(app: cdk.App, environ: Mapping[str, str]) -> NodewrightStack:
    """Add the Nodewright stack (and cdk-nag) to `app`; return the stack."""
    config = read_config(app, environ)
    env = cdk.Environment(account=config.account, region=config.region) if config.account or config.region else None
    stack = NodewrightStack(app, config.stack_name, config=config, source_root=REPO_ROOT, env=env)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return stack


def main() -> None:
    """Synthesize the app; print configuration errors as one readable message."""
    app = cdk.App()
    try:
        build_app(app, os.environ)
    except ConfigError as error:
        sys.exit(f"nodewright: {error}")
    app.synth()


if __name__ == "__main__":
    main()
