"""Go-style durations ("720h", "1h30m", "30s", "Never") as used in Karpenter's v1 schema. Pure."""

from __future__ import annotations

import re
from types import MappingProxyType

from nodewright.model.errors import InvalidValue, shown

_UNITS = MappingProxyType({"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0})
# As Go's time.ParseDuration: "1.5h", ".5h" and "1.h" are all numbers of hours.
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


def parse_duration(value: str | int | float, *, allow_never: bool = True) -> float | None:
    """Seconds for a Go duration; None for "Never" (when allowed). Raises InvalidValue otherwise."""
    if isinstance(value, bool):
        raise InvalidValue(f"{shown(value)} is not a duration")
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value).strip()
    if text == "Never":
        if allow_never:
            return None
        raise InvalidValue('"Never" is not allowed here')
    if text == "0":
        return 0.0
    position, total = 0, 0.0
    for match in _PART.finditer(text):
        if match.start() != position:
            break
        total += float(match[1]) * _UNITS[match[2]]
        position = match.end()
    if position != len(text) or not text:
        raise InvalidValue(f"{shown(value)} is not a duration (expected e.g. 30s, 15m, 720h or Never)")
    return total


def format_duration(seconds: float | None) -> str:
    """The shortest Go-style form of a duration, or "Never"."""
    if seconds is None:
        return "Never"
    whole = int(seconds)
    if whole != seconds:
        return f"{seconds}s"
    if whole == 0:
        return "0s"
    out = ""
    for unit, size in (("h", 3600), ("m", 60), ("s", 1)):
        if whole >= size:
            out += f"{whole // size}{unit}"
            whole %= size
    return out
