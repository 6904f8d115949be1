"""Build the one Lambda code asset shared by the three functions, on the host, without Docker.

Role: `function_code(...)` returns a `lambda_.Code` whose bundling copies the repository's
`nodewright/` and `functions/` packages into the asset and, unless told not to, installs the
runtime dependencies from pyproject's `[project.dependencies]` as arm64 CPython 3.12 wheels with
`pip install --platform manylinux2014_aarch64 --only-binary=:all:`. Only wheels are accepted, so
what pip installs on an x86 laptop is exactly what runs on Graviton.

boto3 (and botocore, which it brings) are left out: the Lambda Python runtime provides them, and
leaving them out keeps the asset about 25 MB smaller. So is what only the command line uses:
typer and rich (with pygments, markdown-it, pydantic and the rest they bring, 14 MB), and the
`nodewright` sub-packages no handler imports (the command line, the simulator and its in-memory
fakes). tests/infra/test_bundling.py checks both lists against the handlers' import graph.

The asset is reproducible: built in two checkouts in two directories it has the same hash. pip
writes nothing that depends on the build machine except the console scripts in `bin/` (their
first line is the interpreter that ran pip) and each distribution's RECORD (which lists those
scripts' hashes); the Lambdas use neither, so both are left out, as are `.pyc` files.

With `install_dependencies=False` (the `-c bundle=false` context flag) only the sources are copied:
synth then needs no network, which keeps the test suite fast and offline-safe. Such an asset is
not deployable; `cdk deploy` should always run with bundling on.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
import typing
from pathlib import Path

import aws_cdk as cdk
import jsii
from aws_cdk import aws_lambda as lambda_

# Packages copied into the asset, relative to the repository root.
SOURCE_PACKAGES: tuple[str, ...] = ("nodewright", "functions")
# Provided by the Lambda runtime; see the module docstring.
RUNTIME_PROVIDED: frozenset[str] = frozenset({"boto3", "botocore"})
# Distributions only the command line imports; see the module docstring.
CLI_ONLY: frozenset[str] = frozenset({"typer", "rich"})
# Sub-packages (relative to the repository root) that no handler imports.
SOURCES_LEFT_OUT: tuple[str, ...] = ("nodewright/cli", "nodewright/inmemory", "nodewright/simulator")
_IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", ".mypy_cache")


def runtime_requirements(pyproject: Path) -> list[str]:
    """Return pyproject's `[project.dependencies]` minus what the Lambda runtime already provides
    and what only the command line uses.
    """
    with pyproject.open("rb") as stream:
        dependencies: list[str] = tomllib.load(stream)["project"]["dependencies"]
    kept = []
    for requirement in dependencies:
        name = re.split(r"[\s<>=!~;\[(]", requirement.strip(), maxsplit=1)[0]
        if name.lower().replace("_", "-") not in RUNTIME_PROVIDED | CLI_ONLY:
            kept.append(requirement)
    return kept


@jsii.implements(cdk.ILocalBundling)
class LocalPythonBundling:
    """ILocalBundling that builds the asset with the host's Python and pip (no Docker)."""

    def __init__(self, *, source_root: Path, install_dependencies: bool) -> None:
        """Bundle the packages under `source_root`; install pyproject deps when `install_dependencies`."""
        self._source_root = source_root
        self._install_dependencies = install_dependencies

    def try_bundle(self, output_dir: str, _options: cdk.BundlingOptions) -> bool:
        """Write the asset into `output_dir`; return True (Docker is never used) or raise on failure.

        (jsii passes the bundling options as one positional struct, not as keyword arguments.)
        """
        build_asset(self._source_root, Path(output_dir), install_dependencies=self._install_dependencies)
        return True


def build_asset(source_root: Path, target: Path, *, install_dependencies: bool) -> None:
    """Write the asset of the sources under `source_root` into `target` (see the module docstring).

    Raises RuntimeError, with pip's error, when the dependencies cannot be installed.
    """
    if install_dependencies:
        _pip_install(source_root, target)
        drop_build_machine_files(target)
    copy_sources(source_root, target)


def _pip_install(source_root: Path, target: Path) -> None:
    requirements = runtime_requirements(source_root / "pyproject.toml")
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-compile",  # .pyc files would make the asset hash differ between builds
        "--platform",
        "manylinux2014_aarch64",
        "--implementation",
        "cp",
        "--python-version",
        "3.12",
        "--only-binary=:all:",
        "--target",
        str(target),
        *requirements,
    ]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(
            "installing the Lambda dependencies failed (synth with -c bundle=false to skip it):\n"
            f"$ {' '.join(command)}\n{result.stderr.strip()}"
        )


def drop_build_machine_files(target: Path) -> None:
    """Remove what pip wrote that depends on the build machine (see the module docstring)."""
    shutil.rmtree(target / "bin", ignore_errors=True)
    for record in target.glob("*.dist-info/RECORD"):
        record.unlink()


def copy_sources(source_root: Path, target: Path) -> None:
    """Copy SOURCE_PACKAGES into `target`, without SOURCES_LEFT_OUT and caches."""
    left_out = {source_root / path for path in SOURCES_LEFT_OUT}

    def ignored(directory: str, names: list[str]) -> set[str]:
        skipped = set(_IGNORED(directory, names))
        return skipped | {name for name in names if Path(directory) / name in left_out}

    for package in SOURCE_PACKAGES:
        shutil.copytree(source_root / package, target / package, ignore=ignored, dirs_exist_ok=True)


def function_code(*, source_root: Path, install_dependencies: bool) -> lambda_.Code:
    """Return the shared code asset for the three functions (bind it to all three: CDK stages it once)."""
    return lambda_.Code.from_asset(
        # The packages are read by the local bundler, not fingerprinted by CDK: hashing the output
        # avoids walking the whole repository (with .venv and node_modules) on every synth.
        str(source_root / "functions"),
        asset_hash_type=cdk.AssetHashType.OUTPUT,
        bundling=cdk.BundlingOptions(
            # Required by the API but never pulled: local bundling always succeeds or raises.
            image=lambda_.Runtime.PYTHON_3_12.bundling_image,
            # jsii calls try_bundle(output_dir, options) positionally, while the generated Protocol
            # spells the options as keyword arguments; the cast bridges that typing gap only.
            local=typing.cast(
                cdk.ILocalBundling,
                LocalPythonBundling(source_root=source_root, install_dependencies=install_dependencies),
            ),
        ),
    )
