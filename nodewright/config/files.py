"""Read configuration files and directories. The config package's one I/O function.

`read_paths` expands directories (recursively, `*.yaml`, `*.yml` and `*.json`, as `kubectl apply
-f DIR` does, in sorted order so output is stable), reads every file and validates every
document; unreadable files are problems like any other, so one run reports everything that is wrong.
The path `-` is standard input (`kubectl get nodepools,ec2nodeclasses -o yaml | nodewright nodepool
apply -f -`), read once and named `<stdin>` in problems.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

from nodewright.config.documents import Loaded, combine
from nodewright.config.problems import Problem
from nodewright.config.stream import parse_yaml

SUFFIXES = (".yaml", ".yml", ".json")
STDIN = "-"


def expand(paths: Iterable[str | Path]) -> tuple[list[Path], list[Problem]]:
    """The files named by `paths` (directories expanded) and a problem for each missing path."""
    files: list[Path] = []
    problems: list[Problem] = []
    for raw in paths:
        path = Path(raw)
        if str(raw) == STDIN:
            continue  # read by read_paths
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in SUFFIXES)
            if not found:
                problems.append(Problem(str(path), "", "", "no *.yaml, *.yml or *.json files in this directory"))
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            problems.append(Problem(str(path), "", "", "no such file or directory"))
    return files, problems


def read_paths(paths: Iterable[str | Path]) -> Loaded:
    """Every document in the given files and directories, validated as one configuration."""
    paths = list(paths)
    files, problems = expand(paths)
    parts = [Loaded(problems=tuple(problems))]
    if any(str(raw) == STDIN for raw in paths):
        parts.append(parse_yaml(sys.stdin.read(), "<stdin>"))
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            parts.append(Loaded(problems=(Problem(str(path), "", "", f"cannot read: {error}"),)))
            continue
        parts.append(parse_yaml(text, str(path)))
    return combine(parts)
