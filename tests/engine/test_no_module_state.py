"""The engine and the model hold no state between calls: nothing a call leaves behind can change the
next call's cost or result, except what its caller passes in (a `SolverCache`, a `DisruptionCache`,
a `RequestsMemo`).

Faked: nothing. Observed: every module under `nodewright/engine` and `nodewright/model`, imported
for real. Each module-level name and each class attribute must be immutable: numbers, strings,
None, tuples and frozensets of such, read-only mappings (`MappingProxyType`) of such, the model's
immutable values (`Resources`, `Requirements`), frozen dataclass instances of such (a field the
dataclass declares as a read-only `Mapping` may hold a dict: nothing writes through it, mypy sees
to that), type aliases. No function may be wrapped in `functools.cache`/`lru_cache` (a
process-wide memo); no module may say `global` (rebinding a module name at run time) or import
`threading` (a lock only guards shared state).
"""

from __future__ import annotations
import __future__

import ast
import dataclasses
import datetime
import enum
import fractions
import importlib
import pkgutil
import re
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import nodewright.engine
import nodewright.model
import nodewright.reference
from nodewright.model.requirements import Requirements
from nodewright.model.resources import Resources

ROOT = Path(__file__).resolve().parents[2]
# The references (Karpenter, Auto Mode) are held to the engine's rule too.
PACKAGES = (nodewright.engine, nodewright.model, nodewright.reference)
_ATOMS = (
    int,
    float,
    complex,
    str,
    bytes,
    bool,
    type(None),
    range,
    fractions.Fraction,
    re.Pattern,
    enum.Enum,
    datetime.date,
    datetime.time,
    datetime.timedelta,
    datetime.tzinfo,
    __future__._Feature,
    types.FunctionType,  # a reference to code (in a table of parsers or methods), not state
    Resources,
    Requirements,
)
# What Python itself keeps on every abstract class (its subclass registry).
_PYTHON_OWN = frozenset({"_abc_impl"})
_MEMO_DECORATORS = frozenset({"cache", "lru_cache", "cached_property"})
# Known exceptions, each with why it stands and what removes it.
_EXCEPTIONS: frozenset[str] = frozenset()


def _modules() -> Iterator[types.ModuleType]:
    for package in PACKAGES:
        yield package
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            yield importlib.import_module(info.name)


MODULES = sorted(_modules(), key=lambda m: m.__name__)


def _immutable(value: object, depth: int = 0) -> bool:
    if depth > 20:
        return False
    if isinstance(value, _ATOMS):
        return True
    if isinstance(value, tuple | frozenset):
        return all(_immutable(v, depth + 1) for v in value)
    if isinstance(value, types.MappingProxyType):
        return all(_immutable(k, depth + 1) and _immutable(v, depth + 1) for k, v in value.items())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        params = getattr(type(value), "__dataclass_params__", None)
        return bool(params and params.frozen) and all(
            _immutable(_read_only(getattr(value, f.name), f), depth + 1) for f in dataclasses.fields(value)
        )
    # Type aliases and type variables (`Option = tuple[...]`, `_K = TypeVar("_K")`): no state.
    return isinstance(value, type | types.GenericAlias | types.UnionType | typing.TypeVar) or (
        type(value).__module__ == "typing"
    )


def _read_only(value: object, f: dataclasses.Field[Any]) -> object:
    """A dict in a field declared `Mapping[...]`, seen as the read-only mapping it is declared as."""
    declared = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", "")
    if isinstance(value, dict) and declared.startswith("Mapping"):
        return types.MappingProxyType(value)
    return value


def _own(module: types.ModuleType, value: object) -> bool:
    """True for what the module defines (what it imports is checked in its own module)."""
    return getattr(value, "__module__", module.__name__) == module.__name__


def _problems(module: types.ModuleType) -> list[str]:
    out = []
    for name, value in vars(module).items():
        if name.startswith("__") or isinstance(value, types.ModuleType):
            continue
        if isinstance(value, type):
            if not _own(module, value):
                continue
            for attr, member in vars(value).items():
                if attr.startswith("__") or attr in _PYTHON_OWN or callable(member):
                    continue
                if isinstance(member, property | staticmethod | classmethod):
                    continue
                if type(member).__name__ in {"member_descriptor", "getset_descriptor"}:
                    continue  # __slots__ fields: instance state, not class state
                if not _immutable(member):
                    out.append(f"{module.__name__}.{name}.{attr} = {type(member).__name__} (mutable class state)")
            continue
        if callable(value):
            if hasattr(value, "cache_info") or hasattr(value, "cache_clear"):
                out.append(f"{module.__name__}.{name} is a process-wide memo (functools cache)")
            continue
        if not _immutable(value) and f"{module.__name__}.{name}" not in _EXCEPTIONS:
            out.append(f"{module.__name__}.{name} = {type(value).__name__} (mutable module state)")
    return out


def _source_problems(module: types.ModuleType) -> list[str]:
    path = Path(module.__file__ or "")
    where = path.relative_to(ROOT)
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Global):
            out.append(f"{where}:{node.lineno}: `global {', '.join(node.names)}`")
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for d in node.decorator_list:
                target = d.func if isinstance(d, ast.Call) else d
                name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
                if name in _MEMO_DECORATORS:
                    out.append(f"{where}:{node.lineno}: `{node.name}` is memoised with @{name}")
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names]
            if isinstance(node, ast.ImportFrom) and node.module:
                names.append(node.module)
            if any(n.split(".")[0] in {"threading", "multiprocessing"} for n in names):
                out.append(f"{where}:{node.lineno}: imports threading or multiprocessing (locks guard shared state)")
    return out


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_no_engine_or_model_module_holds_mutable_state(module: types.ModuleType) -> None:
    problems = _problems(module) + _source_problems(module)
    assert not problems, "\n".join(problems)


def test_the_rule_sees_each_kind_of_state_it_forbids() -> None:
    fake = types.ModuleType("nodewright.engine.fake")
    # A module built here, to show the rule catches each kind of state.
    exec(
        "import functools, types\n"
        "MEMO = {}\n"
        "SEEN = []\n"
        "OK = types.MappingProxyType({'a': (1, 2)})\n"
        "NOT_OK = types.MappingProxyType({'a': [1, 2]})\n"
        "class Holder:\n"
        "    shared = {}\n"
        "    LIMIT = 4\n"
        "@functools.lru_cache\n"
        "def slow(x):\n"
        "    return x\n",
        fake.__dict__,
    )
    found = _problems(fake)
    assert any(".MEMO = dict" in p for p in found)
    assert any(".SEEN = list" in p for p in found)
    assert any(".NOT_OK = mappingproxy" in p for p in found)
    assert any("Holder.shared = dict" in p for p in found)
    assert any(".slow is a process-wide memo" in p for p in found)
    assert not any(".OK " in p or "LIMIT" in p for p in found)


def test_every_engine_and_model_file_is_checked() -> None:
    files = {p for pkg in ("engine", "model", "reference") for p in (ROOT / "nodewright" / pkg).rglob("*.py")}
    assert files == {Path(m.__file__ or "") for m in MODULES}
