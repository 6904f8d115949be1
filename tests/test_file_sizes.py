"""No module in `nodewright/` grows past MAX_LINES unless its docstring says why it must.

A newcomer reads a module to learn one concept; past a few hundred lines a file holds several, and
the large ones were split by concept (the solver, the simulator's world, the API emulator, the
provisioner, ...), each with a header naming which file does what. A module that is one concept
that cannot be cut cleanly may stay larger: its docstring then has a paragraph starting with
WHY_MARKER that says why.

Real: every `.py` file under `nodewright/`, read from disk. Observed: its line count and module
docstring (parsed with `ast`, not imported).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 600
WHY_MARKER = "Why one file"


def oversized(package: Path) -> list[str]:
    """Each module under `package` over MAX_LINES whose docstring has no WHY_MARKER paragraph, with its size."""
    found = []
    for path in sorted(package.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        lines = text.count("\n")
        if lines <= MAX_LINES:
            continue
        docstring = ast.get_docstring(ast.parse(text)) or ""
        if not any(paragraph.lstrip().startswith(WHY_MARKER) for paragraph in docstring.split("\n\n")):
            found.append(f"{path.relative_to(package.parent)}: {lines} lines")
    return found


def test_no_module_is_over_the_limit_without_a_reason_in_its_docstring() -> None:
    assert oversized(ROOT / "nodewright") == [], (
        f"split these by concept (one module each, a header saying which file does what), or add a "
        f"docstring paragraph starting {WHY_MARKER!r} saying why the file must stay whole"
    )


def test_the_check_finds_an_oversized_module_and_accepts_a_stated_reason(tmp_path: Path) -> None:
    # The rule itself, on throwaway modules of the same size: only the one without a reason is named.
    package = tmp_path / "pkg"
    package.mkdir()
    body = "\n".join(f"X{i} = {i}" for i in range(MAX_LINES + 1)) + "\n"
    (package / "bare.py").write_text('"""A module."""\n' + body, encoding="utf-8")
    (package / "reasoned.py").write_text(f'"""A module.\n\n{WHY_MARKER}: one table.\n"""\n' + body, encoding="utf-8")
    (package / "small.py").write_text('"""A module."""\nX = 1\n', encoding="utf-8")
    assert oversized(package) == [f"pkg/bare.py: {MAX_LINES + 2} lines"]
