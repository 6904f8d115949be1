"""`python -m infra.package`: the CloudFormation-only install (no `cdk deploy`, no `cdk bootstrap`).

What is real: the app synthesized as app.py builds it (cdk.json's context, `bundle=false` so the
asset is the copied sources), the template and zip the command writes, cfn-lint, and moto's S3,
CloudFormation and Lambda over HTTP taking the zip from a bucket as `aws cloudformation deploy`
would. Observed: the template's code references and parameters, the zip's entries, the stack
CloudFormation creates and the functions' code it loaded.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from cfnlint.api import ManualArgs, lint

from infra.package import ASSET_BUCKET, ASSET_PREFIX, main
from tests.infra.test_compliance import CFN_LINT_IGNORED
from tests.infra.test_moto_deploy import for_moto, moto_client, moto_endpoint  # noqa: F401 - fixture

PACKAGED_STACK = "Nodewright-packaged"


@pytest.fixture(scope="module")
def packaged(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], list[Path]]:
    out = tmp_path_factory.mktemp("package")
    assert main(["--out", str(out), "-c", "clusterName=demo", "-c", "bundle=false"]) == 0
    return json.loads((out / "template.json").read_text()), sorted(out.glob("*.zip"))


def test_the_template_reads_its_code_from_the_parameters_and_needs_no_bootstrap(
    packaged: tuple[dict[str, Any], list[Path]],
) -> None:
    template, zips = packaged
    functions = [r for r in template["Resources"].values() if r["Type"] == "AWS::Lambda::Function"]
    assert len(functions) == 3
    (only,) = zips  # the three functions share one asset
    for function in functions:
        code = function["Properties"]["Code"]
        assert code["S3Bucket"] == {"Ref": ASSET_BUCKET}
        assert code["S3Key"] == {"Fn::Join": ["", [{"Ref": ASSET_PREFIX}, only.name]]}
    text = json.dumps(template)
    assert "cdk-hnb659fds" not in text
    assert "BootstrapVersion" not in text
    assert set(template["Parameters"]) == {ASSET_BUCKET, ASSET_PREFIX}
    with zipfile.ZipFile(only) as archive:
        names = set(archive.namelist())
    assert {"functions/provisioner/handler.py", "nodewright/controllers/assembly.py"} <= names


def test_the_template_passes_cfn_lint(packaged: tuple[dict[str, Any], list[Path]]) -> None:
    template, _ = packaged
    matches = lint(
        json.dumps(template), config=ManualArgs(regions=["us-east-1", "eu-west-1"], ignore_checks=CFN_LINT_IGNORED)
    )
    assert [f"{m.rule.id} {m.message}" for m in matches] == []


@pytest.mark.integration
def test_cloudformation_creates_the_stack_from_the_bucket(
    packaged: tuple[dict[str, Any], list[Path]],
    moto_endpoint: str,  # noqa: F811 - fixture
) -> None:
    template, zips = packaged
    s3 = moto_client("s3", moto_endpoint)
    s3.create_bucket(Bucket="installs")
    for path in zips:
        s3.upload_file(str(path), "installs", f"nodewright/0.1.0/{path.name}")
    # What moto cannot create is left out as the moto deploy test leaves it out; the code stays S3's.
    ready = for_moto(template)
    for key, resource in ready["Resources"].items():
        if resource["Type"] == "AWS::Lambda::Function":
            resource["Properties"]["Code"] = template["Resources"][key]["Properties"]["Code"]
    cloudformation = moto_client("cloudformation", moto_endpoint)

    # A stack name of its own: the moto server is shared with the other deploy tests of this worker.
    cloudformation.create_stack(
        StackName=PACKAGED_STACK,
        TemplateBody=json.dumps(ready),
        Parameters=[
            {"ParameterKey": ASSET_BUCKET, "ParameterValue": "installs"},
            {"ParameterKey": ASSET_PREFIX, "ParameterValue": "nodewright/0.1.0/"},
        ],
        Capabilities=["CAPABILITY_IAM"],
    )

    (stack,) = cloudformation.describe_stacks(StackName=PACKAGED_STACK)["Stacks"]
    assert stack["StackStatus"] == "CREATE_COMPLETE", stack.get("StackStatusReason")
    lambdas = moto_client("lambda", moto_endpoint)
    names = [
        f["FunctionName"] for f in lambdas.list_functions()["Functions"] if f["FunctionName"].startswith(PACKAGED_STACK)
    ]
    assert len(names) == 3
    size = zips[0].stat().st_size
    assert {lambdas.get_function(FunctionName=n)["Configuration"]["CodeSize"] for n in names} == {size}
