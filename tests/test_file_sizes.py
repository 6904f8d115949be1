"""No module in `nodewright/` grows past MAX_LINES unless its docstring says why it must.

A newcomer reads a module to learn one concept; past a few hundred lines a file holds several, and
the large ones were split by concept (the solver, the simulator's world, the API emulator, the
provisioner, ...), each with a header naming which file does what. A module that is one concept
that cannot be cut cleanly may stay larger: its docstring then has a paragraph starting with
WHY_MARKER that says why.

A split that only cuts a class into files is no split: when a base class declares attributes
that its subclasses in other files set (`tests/architecture.py`, `SharedState`), the files of that
hierarchy hold one object, and they are measured together, as the sum of their lines (no reason
in a docstring excuses that: compose the object instead).

Real: every `.py` file under `nodewright/`, read from disk. Observed: its line count and module
docstring, and its classes (parsed with `ast`, not imported).
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.architecture import classes, hierarchies, load, shared_state

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


def split_objects(root: Path, package: str = "nodewright") -> list[str]:
    """Each group of files under `root/package` joined by a class hierarchy whose base declares
    attributes its subclasses set, whose lines together exceed MAX_LINES, with the sum.
    """
    pairs = [p for p in shared_state(classes(load(root), root)) if p.base_path.startswith(f"{package}/")]
    found = []
    for group in hierarchies(pairs):
        total = sum((root / f).read_text(encoding="utf-8").count("\n") for f in group)
        if total > MAX_LINES:
            found.append(f"{' + '.join(sorted(group))}: {total} lines")
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


def test_no_object_split_over_files_by_inheritance_is_over_the_limit() -> None:
    assert split_objects(ROOT) == [], (
        "these files hold one object (a base declaring what its subclasses set): compose it from "
        "parts that own their state, each in its own file, instead of cutting the class"
    )


def test_a_class_cut_into_files_is_measured_as_one(tmp_path: Path) -> None:
    # Two files under the limit each, one object together: the sum is over, and it is named.
    package = tmp_path / "nodewright"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    filler = "\n".join(f"X{i} = {i}" for i in range(MAX_LINES // 2 + 1)) + "\n"
    (package / "state.py").write_text("class State:\n    clock: int\n" + filler, encoding="utf-8")
    (package / "part.py").write_text(
        "from nodewright.state import State\n\nclass Part(State):\n    def tick(self) -> None:\n"
        "        self.clock = 1\n" + filler,
        encoding="utf-8",
    )
    (package / "composed.py").write_text(
        "from nodewright.state import State\n\nX = State()\n" + filler, encoding="utf-8"
    )
    assert oversized(package) == []
    assert split_objects(tmp_path) == [
        f"nodewright/part.py + nodewright/state.py: {2 * (MAX_LINES // 2 + 1) + 7} lines"
    ]
