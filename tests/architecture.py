"""The code base read as a newcomer reads it: which class's state is set where, and who reaches for private names.

Role: the static analysis behind `tests/test_architecture.py` and `tests/test_file_sizes.py`. Every
`.py` file of the project (`nodewright`, `functions`, `infra`, `bench`, `scripts`, `tests`, `app.py`)
is parsed with `ast`, never imported, so the checks take a second and see code that would not
import.

Two findings:

* `SharedState`: a class that declares attributes (class-body annotations or assignments, or
  `self.x = ...` in its own methods) which a subclass in another file sets (`self.x = ...`, `+=`,
  or a class-body assignment). One object's state is then owned by several files: a reader of
  either cannot tell who changes it. Bases are followed through imports and through the chain of
  ancestors, so a mixin three levels up counts.
* `PrivateReach`: a module taking another module's `_private` name, by `from x import _y` or by
  attribute access `x._y` on a name bound to an imported project module (`import a.b as x`,
  `from a import b` where `a/b.py` exists), or by reflection (`getattr(x, "_y")`,
  `monkeypatch.setattr(x, "_y", ...)`). Dunder names (`__version__`) are public. Names of
  modules outside the project (the standard library, third parties) are their owners' business.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("nodewright", "functions", "infra", "bench", "scripts", "tests")
SINGLE_FILES = ("app.py",)


def is_private(name: str) -> bool:
    """`_x` is private; `__x__` (dunder) and `_` alone are not."""
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__")) and name != "_"


@dataclass(frozen=True, slots=True)
class PrivateReach:
    """`module` (at `path:line`) takes `target`'s private name `name`."""

    module: str
    target: str
    name: str
    path: str
    line: int

    @property
    def key(self) -> str:
        return f"{self.module} -> {self.target}.{self.name}"


@dataclass(frozen=True, slots=True)
class SharedState:
    """`base` (in `base_path`) declares `attributes` that its subclass `subclass` (in `subclass_path`) sets."""

    base: str
    base_path: str
    subclass: str
    subclass_path: str
    attributes: tuple[str, ...]

    @property
    def key(self) -> str:
        return f"{self.base} <- {self.subclass}"


@dataclass
class ClassInfo:
    qualname: str
    path: str
    bases: list[str] = field(default_factory=list)
    declared: set[str] = field(default_factory=set)
    sets: set[str] = field(default_factory=set)


@dataclass
class Module:
    name: str
    path: Path
    tree: ast.Module
    # local name -> qualified name it is bound to by an import
    imports: dict[str, str] = field(default_factory=dict)


