"""Fixtures for the CDK app's tests: the app is synthesized once per session (jsii is slow).

What is real: the app built exactly as app.py builds it (config from context, cdk-nag plugin),
with `bundle=false` so the code asset is just the copied sources (no pip, no network). What is
observed: the synthesized CloudFormation template, through `aws_cdk.assertions.Template` and as
a plain dict. Logical ids are never spelled out: tests resolve them from the construct objects.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import assertions
from aws_cdk import aws_iam as iam

import app as nodewright_app
from infra.stack import NodewrightStack
from tests.infra.derive import Recorder, record

REPO_ROOT = Path(__file__).resolve().parents[2]
CLUSTER = "demo"
ALARM_TOPIC_ARN = "arn:aws:sns:eu-west-1:123456789012:nodewright-alarms"
# The context the session's app is synthesized with (strings, as `-c key=value` would pass them).
CONTEXT = {"bundle": "false", "clusterName": CLUSTER, "alarmTopicArn": ALARM_TOPIC_ARN}


@dataclass(frozen=True)
class Synthesized:
    """One synthesized app: the stack object, its template (assertions + dict) and the output dir."""

    app: cdk.App
    stack: NodewrightStack
    template: assertions.Template
    document: dict[str, Any]
    outdir: Path

    def resolve(self, value: object) -> Any:
        """CloudFormation form of a token (e.g. {"Fn::GetAtt": [...]}) for use in matchers."""
        return self.stack.resolve(value)

    def resources(self, resource_type: str) -> dict[str, dict[str, Any]]:
        """Every resource of `resource_type`, by logical id."""
        return {key: r for key, r in self.document["Resources"].items() if r["Type"] == resource_type}

    def statements_of(self, role: iam.IRole) -> list[dict[str, Any]]:
        """Every statement of every AWS::IAM::Policy attached to `role`."""
        role_ref = self.resolve(role.role_name)
        return [
            statement
            for policy in self.resources("AWS::IAM::Policy").values()
            if role_ref in policy["Properties"]["Roles"]
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        ]

    def actions_of(self, role: iam.IRole) -> set[str]:
        """Every action `role` is allowed."""
        actions: set[str] = set()
        for statement in self.statements_of(role):
            if statement["Effect"] == "Allow":
                listed = statement["Action"]
                actions.update([listed] if isinstance(listed, str) else listed)
        return actions


@pytest.fixture(scope="session")
def derived() -> Recorder:
    """What each function called, AWS and Kubernetes (tests/infra/derive.py; about a minute:
    seven simulated runs over HTTP)."""
    return record()


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    """The Nodewright app synthesized once for the whole session."""
    outdir = tmp_path_factory.mktemp("cdk.out")
    app = cdk.App(context=CONTEXT, outdir=str(outdir))
    # An empty environ: the template must not depend on the developer's AWS CLI profile.
    stack = nodewright_app.build_app(app, environ={})
    assembly = app.synth()
    document = assembly.get_stack_by_name(stack.stack_name).template
    return Synthesized(
        app=app,
        stack=stack,
        template=assertions.Template.from_json(document),
        document=json.loads(json.dumps(document)),
        outdir=outdir,
    )
