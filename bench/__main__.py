"""`python -m bench [MODULE] [options]`: the benchmark entry point (`./dev bench` runs it).

Modules are the benchmark files next to this one that define `main(argv) -> int` (or `main()`
taking no options): `scheduling` (bench/scheduling.py) and, when present, `catalog`
(bench/catalog.py) and `provisioner_latency` (bench/provisioner_latency.py).

    python -m bench                      every module, one after the other
    python -m bench scheduling [--quick] [--json FILE] [...]
    python -m bench catalog [...]
    python -m bench provisioner_latency [--quick] [--pattern NAME] [--json FILE] [...]

With no module, the options go to every module and `--json FILE` is split per module
(FILE with `.scheduling`/`.catalog` before its suffix), so the modules do not overwrite each other.
The exit status is the highest any module returned.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import cast

MODULES = ("scheduling", "catalog", "provisioner_latency")


def available() -> list[str]:
    """The benchmark modules present in this checkout, in run order."""
    return [name for name in MODULES if importlib.util.find_spec(f"bench.{name}") is not None]


def _entry(name: str) -> Callable[[Sequence[str]], int]:
    module = importlib.import_module(f"bench.{name}")
    entry = module.main
    if inspect.signature(entry).parameters:
        return cast(Callable[[Sequence[str]], int], entry)
    # A module whose main() takes no arguments gets none (its options, if any, are its own).
    no_args = cast(Callable[[], int], entry)
    return lambda _argv: no_args()


def _split_path(value: str, name: str) -> str:
    path = Path(value)
    suffix = path.suffix or ".json"
    return str(path.with_name(f"{path.stem}.{name}{suffix}"))


def _per_module_json(argv: Sequence[str], name: str) -> list[str]:
    out = list(argv)
    for i, arg in enumerate(out):
        if arg == "--json" and i + 1 < len(out):
            out[i + 1] = _split_path(out[i + 1], name)
        elif arg.startswith("--json="):
            out[i] = "--json=" + _split_path(arg.partition("=")[2], name)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Dispatch to one benchmark module, or run them all; return the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    modules = available()
    if args and args[0] in ("-h", "--help"):
        print(__doc__)
        print("available modules: " + ", ".join(modules))
        return 0
    if args and not args[0].startswith("-"):
        name = args[0]
        if name not in modules:
            print(f"unknown benchmark {name!r}; available: {', '.join(modules)}", file=sys.stderr)
            return 2
        return _entry(name)(args[1:])
    status = 0
    for name in modules:
        print(f"== bench {name}", flush=True)
        status = max(status, _entry(name)(_per_module_json(args, name)))
    return status


if __name__ == "__main__":
    sys.exit(main())
