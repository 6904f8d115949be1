"""Label and field selectors as the API emulator reads them from a request.

Role: turn a request's `labelSelector` and `fieldSelector` into `Requirement`s and match them
against an object's selectable values (`selectable`): its field labels (as `Resource.fields`
names them; a missing field reads as "", as kube-apiserver's field sets do) and its labels
(keyed `label/<key>`; a missing label is absent, so `!key` and `key notin (...)` match it).
Grammar: kube-apiserver's, `k=v`, `k==v`, `k!=v`, `k`, `!k`, `k in (a,b)`, `k notin (a,b)` for
labels; `=`, `==`, `!=` for fields. Anything else answers 400, as the API server does.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# A label key (optional DNS prefix) or value, as apimachinery's validation allows them.
_KEY = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
_SET = re.compile(r"^(\S+)\s+(in|notin)\s+\(([^()]*)\)$")
LABEL = "label/"


class SelectorError(ValueError):
    """A selector the API server would refuse (answered 400)."""


@dataclass(frozen=True, slots=True)
class Requirement:
    """One term: `key` (a field label, or `label/<key>`), an operator, its values."""

    key: str
    operator: str  # =, !=, in, notin, exists, !exists
    values: tuple[str, ...] = ()

    def matches(self, values: Mapping[str, str]) -> bool:
        """Whether an object whose selectable values are `values` satisfies this term."""
        value = values.get(self.key)
        if self.operator == "=":
            return value == self.values[0]
        if self.operator == "!=":
            return value != self.values[0]
        if self.operator == "in":
            return value in self.values
        if self.operator == "notin":
            return value not in self.values
        if self.operator == "exists":
            return value is not None
        return value is None


def field_requirements(text: str, supported: Sequence[str]) -> list[Requirement]:
    """A `fieldSelector` as terms; `supported` are the kind's field labels."""
    out = []
    for part in _split(text):
        operator = next((op for op in ("!=", "==", "=") if op in part), "")
        if not operator:
            raise SelectorError(f"invalid field selector: {part!r}")
        field, _, value = part.partition(operator)
        field = field.strip()
        if field not in supported:
            raise SelectorError(f"field label not supported: {field}")
        out.append(Requirement(field, "!=" if operator == "!=" else "=", (value.strip(),)))
    return out


def label_requirements(text: str) -> list[Requirement]:
    """A `labelSelector` as terms."""
    out = []
    for part in _split(text):
        matched = _SET.match(part)
        if matched:
            key, operator, listed = matched[1], matched[2], matched[3]
            values = tuple(v.strip() for v in listed.split(",") if v.strip())
            _check(key, values, part)
            out.append(Requirement(LABEL + key, operator, values))
            continue
        operator = next((op for op in ("!=", "==", "=") if op in part), "")
        if operator:
            key, _, value = (s.strip() for s in part.partition(operator))
            _check(key, (value,), part)
            out.append(Requirement(LABEL + key, "!=" if operator == "!=" else "=", (value,)))
        elif part.startswith("!"):
            _check(part[1:].strip(), (), part)
            out.append(Requirement(LABEL + part[1:].strip(), "!exists"))
        else:
            _check(part, (), part)
            out.append(Requirement(LABEL + part, "exists"))
    return out


def selectable(fields: Sequence[str], manifest: Mapping[str, Any]) -> dict[str, str]:
    """The values a selector compares for `manifest`: each field label's value ("" when missing;
    booleans as "true"/"false", `spec.unschedulable` false when unset) and each label.
    """
    out: dict[str, str] = {}
    for path in fields:
        value: Any = manifest
        for part in path.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif value is None:
            value = "false" if path == "spec.unschedulable" else ""
        out[path] = str(value)
    for key, value in ((manifest.get("metadata") or {}).get("labels") or {}).items():
        out[LABEL + str(key)] = str(value)
    return out


def _split(text: str) -> list[str]:
    """The comma-separated terms, commas inside parentheses kept."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        depth += {"(": 1, ")": -1}.get(char, 0)
        current.append(char)
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


def _check(key: str, values: tuple[str, ...], part: str) -> None:
    if not _KEY.match(key) or any(not _VALUE.match(v) for v in values):
        raise SelectorError(f"unable to parse requirement: {part!r}")
