"""Crash points, as the crash harnesses (`bench.crash_points`, `bench.crash_consolidator`) name them.

Role: the vocabulary the crash-anywhere drivers share: a `Point` is the `ordinal`-th write of a run
and how the invocation dies there (`KILL`: before the write; `LOST`: after it, its answer lost),
and `singles(writes)` every single point of a run with `writes` writes.
"""

from __future__ import annotations

from dataclasses import dataclass

KILL, LOST = "kill", "lost"


@dataclass(frozen=True, slots=True)
class Point:
    """The `ordinal`-th write of the run (counted over every invocation), and how it dies."""

    ordinal: int
    mode: str

    def __str__(self) -> str:
        return f"{self.ordinal}:{self.mode}"


def singles(writes: int) -> list[tuple[Point, ...]]:
    """Every single crash point of a run with `writes` writes, both modes."""
    return [(Point(n, mode),) for n in range(1, writes + 1) for mode in (KILL, LOST)]
