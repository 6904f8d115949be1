r"""`kubectl get <custom resource> [-o wide]` as a table, from the CRD's additionalPrinterColumns.

Role: the CLI's (and the tests') way to show custom objects the way kubectl shows them: NAME,
then each printer column whose `priority` is 0 (all of them with `wide`), its `jsonPath`
evaluated on the object, AGE-like `date` columns as kubectl's short durations ("5m", "2d").
The JSONPath subset is what CRDs use: dotted fields with `\.` escapes (label keys) and one
filter `[?(@.field=="value")]` over a list; a path that finds nothing is an empty cell.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

_FILTER = re.compile(r'^\[\?\(@\.([A-Za-z0-9_]+)==["\']([^"\']*)["\']\)\]')


def printer_columns(crd: Mapping[str, Any], *, wide: bool = False) -> list[dict[str, Any]]:
    """The CRD's served version's printer columns kubectl shows (priority 0, or all when `wide`)."""
    (version,) = [v for v in crd["spec"]["versions"] if v.get("served")]
    return [c for c in version.get("additionalPrinterColumns") or () if wide or not c.get("priority")]


def get_table(
    crd: Mapping[str, Any], objects: Sequence[Mapping[str, Any]], *, now: float, wide: bool = False
) -> list[list[str]]:
    """Header row then one row per object, sorted by name, as `kubectl get` prints them."""
    columns = printer_columns(crd, wide=wide)
    rows = [["NAME", *(str(c["name"]).upper() for c in columns)]]
    for obj in sorted(objects, key=lambda o: str(o["metadata"]["name"])):
        cells = [str(obj["metadata"]["name"])]
        for column in columns:
            value = evaluate(obj, str(column["jsonPath"]))
            if column.get("type") == "date" and value:
                value = age(str(value), now)
            cells.append("" if value is None else str(value))
        rows.append(cells)
    return rows


def render(rows: Sequence[Sequence[str]]) -> str:
    """Rows as kubectl aligns them: columns padded to their widest cell, three spaces apart."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("   ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows)


def evaluate(obj: Mapping[str, Any], path: str) -> Any:
    """The value at a CRD printer column's `jsonPath` (see the module docstring), or None."""
    value: Any = obj
    rest = path
    while rest:
        if value is None:
            return None
        if rest.startswith("."):
            name, rest = _field(rest[1:])
            value = value.get(name) if isinstance(value, Mapping) else None
            continue
        match = _FILTER.match(rest)
        if match is None:
            raise ValueError(f"unsupported JSONPath {path!r} at {rest!r}")
        field, wanted = match.groups()
        rest = rest[match.end() :]
        found = [i for i in value or () if isinstance(i, Mapping) and str(i.get(field)) == wanted]
        value = found[0] if found else None
    return value


def age(timestamp: str, now: float) -> str:
    """kubectl's short age of an RFC 3339 time ("45s", "12m", "3h", "2d")."""
    then = datetime.strptime(timestamp[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC).timestamp()
    seconds = max(0, int(now - then))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= 2 * size or (unit == "m" and seconds >= 120):
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _field(text: str) -> tuple[str, str]:
    r"""The first field name of `text` (a `\.` is part of the name) and what follows it."""
    name = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            name.append(text[i + 1])
            i += 2
            continue
        if char in ".[":
            break
        name.append(char)
        i += 1
    return "".join(name), text[i:]
