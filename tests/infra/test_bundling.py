"""The shared code asset: what gets bundled, and that bundle=false stays offline and source-only."""

from __future__ import annotations

import os
import re
from pathlib import Path

import aws_cdk as cdk
import pytest

from infra.bundling import (
    CLI_ONLY,
    SOURCES_LEFT_OUT,
    LocalPythonBundling,
    drop_build_machine_files,
    runtime_requirements,
)
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
    assert [path for path in SOURCES_LEFT_OUT if (asset / path).exists()] == []
    assert (asset / "nodewright" / "data").is_dir()


def _handler_imports() -> set[str]:
    """Every module the three handlers can import, by the static import graph (grimp, as
    import-linter builds it: imports inside functions count too)."""
    import grimp

    graph = grimp.build_graph("functions", "nodewright", include_external_packages=True, cache_dir=None)
    seen = {m for m in graph.modules if m.startswith("functions.") and m.endswith(".handler")}
    assert len(seen) == 3, seen
    stack = list(seen)
    while stack:
        for imported in graph.find_modules_directly_imported_by(stack.pop()):
            if imported not in seen:
                seen.add(imported)
                stack.append(imported)
    return seen


def _normal(distribution: str) -> str:
    return distribution.lower().replace("_", "-")


def test_what_the_asset_leaves_out_no_handler_imports_and_what_it_installs_they_do() -> None:
    from importlib.metadata import packages_distributions

    imported = _handler_imports()
    left_out = tuple(path.replace("/", ".") for path in SOURCES_LEFT_OUT)
    assert sorted(m for m in imported if m.startswith(left_out)) == []
    top_level = {m.split(".")[0] for m in imported}
    distributions_imported = {
        _normal(dist) for module in top_level for dist in packages_distributions().get(module, [])
    }
    assert distributions_imported.isdisjoint(CLI_ONLY)
    requirements = runtime_requirements(REPO_ROOT / "pyproject.toml")
    installed = {_normal(re.split(r"[\s<>=!~;\[(]", r, maxsplit=1)[0]) for r in requirements}
    # Each requirement the asset installs is imported by a handler (names as pyproject spells them).
    assert installed - distributions_imported == set()


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
    assert not {n for n in names if n.startswith(("typer", "rich", "pygments", "markdown_it", "pydantic"))}
    native = list(tmp_path.rglob("*.so"))
    assert native
    assert all("aarch64" in p.name or "cpython" not in p.name for p in native)
    assert not list(tmp_path.rglob("*.pyc"))


def test_console_scripts_and_records_that_name_the_build_machine_are_left_out(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "normalizer").write_text("#!/home/someone/checkout/.venv/bin/python\n")
    (tmp_path / "yaml").mkdir()
    (tmp_path / "yaml" / "__init__.py").write_text("")
    (tmp_path / "PyYAML-6.0.dist-info").mkdir()
    (tmp_path / "PyYAML-6.0.dist-info" / "RECORD").write_text("../../bin/normalizer,sha256=...,60\n")
    (tmp_path / "PyYAML-6.0.dist-info" / "METADATA").write_text("Name: PyYAML\n")

    drop_build_machine_files(tmp_path)

    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file()) == [
        "PyYAML-6.0.dist-info/METADATA",
        "yaml/__init__.py",
    ]


def _digest(root: Path) -> str:
    import hashlib

    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


@pytest.mark.integration
@pytest.mark.skipif(
    os.environ.get("NODEWRIGHT_TEST_BUNDLE") != "1", reason="downloads wheels from PyPI; set NODEWRIGHT_TEST_BUNDLE=1"
)
def test_the_asset_built_in_two_directories_is_the_same(tmp_path: Path) -> None:
    import shutil

    digests = []
    for place in ("one", "somewhere/else/two"):
        checkout = tmp_path / place / "checkout"
        checkout.mkdir(parents=True)
        for name in ("nodewright", "functions", "pyproject.toml"):
            source = REPO_ROOT / name
            if source.is_dir():
                shutil.copytree(source, checkout / name, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy(source, checkout / name)
        out = tmp_path / place / "asset"
        out.mkdir()
        LocalPythonBundling(source_root=checkout, install_dependencies=True).try_bundle(
            str(out), cdk.BundlingOptions(image=cdk.DockerImage.from_registry("unused"))
        )
        assert not (out / "bin").exists()
        digests.append(_digest(out))

    assert digests[0] == digests[1]
