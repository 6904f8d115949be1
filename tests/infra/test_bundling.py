"""The shared code asset: what gets bundled, and that bundle=false stays offline and source-only."""

from __future__ import annotations

import os
from pathlib import Path

import aws_cdk as cdk
import pytest

from infra.bundling import LocalPythonBundling, runtime_requirements
from tests.infra.conftest import REPO_ROOT, Synthesized


def test_runtime_requirements_are_pyproject_dependencies_without_boto3(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(
        '[project]\nname = "x"\ndependencies = ["boto3>=1.38,<2", "Botocore", "kubernetes>=36.0.1,<37", '
        '"aws-lambda-powertools[tracer]>=3.15", "pyyaml ; python_version >= \'3.11\'"]\n'
    )

    assert runtime_requirements(pyproject) == [
        "kubernetes>=36.0.1,<37",
        "aws-lambda-powertools[tracer]>=3.15",
        "pyyaml ; python_version >= '3.11'",
    ]


def test_the_repository_runtime_requirements_exclude_the_lambda_runtime_sdk() -> None:
    requirements = runtime_requirements(REPO_ROOT / "pyproject.toml")

    assert requirements
    assert not [r for r in requirements if r.lower().startswith(("boto3", "botocore"))]


def test_source_only_asset_holds_the_two_packages_and_no_dependencies(synthesized: Synthesized) -> None:
    (asset,) = [p for p in synthesized.outdir.iterdir() if p.name.startswith("asset.")]
    top_level = sorted(p.name for p in asset.iterdir())

    assert top_level == ["functions", "nodewright"]
    assert (asset / "functions" / "__init__.py").exists()
    assert (asset / "nodewright" / "__init__.py").exists()
    assert not list(asset.rglob("__pycache__"))


@pytest.mark.integration
@pytest.mark.skipif(
    os.environ.get("NODEWRIGHT_TEST_BUNDLE") != "1", reason="downloads wheels from PyPI; set NODEWRIGHT_TEST_BUNDLE=1"
)
def test_full_bundle_installs_arm64_cp312_wheels_without_boto3(tmp_path: Path) -> None:
    bundler = LocalPythonBundling(source_root=REPO_ROOT, install_dependencies=True)

    assert bundler.try_bundle(str(tmp_path), cdk.BundlingOptions(image=cdk.DockerImage.from_registry("unused")))

    names = {p.name for p in tmp_path.iterdir()}
    assert {"functions", "nodewright", "aws_lambda_powertools", "kubernetes", "yaml"} <= names
    assert not {n for n in names if n.startswith(("boto3", "botocore"))}
    native = list(tmp_path.rglob("*.so"))
    assert native
    assert all("aarch64" in p.name or "cpython" not in p.name for p in native)
    assert not list(tmp_path.rglob("*.pyc"))
