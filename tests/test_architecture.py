"""Compose, don't inherit: each object owns its state, and no module reaches into another's private names.

A newcomer changing one object should read one file. Two shapes defeat that and are refused here,
over every project file (`tests/architecture.py` says how they are found, with `ast`, not imports):

* a class declaring attributes that a subclass in another file sets: the object's state is then
  owned by several files (a mixin split), so a reader of either cannot tell who changes it;
* an import or attribute access of another module's `_private` name: the underscore says "not an
  interface", and a caller that ignores it freezes the internals it reaches.

There is no exception list: a finding is fixed, not listed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.architecture import (
    ClassInfo,
    Module,
    PrivateReach,
    SharedState,
    classes,
    hierarchies,
    load,
    private_reaches,
    shared_state,
)


@pytest.fixture(scope="module")
def modules() -> dict[str, Module]:
    return load()


@pytest.fixture(scope="module")
def found_classes(modules: dict[str, Module]) -> dict[str, ClassInfo]:
    return classes(modules)


def test_no_class_declares_state_that_a_subclass_in_another_file_sets(found_classes: dict[str, ClassInfo]) -> None:
    pairs = shared_state(found_classes)
    assert pairs == [], (
        "compose instead: the subclass's part becomes an object of its own that owns these attributes "
        "and takes its collaborators in its constructor:\n"
        + "\n".join(f"  {p.subclass_path} sets {', '.join(p.attributes)} of {p.base} ({p.base_path})" for p in pairs)
    )


def test_no_module_takes_another_modules_private_name(modules: dict[str, Module]) -> None:
    reaches = private_reaches(modules)
    assert reaches == [], (
        "make the name public (it is an interface now: name it and document it) or move the code that "
        "needs it next to it:\n" + "\n".join(f"  {r.path}:{r.line}: {r.target}.{r.name}" for r in reaches)
    )


# -- the checks themselves, on throwaway code -----------------------------------------------------


def _write(root: Path, files: dict[str, str]) -> dict[str, Module]:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return load(root)


def test_a_mixin_split_is_found_through_the_chain_and_a_composed_object_is_not(tmp_path: Path) -> None:
    modules = _write(
        tmp_path,
        {
            "nodewright/__init__.py": "",
            "nodewright/state.py": "class State:\n    clock: int\n    queue: list[int]\n",
            "nodewright/middle.py": "from nodewright.state import State\n\nclass Middle(State):\n    pass\n",
            "nodewright/world.py": (
                "from nodewright import middle\n\n"
                "class World(middle.Middle):\n"
                "    def __init__(self) -> None:\n"
                "        self.clock, self.mine = 0, 1\n"
                "        self.queue += [1]\n"
            ),
            # Composition: a part held, not inherited; and a subclass setting only its own state.
            "nodewright/composed.py": (
                "from nodewright.state import State\n\n"
                "class Own(State):\n"
                "    def __init__(self) -> None:\n"
                "        self.other = 1\n\n"
                "class Holder:\n"
                "    def __init__(self) -> None:\n"
                "        self.state = State()\n"
            ),
            "nodewright/same.py": "class A:\n    x: int\n\nclass B(A):\n    def f(self) -> None:\n        self.x = 1\n",
        },
    )
    pairs = shared_state(
        classes(modules, tmp_path),
    )
    assert [(p.key, p.attributes) for p in pairs] == [
        ("nodewright.state.State <- nodewright.world.World", ("clock", "queue")),
    ]
    assert hierarchies(pairs) == [{"nodewright/state.py", "nodewright/world.py"}]


def test_every_way_of_taking_a_private_name_is_found_and_public_ones_are_not(tmp_path: Path) -> None:
    modules = _write(
        tmp_path,
        {
            "nodewright/__init__.py": "",
            "nodewright/a.py": "_hidden = 1\nshown = 2\n__version__ = '1'\n",
            "nodewright/b.py": (
                "import os\n"
                "import nodewright.a\n"
                "import nodewright.a as alias\n"
                "from nodewright import a\n"
                "from nodewright.a import _hidden, shown, __version__\n\n"
                "x = a._hidden + alias._hidden + nodewright.a._hidden + a.shown\n"
                "y = getattr(a, '_hidden')\n"
                "z = os._exit\n"
                "obj = object()\n"
                "w = obj._anything if False else None\n"
            ),
            "nodewright/c.py": "_own = 1\nv = _own\n",
        },
    )
    assert [(r.line, r.key) for r in private_reaches(modules, tmp_path)] == [
        (5, "nodewright.b -> nodewright.a._hidden"),
        (7, "nodewright.b -> nodewright.a._hidden"),
        (7, "nodewright.b -> nodewright.a._hidden"),
        (7, "nodewright.b -> nodewright.a._hidden"),
        (8, "nodewright.b -> nodewright.a._hidden"),
    ]


def test_the_keys_name_both_sides() -> None:
    assert SharedState("m.A", "m.py", "n.B", "n.py", ("x",)).key == "m.A <- n.B"
    assert PrivateReach("n", "m", "_x", "n.py", 1).key == "n -> m._x"
