"""Suite-wide: a test run leaves no file in the temporary directory.

Each run gets a fresh, empty temporary directory: before any test runs, TMPDIR (and Python's
cached `tempfile.tempdir`) point at a new `nodewright-tests-*` directory inside the usual one,
so every temporary file the tests, the code under test and the processes they start (node for
jsii and the cdk CLI, moto servers, checkov) make lands there, and nothing another process of
the machine writes is mistaken for ours. pytest's own `tmp_path` directories stay where they
always are (PYTEST_DEBUG_TEMPROOT keeps them in the usual directory): pytest keeps the last
three runs on purpose.

When the session ends, the directory must be empty: whatever is left is named in the summary and
fails the run (exit status 1), then the directory is removed. Under pytest-xdist, the controller
makes the directory (the workers inherit TMPDIR) and checks it once all workers are done; the
workers do neither.

Bytecode: when PYTHONDONTWRITEBYTECODE is set (so no `__pycache__` lands beside the sources),
every Python process the suite starts (the xdist workers, the `nodewright` console script, the
simulator and pytest children, the CDK app) would compile botocore, moto, kubernetes and ours from
source again, seconds of CPU each. The controller then lets them write bytecode into one cache of
the run's own (PYTHONPYCACHEPREFIX, outside the source tree and outside the checked temporary
directory) and removes it at the end: the first process compiles, the others read.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

# Session fixtures worth building once per run, and the xdist group of the modules that use them.
SHARED = {"synthesized": "cdk", "derived": "cdk", "example_plan": "example-plan", "shipped_run": "shipped-runs"}
# Modules whose tests each simulate a day or a flood (tens of CPU seconds apiece): dealt out first.
SLOW = ("tests/simulator/test_generated_guard.py", "tests/bench/")

# Walks of the session's temporary directory, 0.25 s apart, that must agree before it counts as still.
STILL = 8
_FRESH = pytest.StashKey[Path]()
_PYCACHE = pytest.StashKey[Path]()
_LEFT = pytest.StashKey[list[str]]()


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under `-n N` (xdist's `load`), deal out the tests sharing an expensive fixture as one unit."""
    if config.getvalue("dist") != "load":
        return None  # an explicit --dist is obeyed
    from xdist.scheduler import LoadScopeScheduling

    class SharedFixtureScheduling(LoadScopeScheduling):
        """`load`, except that tests of one fixture group (`fixture_group`) go to one worker, and the
        units known to take tens of seconds each (`SLOW`) are dealt out first: dealt last, one of them
        would run alone while the other workers have nothing left.
        """

        _slow_first = False

        def _split_scope(self, nodeid: str) -> str:
            return fixture_group(nodeid)

        def _assign_work_unit(self, node: Any) -> None:
            if not self._slow_first:
                self._slow_first = True
                units = sorted(self.workqueue.items(), key=lambda unit: not unit[0].startswith(SLOW))
                self.workqueue.clear()
                self.workqueue.update(units)
            super()._assign_work_unit(node)

    return SharedFixtureScheduling(config, log)


@functools.cache
def _group_of_module(path: str) -> str | None:
    try:
        text = (Path(config_root()) / path).read_text(encoding="utf-8")
    except OSError:
        return None
    for name, group in SHARED.items():
        if re.search(rf"\b{name}\b", text):
            return group
    return path if 'scope="module"' in text else None


def config_root() -> Path:
    """The directory node ids are relative to (the repository root, where pyproject.toml is)."""
    return Path(__file__).resolve().parents[1]


def fixture_group(nodeid: str) -> str:
    """The unit a test is dealt out in: its SHARED group when its module names one of those session
    fixtures, its module when the module defines a module-scoped fixture, else the test alone.
    """
    return _group_of_module(nodeid.split("::", maxsplit=1)[0]) or nodeid