def project_files(root: Path = ROOT) -> list[Path]:
    """Every project `.py` file under `root` (the packages and the single files)."""
    files = [p for package in PACKAGES if (root / package).is_dir() for p in sorted((root / package).rglob("*.py"))]
    files += [root / f for f in SINGLE_FILES if (root / f).is_file()]
    return [f for f in files if ".venv" not in f.parts and "cdk.out" not in f.parts]


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def load(root: Path = ROOT) -> dict[str, Module]:
    """Parse every project file under `root`: module name -> its tree and import bindings."""
    modules: dict[str, Module] = {}
    for path in project_files(root):
        name = module_name(path, root)
        module = Module(name, path, ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        module.imports[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        module.imports[top] = top
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    if alias.name != "*":
                        module.imports[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        modules[name] = module
    return modules


def _roots(modules: dict[str, Module]) -> set[str]:
    return {name.split(".")[0] for name in modules}


def _is_module(qualified: str, modules: dict[str, Module]) -> bool:
    return qualified in modules


def private_reaches(modules: dict[str, Module], root: Path = ROOT) -> list[PrivateReach]:
    """Every import or attribute access of another project module's `_private` name."""
    roots = _roots(modules)
    found: list[PrivateReach] = []
    for module in modules.values():
        rel = str(module.path.relative_to(root))
        for node in ast.walk(module.tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                if node.module.split(".")[0] not in roots or node.module == module.name:
                    continue
                for alias in node.names:
                    if is_private(alias.name):
                        found.append(PrivateReach(module.name, node.module, alias.name, rel, node.lineno))
            elif isinstance(node, ast.Attribute) and is_private(node.attr):
                target = _module_of(node.value, module, modules)
                if target is not None and target != module.name:
                    found.append(PrivateReach(module.name, target, node.attr, rel, node.lineno))
            elif isinstance(node, ast.Call) and _reflective(node.func) and len(node.args) >= 2:
                name = node.args[1]
                if isinstance(name, ast.Constant) and isinstance(name.value, str) and is_private(name.value):
                    target = _module_of(node.args[0], module, modules)
                    if target is not None and target != module.name:
                        found.append(PrivateReach(module.name, target, name.value, rel, node.lineno))
    return sorted(found, key=lambda r: (r.path, r.line, r.name))


def _reflective(func: ast.expr) -> bool:
    """`getattr`/`setattr`/`delattr`, or a `.setattr`/`.delattr` method (pytest's monkeypatch)."""
    if isinstance(func, ast.Name):
        return func.id in ("getattr", "setattr", "delattr")
    return isinstance(func, ast.Attribute) and func.attr in ("setattr", "delattr")


def _module_of(expr: ast.expr, module: Module, modules: dict[str, Module]) -> str | None:
    """The project module `expr` names (`x`, `a.b` through the module's imports), or None."""
    chain: list[str] = []
    while isinstance(expr, ast.Attribute):
        chain.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name) or expr.id not in module.imports:
        return None
    qualified = module.imports[expr.id]
    for part in reversed(chain):
        qualified = f"{qualified}.{part}"
    return qualified if _is_module(qualified, modules) else None


def classes(modules: dict[str, Module], root: Path = ROOT) -> dict[str, ClassInfo]:
    """Every top-level class: qualified name -> its resolved bases, declared and set attributes."""
    found: dict[str, ClassInfo] = {}
    for module in modules.values():
        local = {n.name for n in module.tree.body if isinstance(n, ast.ClassDef)}
        for node in module.tree.body:
            if not isinstance(node, ast.ClassDef):
                continue
            info = ClassInfo(f"{module.name}.{node.name}", str(module.path.relative_to(root)))
            for base in node.bases:
                resolved = _base_name(base, module, local)
                if resolved is not None:
                    info.bases.append(resolved)
            body_names = set(_class_body_names(node))
            self_sets = set(_self_assignments(node))
            info.declared = body_names | self_sets
            info.sets = body_names | self_sets
            found[info.qualname] = info
    return found


def _base_name(base: ast.expr, module: Module, local: set[str]) -> str | None:
    if isinstance(base, ast.Subscript):  # Generic[T], Base[int]
        base = base.value
    if isinstance(base, ast.Name):
        if base.id in local:
            return f"{module.name}.{base.id}"
        return module.imports.get(base.id)
    if isinstance(base, ast.Attribute):
        chain: list[str] = []
        expr: ast.expr = base
        while isinstance(expr, ast.Attribute):
            chain.append(expr.attr)
            expr = expr.value
        if isinstance(expr, ast.Name) and expr.id in module.imports:
            return ".".join([module.imports[expr.id], *reversed(chain)])
    return None


def _class_body_names(node: ast.ClassDef) -> Iterator[str]:
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            yield stmt.target.id
        elif isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                yield from _names(target)
        elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
            yield stmt.target.id


def _names(target: ast.expr) -> Iterator[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _names(element)


def _self_assignments(node: ast.ClassDef) -> Iterator[str]:
    """Names `x` of every `self.x = ...` (also annotated, augmented, unpacked) in the class's methods."""
    for stmt in node.body:
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) or not stmt.args.args:
            continue
        me = stmt.args.args[0].arg
        for inner in ast.walk(stmt):
            targets: list[ast.expr] = []
            if isinstance(inner, ast.Assign):
                targets = list(inner.targets)
            elif isinstance(inner, (ast.AnnAssign, ast.AugAssign)):
                targets = [inner.target]
            for target in targets:
                yield from _self_attrs(target, me)


def _self_attrs(target: ast.expr, me: str) -> Iterator[str]:
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == me:
        yield target.attr
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _self_attrs(element, me)


def shared_state(found: dict[str, ClassInfo]) -> list[SharedState]:
    """Every (ancestor, subclass) pair in different files where the subclass sets what the ancestor declares."""

    @cache
    def ancestors(qualname: str) -> tuple[str, ...]:
        seen: list[str] = []
        for base in found[qualname].bases:
            if base in found and base not in seen:
                seen.append(base)
                seen.extend(a for a in ancestors(base) if a not in seen)
        return tuple(seen)

    out: list[SharedState] = []
    for sub in found.values():
        for name in ancestors(sub.qualname):
            base = found[name]
            if base.path == sub.path:
                continue
            shared = sorted(base.declared & sub.sets - {"__slots__", "__doc__", "model_config"})
            if shared:
                out.append(SharedState(base.qualname, base.path, sub.qualname, sub.path, tuple(shared)))
    return sorted(out, key=lambda s: (s.base, s.subclass))


def hierarchies(pairs: list[SharedState]) -> list[set[str]]:
    """Files joined by shared state, as connected groups: each group is one object split over files."""
    groups: list[set[str]] = []
    for pair in pairs:
        joined = {pair.base_path, pair.subclass_path}
        touching = [g for g in groups if g & joined]
        for g in touching:
            groups.remove(g)
            joined |= g
        groups.append(joined)
    return sorted(groups, key=sorted)
