"""Validation problems and the collector that gathers them. Pure.

Role: validation never stops at the first mistake. Each parser walks a document with an `At`
cursor (the field path so far plus a shared sink) and reports every problem it sees; the caller
turns the sink into `Problem`s that name the file, the line, the document and the field path:

    nodepools.yaml:14: NodePool/default: spec.template.spec.requirements[2].operator: "Greater" is not one of ...

Warnings go to a second sink: what `kubectl apply` would only warn about (an unknown field, which
the API server drops) and fields Nodewright accepts but does not act on. They never make a
document invalid; `--strict` turns them into problems (`Loaded.strict`):

    nodepools.yaml:21: warning: NodePool/default: spec.template.spec.terminationGracePeirod: unknown field, ...

A path is kept as segments (field names, map keys and list indexes) so that the YAML layer can
look up the line of the deepest segment it knows.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

Segment = str | int
SegmentPath = tuple[Segment, ...]

_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Characters of a value, or of a map key, that a message shows: a 100 kB string is named, not echoed.
SHOWN = 200
SHOWN_KEY = 100


def format_path(segments: SegmentPath) -> str:
    """`("spec", "requirements", 2, "operator")` -> `spec.requirements[2].operator`.

    Map keys that are not plain identifiers (label keys, tag keys) are quoted:
    `metadata.annotations["nodewright.io/rebalance-policy"]`.
    """
    out = ""
    for segment in segments:
        if isinstance(segment, int):
            out += f"[{segment}]"
        elif _PLAIN.match(segment):
            out += f".{segment}" if out else segment
        else:
            out += f"[{clip(json.dumps(segment), SHOWN_KEY)}]"
    return out


def clip(text: str, limit: int = SHOWN) -> str:
    """`text`, cut to `limit` characters (the last one an ellipsis) when longer."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def show(value: Any) -> str:
    """A value as it appears in messages: JSON form, so strings are double-quoted; at most SHOWN
    characters, and something readable for what JSON cannot print (an integer too long to write
    in decimal, a structure nested too deep).
    """
    try:
        text = json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError, RecursionError):
        text = _described(value)
    return clip(text, SHOWN)


def _described(value: Any) -> str:
    if isinstance(value, int):  # Python refuses to write ints of more than 4300 digits in decimal
        return f"an integer of {value.bit_length():,} bits"
    try:
        return repr(value)
    except (ValueError, RecursionError):
        return f"a {type(value).__name__}"


@dataclass(frozen=True, slots=True)
class At:
    """A cursor: where in a document we are, and the sinks every problem and warning found there go to.

    `unknown` collects the paths of unknown fields, which the document's stored form leaves out
    (as the API server prunes them).
    """

    sink: list[tuple[SegmentPath, str]]
    segments: SegmentPath = ()
    warnings: list[tuple[SegmentPath, str]] = field(default_factory=list)
    unknown: list[SegmentPath] = field(default_factory=list)

    @classmethod
    def root(cls) -> At:
        """A cursor at the top of a new document with an empty sink."""
        return cls([])

    def __truediv__(self, segment: Segment) -> At:
        """The cursor one level down: `at / "spec" / "requirements" / 2`."""
        return At(self.sink, (*self.segments, segment), self.warnings, self.unknown)

    @property
    def path(self) -> str:
        """The dotted field path of this cursor."""
        return format_path(self.segments)

    def error(self, message: str) -> None:
        """Report a problem at this path."""
        self.sink.append((self.segments, message))

    def warn(self, message: str) -> None:
        """Report a warning at this path: worth saying, but the document stays valid."""
        self.warnings.append((self.segments, message))

    def drop(self, message: str) -> None:
        """Warn that the field at this path is unknown and is left out of the document."""
        self.warn(message)
        self.unknown.append(self.segments)

    def mark(self) -> int:
        """A bookmark in the sink, for `failed_since`."""
        return len(self.sink)

    def failed_since(self, mark: int = 0) -> bool:
        """True when anything was reported (by any cursor on this sink) after `mark`."""
        return len(self.sink) > mark


@dataclass(frozen=True, slots=True)
class Problem:
    """One validation problem (or warning): which file (and line), which document, which field, what rule."""

    source: str
    document: str
    path: str
    message: str
    line: int | None = None
    warning: bool = False

    @property
    def detail(self) -> str:
        """The problem without its file: `NodePool/default: spec.weight: must be at most 100`."""
        parts = [p for p in (self.document, self.path) if p]
        return ": ".join([*parts, self.message])

    @property
    def location(self) -> str:
        """`file.yaml:14`, or just the source when no line is known."""
        return f"{self.source}:{self.line}" if self.line is not None else self.source

    def __str__(self) -> str:
        return f"{self.location}: {'warning: ' if self.warning else ''}{self.detail}"


class ConfigError(ValueError):
    """Raised when a set of documents has problems; carries every one of them."""

    def __init__(self, problems: tuple[Problem, ...] | list[Problem]) -> None:
        self.problems = tuple(problems)
        count = len(self.problems)
        header = f"{count} problem{'s' if count != 1 else ''} in configuration"
        super().__init__("\n".join([header, *(f"  {p}" for p in self.problems)]))
