"""`cdk synth` through the real aws-cdk CLI, with the app command from cdk.json."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.infra.conftest import REPO_ROOT

CDK = REPO_ROOT / "node_modules" / ".bin" / "cdk"

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not CDK.exists() or shutil.which("node") is None, reason="needs node and ./dev setup"),
]


def _cli_env() -> dict[str, str]:
    env = dict(os.environ)
    # No AWS account is needed to synthesize: keep the CLI from probing credentials or IMDS.
    env.update({"AWS_EC2_METADATA_DISABLED": "true", "CDK_DISABLE_VERSION_CHECK": "1", "CI": "true"})
    for key in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "CDK_DEFAULT_ACCOUNT", "CDK_DEFAULT_REGION"):
        env.pop(key, None)
    return env


def _synth(outdir: Path, *context: str) -> subprocess.CompletedProcess[str]:
    command = [str(CDK), "synth", "--quiet", "--no-notices", "-o", str(outdir), "-c", "bundle=false"]
    for item in context:
        command += ["-c", item]
    return subprocess.run(
        command, check=False, cwd=REPO_ROOT, env=_cli_env(), capture_output=True, text=True, timeout=300
    )


def test_cdk_json_runs_the_app_from_the_repo_root() -> None:
    settings = json.loads((REPO_ROOT / "cdk.json").read_text())

    assert settings["app"] == ".venv/bin/python app.py"
    assert settings["context"]["clusterName"] == "demo"
    assert settings["context"]["@aws-cdk/aws-iam:minimizePolicies"] is True  # fresh-app feature flags


def test_cdk_synth_writes_the_stack_template(tmp_path: Path) -> None:
    result = _synth(tmp_path, "clusterName=blue")

    assert result.returncode == 0, result.stderr
    template = json.loads((tmp_path / "Nodewright-blue.template.json").read_text())
    types = {resource["Type"] for resource in template["Resources"].values()}
    assert {"AWS::Lambda::Function", "AWS::SQS::Queue", "AWS::EKS::AccessEntry", "AWS::SNS::Topic"} <= types
    # No topic configured: the stack's own, which every alarm notifies.
    [topic] = [name for name, resource in template["Resources"].items() if resource["Type"] == "AWS::SNS::Topic"]
    alarms = [r for r in template["Resources"].values() if r["Type"] == "AWS::CloudWatch::Alarm"]
    assert alarms
    assert all(alarm["Properties"]["AlarmActions"] == [{"Ref": topic}] for alarm in alarms)
