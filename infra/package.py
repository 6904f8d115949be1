r"""A CloudFormation template and its code asset, for installing without `cdk deploy` or `cdk bootstrap`.

Role: `python -m infra.package --out DIR [-c key=value ...]` synthesizes the same app `cdk deploy`
would (app.py, the same context keys, cdk-nag) and writes to DIR:

* `template.json`: the stack's template, with each Lambda function's code read from the
  parameters `AssetBucket` and `AssetPrefix` (instead of the CDK bootstrap bucket) and without the
  bootstrap version check, so no `cdk bootstrap` is needed;
* one `<hash>.zip` per code asset (the functions share one): what CDK would have uploaded.

Then (docs/deploy.md, "Without CDK"):

    aws s3 cp DIR/ s3://BUCKET/PREFIX --recursive --exclude template.json
    aws cloudformation deploy --template-file DIR/template.json --stack-name Nodewright-CLUSTER \
      --parameter-overrides AssetBucket=BUCKET AssetPrefix=PREFIX --capabilities CAPABILITY_IAM

`package(out, context)` is the same as a function (tests call it). It needs Node.js only for
jsii, as any synthesis does; it contacts no AWS account.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
ASSET_BUCKET = "AssetBucket"
ASSET_PREFIX = "AssetPrefix"


def package(out: Path, context: Mapping[str, str]) -> tuple[Path, list[Path]]:
    """Synthesize the app with `context` and write the template and its asset zips into `out`."""
    import aws_cdk as cdk

    import app as nodewright_app

    out.mkdir(parents=True, exist_ok=True)
    # cdk.json's context first (feature flags, defaults), as `cdk deploy` reads it, then the keys given.
    defaults = json.loads((REPO_ROOT / "cdk.json").read_text()).get("context", {})
    with tempfile.TemporaryDirectory(prefix="nodewright-synth-") as outdir:
        application = cdk.App(context={**defaults, **context}, outdir=outdir)
        stack = nodewright_app.build_app(application, environ={})
        assembly = application.synth()
        artifact = assembly.get_stack_by_name(stack.stack_name)
        template, assets = standalone(artifact.template)
        zips = [_zip(Path(outdir) / f"asset.{asset}", out / f"{asset}.zip") for asset in sorted(assets)]
    path = out / "template.json"
    path.write_text(json.dumps(template, indent=1, sort_keys=True) + "\n")
    return path, zips


def standalone(document: Mapping[str, Any]) -> tuple[dict[str, Any], set[str]]:
    """The template reading each function's code from AssetBucket/AssetPrefix, and the asset hashes
    it names (`<hash>.zip` keys of the bootstrap bucket).
    """
    template: dict[str, Any] = json.loads(json.dumps(document))
    assets: set[str] = set()
    for resource in template["Resources"].values():
        if resource["Type"] != "AWS::Lambda::Function":
            continue
        code = resource["Properties"].get("Code") or {}
        key = code.get("S3Key")
        if not isinstance(key, str) or not key.endswith(".zip"):
            continue  # inline code, or not an asset
        asset = key.removesuffix(".zip")
        assets.add(asset)
        resource["Properties"]["Code"] = {
            "S3Bucket": {"Ref": ASSET_BUCKET},
            "S3Key": {"Fn::Join": ["", [{"Ref": ASSET_PREFIX}, key]]},
        }
    parameters = template.setdefault("Parameters", {})
    parameters.pop("BootstrapVersion", None)
    parameters[ASSET_BUCKET] = {
        "Type": "String",
        "Description": "S3 bucket holding the code zips `python -m infra.package` wrote (same region as the stack)",
    }
    parameters[ASSET_PREFIX] = {"Type": "String", "Default": "", "Description": "Key prefix of the zips in it"}
    rules = template.get("Rules") or {}
    rules.pop("CheckBootstrapVersion", None)
    if not rules:
        template.pop("Rules", None)
    return template, assets


def _zip(directory: Path, target: Path) -> Path:
    """`directory` as a zip whose entries are relative to it (Lambda's layout)."""
    if not directory.is_dir():
        raise FileNotFoundError(f"asset {directory} was not synthesized")
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(directory.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(directory).as_posix())
    return target


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: --out DIR and -c key=value (the deploy keys of docs/deploy.md)."""
    parser = argparse.ArgumentParser(prog="python -m infra.package", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="Directory for template.json and the zips.")
    parser.add_argument("-c", "--context", action="append", default=[], metavar="KEY=VALUE", help="A deploy key.")
    args = parser.parse_args(argv)
    context: dict[str, str] = {}
    for item in args.context:
        key, separator, value = item.partition("=")
        if not separator:
            parser.error(f"-c {item!r}: expected key=value")
        context[key] = value
    from infra.config import ConfigError

    try:
        path, zips = package(args.out, context)
    except ConfigError as error:
        print(f"nodewright: {error}", file=sys.stderr)
        return 1
    print(f"wrote {path} and {', '.join(str(z) for z in zips)}; next: docs/deploy.md, 'Without CDK'")
    return 0


if __name__ == "__main__":
    sys.exit(main())
