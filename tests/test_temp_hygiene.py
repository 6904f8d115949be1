"""The suite-wide temporary-directory check of tests/conftest.py, run on a small suite of its own.

Real: pytest in a child process with tests/conftest.py loaded as a plugin, on a throwaway test
file. Observed: the child's exit status and summary, and that its temporary directory is gone.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]

LEAKS = """
import tempfile

def test_that_leaves_a_ca_file_behind():
    tempfile.NamedTemporaryFile(prefix="nodewright-ca-", suffix=".crt", delete=False).close()
"""

CLEAN = """
import tempfile

def test_that_cleans_up_and_uses_tmp_path(tmp_path):
    with tempfile.NamedTemporaryFile() as handle:
        handle.write(b"removed on close")
    (tmp_path / "kept").write_text("pytest keeps tmp_path on purpose: not a leak")
"""


def run_suite(tmp_path: Path, source: str) -> subprocess.CompletedProcess[str]:
    """Run `source` as a suite whose temporary directory is `tmp_path / "tmp"`: its own, so other
    pytest runs on the machine (CI beside a developer's run) neither add to nor take from it."""
    (tmp_path / "test_inner.py").write_text(source)
    (tmp_path / "tmp").mkdir()
    plugins = ["-p", "tests.conftest", "-p", "no:cacheprovider"]
    return subprocess.run(
        [sys.executable, "-m", "pytest", *plugins, "-c", os.devnull, "--rootdir", str(tmp_path), str(tmp_path)],
        cwd=REPO_ROOT,
        env={**os.environ, "TMPDIR": str(tmp_path / "tmp")},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _sessions_left(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in (tmp_path / "tmp").glob("nodewright-tests-*"))


def test_a_run_that_leaves_a_temporary_file_fails_and_names_it(tmp_path: Path) -> None:
    done = run_suite(tmp_path, LEAKS)
    assert done.returncode == 1, done.stdout
    assert "1 passed" in done.stdout
    assert "files left in the temporary directory" in done.stdout
    assert "nodewright-ca-" in done.stdout
    assert _sessions_left(tmp_path) == []


def test_a_run_that_cleans_up_passes(tmp_path: Path) -> None:
    done = run_suite(tmp_path, CLEAN)
    assert done.returncode == 0, done.stdout
    assert "files left" not in done.stdout
    assert _sessions_left(tmp_path) == []
