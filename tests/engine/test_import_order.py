"""Each engine module imports on its own, first, in a fresh interpreter.

The engine's modules import one another (the disruption package judges moves with zone balance,
zone balance names the disruption input): a cycle that works only when one side happens to be
imported first breaks a caller that imports the other first (a bench, a tool, a test). Real: a new
Python process per module, importing only it. Observed: that the import succeeds.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ENGINE = Path(__file__).resolve().parents[2] / "nodewright" / "engine"
MODULES = sorted(p.stem for p in ENGINE.glob("*.py") if p.stem != "__init__")


@pytest.mark.parametrize("module", MODULES)
def test_an_engine_module_imports_first_in_a_fresh_interpreter(module: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", f"import nodewright.engine.{module}"],
        capture_output=True,
        text=True,
        check=False,
        cwd=ENGINE.parents[1],
    )
    assert done.returncode == 0, done.stderr.strip().splitlines()[-1:]