def pytest_configure(config: pytest.Config) -> None:
    """Point the session's temporary directory at a fresh, empty one (controller only)."""
    if _is_worker(config):
        return
    usual = tempfile.gettempdir()
    os.environ.setdefault("PYTEST_DEBUG_TEMPROOT", usual)
    fresh = Path(tempfile.mkdtemp(prefix="nodewright-tests-", dir=usual))
    os.environ["TMPDIR"] = str(fresh)
    tempfile.tempdir = None  # recomputed from TMPDIR on next use
    config.stash[_FRESH] = fresh
    if os.environ.get("PYTHONDONTWRITEBYTECODE") and not os.environ.get("PYTHONPYCACHEPREFIX"):
        pycache = Path(tempfile.mkdtemp(prefix="nodewright-pycache-", dir=usual))
        del os.environ["PYTHONDONTWRITEBYTECODE"]
        os.environ["PYTHONPYCACHEPREFIX"] = str(pycache)
        config.stash[_PYCACHE] = pycache


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Stop this process's jsii kernel; then (controller) fail the run when a file is left in the
    session's temporary directory.
    """
    _stop_jsii_kernel()
    fresh = session.config.stash.get(_FRESH, None)
    if fresh is None:
        return
    left = _left_in(fresh)
    session.config.stash[_LEFT] = left
    if left and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _stop_jsii_kernel() -> None:
    """Stop the node process the CDK tests' jsii kernel runs in, if this process started one.

    jsii stops it only at interpreter exit (an atexit hook), and only then removes the runtime it
    unpacked into the session's temporary directory, after waiting up to 5 s for node to exit and
    5 s for its stderr reader. An xdist worker that slow to exit is interrupted by its controller
    (seen on a loaded machine: a KeyboardInterrupt during the worker's exit, the six runtime files
    left), so the worker stops it here, inside its session. jsii has no public call for this: its
    kernel's process is a memoized property whose value sits in the property's closure.
    """
    runtime = sys.modules.get("jsii._runtime")
    if runtime is None:  # no CDK test ran in this process
        return
    fget = getattr(type(runtime.kernel.provider).__dict__.get("_process"), "fget", None)
    if fget is None or not fget.__closure__:
        return
    cells = dict(zip(fget.__code__.co_freevars, fget.__closure__, strict=True))
    stored = cells["stored"].cell_contents if "stored" in cells else []
    if stored:
        stored[0].stop()


def _left_in(fresh: Path) -> list[str]:
    """The files and empty directories under `fresh`, relative to it. A tree another process is
    still deleting (a CDK test's jsii kernel removes its node_modules as its worker exits, after
    the last test) loses entries during the walk: the walk is taken again until it holds still, so
    only what stays is reported.
    """

    def walk() -> list[str]:
        return sorted(str(path.relative_to(fresh)) for path in fresh.rglob("*") if not path.is_dir() or _empty(path))

    # On a loaded machine the kernel may pause for more than one interval between deletions, so a
    # tree counts as still only after it held for STILL walks in a row (2 s), within 60 s.
    last: list[str] | None = None
    same = 0
    for _ in range(240):
        try:
            now = walk()
        except FileNotFoundError:
            now = None
        if now is not None and not now:
            return now
        same = same + 1 if now is not None and now == last else 0
        if same >= STILL:
            return now or []
        last = now
        time.sleep(0.25)
    return walk()


def _empty(directory: Path) -> bool:
    return not any(directory.iterdir())


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    """Name what was left behind, and remove the session's temporary directory (and bytecode cache)."""
    pycache = config.stash.get(_PYCACHE, None)
    if pycache is not None:
        shutil.rmtree(pycache, ignore_errors=True)
    fresh = config.stash.get(_FRESH, None)
    if fresh is None:
        return
    left = config.stash.get(_LEFT, [])
    if left:
        terminalreporter.section("files left in the temporary directory", red=True)
        shown = left[:50]
        terminalreporter.line(f"{len(left)} left in {fresh} (a test or the code it runs does not clean up):")
        for name in shown:
            terminalreporter.line(f"  {name}")
    shutil.rmtree(fresh, ignore_errors=True)
