"""Typed readers for the JSON-like values YAML and the Kubernetes API give us. Pure.

Each reader takes a cursor and a raw value, reports what is wrong at the cursor's path and
returns the value in the expected type, or None when it is absent or wrong. Absent (missing or
YAML `null`) is never an error here; callers use `required` for that.

Unknown fields, two rules: in a Kubernetes object (`kube_obj`, `kube_item`: NodePools,
EC2NodeClasses, their envelopes) a field the schema does not name is a warning and is dropped,
as `kubectl apply` with strict field validation `Warn` and the API server's pruning treat it; in
Nodewright's own formats (`obj`, `item`: scenarios) it is an error. Either way a near miss is
named ("did you mean ...").
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Collection, Mapping
from datetime import datetime
from typing import Any, TypeVar

from nodewright.config.problems import At, show
from nodewright.model.duration import parse_duration
from nodewright.model.errors import InvalidValue
from nodewright.model.quantity import to_amount

T = TypeVar("T")

# Kubernetes name rules (apimachinery validation).
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

_TYPE_NAMES = {
    str: "a string",
    bool: "a boolean",
    int: "an integer",
    float: "a number",
    dict: "an object",
    list: "a list",
}


def _kind_of(value: Any) -> str:
    for python_type, name in ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string")):
        if isinstance(value, python_type):
            return name
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list):
        return "list"
    return type(value).__name__


def wrong_type(at: At, expected: type, value: Any) -> None:
    """Report that `value` is not of the expected JSON type."""
    at.error(f"must be {_TYPE_NAMES.get(expected, expected.__name__)}, got {_kind_of(value)} {show(value)}")


def closest(name: str, known: Collection[str]) -> str | None:
    """The known field `name` is most likely a typo of (case-insensitive), or None when none is close."""
    by_lower = {k.lower(): k for k in known}
    if name.lower() in by_lower:
        return by_lower[name.lower()]
    found = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=0.75)
    return by_lower[found[0]] if found else None


def _unknown_reason(key: str, fields: Collection[str], hints: Mapping[str, str] | None) -> str:
    hint = (hints or {}).get(key)
    if hint:
        return hint
    near = closest(key, fields)
    if near is not None:
        return f"did you mean {show(near)}?"
    return f"expected one of {', '.join(sorted(fields))}"


def _checked(
    at: At, value: Any, fields: Collection[str], hints: Mapping[str, str] | None, *, warn: bool
) -> Mapping[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        wrong_type(at, dict, value)
        return None
    for key in value:
        if not isinstance(key, str):  # YAML allows `1:` or `yes:` as keys; JSON and Kubernetes do not
            (at / str(key)).error(f"field names must be strings, got {_kind_of(key)} {show(key)}")
        elif key not in fields:
            reason = _unknown_reason(str(key), fields, hints)
            if warn:
                (at / str(key)).drop(f"unknown field, ignored ({reason})")
            else:
                (at / str(key)).error(f"unknown field ({reason})")
    return value


def obj(
    at: At,
    value: Any,
    fields: Collection[str],
    *,
    hints: Mapping[str, str] | None = None,
) -> Mapping[str, Any] | None:
    """An object of one of Nodewright's own formats: an unknown field is an error (with a hint if given)."""
    return _checked(at, value, fields, hints, warn=False)


def item(at: At, value: Any, fields: Collection[str]) -> Mapping[str, Any] | None:
    """A list item that must be an object with only the named fields (null is an error here)."""
    if value is None:
        at.error("must be an object, got null")
        return None
    return obj(at, value, fields)


def kube_obj(
    at: At,
    value: Any,
    fields: Collection[str],
    *,
    hints: Mapping[str, str] | None = None,
) -> Mapping[str, Any] | None:
    """An object of a Kubernetes resource: an unknown field is a warning and is dropped."""
    return _checked(at, value, fields, hints, warn=True)


def kube_item(at: At, value: Any, fields: Collection[str]) -> Mapping[str, Any] | None:
    """A list item of a Kubernetes resource: an object (null is an error); unknown fields warn."""
    if value is None:
        at.error("must be an object, got null")
        return None
    return kube_obj(at, value, fields)


def required(at: At, value: Mapping[str, Any] | None, name: str) -> Any:
    """The field `name` of an object, reporting it missing (None) when absent or null."""
    if value is None:
        return None
    found = value.get(name)
    if found is None:
        (at / name).error("is required")
    return found


def string(
    at: At,
    value: Any,
    *,
    enum: Collection[str] | None = None,
    pattern: re.Pattern[str] | None = None,
    rule: str = "",
    non_empty: bool = False,
    max_length: int | None = None,
) -> str | None:
    """A string, optionally one of `enum`, matching `pattern` (described by `rule`), non-empty."""
    if value is None:
        return None
    if not isinstance(value, str):
        wrong_type(at, str, value)
        return None
    if enum is not None and value not in enum:
        at.error(f"{show(value)} is not one of {', '.join(enum)}")
        return None
    if non_empty and not value:
        at.error("must not be empty")
        return None
    if max_length is not None and len(value) > max_length:
        at.error(f"must be at most {max_length} characters long, got {len(value)}")
        return None
    if pattern is not None and not pattern.match(value):
        at.error(f"{show(value)} {rule or f'does not match {pattern.pattern}'}")
        return None
    return value


def integer(at: At, value: Any, *, minimum: int | None = None, maximum: int | None = None) -> int | None:
    """An integer within [minimum, maximum]."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        wrong_type(at, int, value)
        return None
    if minimum is not None and value < minimum:
        at.error(f"must be at least {minimum}, got {value}")
        return None
    if maximum is not None and value > maximum:
        at.error(f"must be at most {maximum}, got {value}")
        return None
    return value


def boolean(at: At, value: Any) -> bool | None:
    """A boolean (true/false; YAML's yes/no are booleans too under YAML 1.1)."""
    if value is None:
        return None
    if not isinstance(value, bool):
        wrong_type(at, bool, value)
        return None
    return value


def array(at: At, value: Any, *, max_items: int | None = None, min_items: int = 0) -> list[Any] | None:
    """A list with a bounded number of items."""
    if value is None:
        return None
    if not isinstance(value, list):
        wrong_type(at, list, value)
        return None
    if len(value) < min_items:
        at.error(f"must have at least {min_items} item{'s' if min_items != 1 else ''}")
    if max_items is not None and len(value) > max_items:
        at.error(f"must have at most {max_items} items, got {len(value)}")
    return value


def items(at: At, value: Any, read: Callable[[At, Any], T | None], **bounds: int) -> tuple[T, ...] | None:
    """Each item of a list read with `read`; None when the list is absent or any item is bad."""
    raw = array(at, value, **bounds)
    if raw is None:
        return None
    out: list[T] = []
    ok = True
    for index, item in enumerate(raw):
        parsed = read(at / index, item)
        if parsed is None:
            ok = False
        else:
            out.append(parsed)
    return tuple(out) if ok else None


def string_list(at: At, value: Any, **bounds: int) -> tuple[str, ...] | None:
    """A list of strings."""
    return items(at, value, _plain_string, **bounds)


def _plain_string(at: At, value: Any) -> str | None:
    return string(at, value)


def string_map(at: At, value: Any, *, key_rule: Callable[[At, str], None] | None = None) -> dict[str, str] | None:
    """An object of string values (labels, annotations, tags), keys checked by `key_rule`."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        wrong_type(at, dict, value)
        return None
    out: dict[str, str] = {}
    for key, item in value.items():
        at_key = at / str(key)
        if not isinstance(key, str):
            at_key.error(f"keys must be strings, got {_kind_of(key)} {show(key)}")
            continue
        if key_rule is not None:
            key_rule(at_key, str(key))
        text = string(at_key, item)
        if text is not None:
            out[str(key)] = text
    return out


def quantity(at: At, value: Any) -> int | None:
    """An amount of a resource ("500m", "8Gi", 4) in milli-units; negative or absurd ones are problems."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        at.error(f"must be a quantity such as 500m or 8Gi, got {show(value)}")
        return None
    try:
        return to_amount(value)
    except InvalidValue as error:
        at.error(str(error))
        return None


def duration(at: At, value: Any, *, pattern: re.Pattern[str], examples: str) -> tuple[float | None] | None:
    """A Go duration restricted by `pattern`, as a 1-tuple of seconds (None inside means Never).

    The tuple tells "Never" (a value) apart from "absent or invalid" (None).
    """
    text = string(at, value)
    if text is None:
        return None
    if not pattern.match(text):
        at.error(f"{show(text)} is not a duration of the form {examples}")
        return None
    return (parse_duration(text),)


def dns_subdomain(at: At, value: Any, *, max_length: int = 253) -> str | None:
    """A Kubernetes object name: lower-case RFC 1123 subdomain."""
    text = string(at, value, non_empty=True, max_length=max_length)
    if text is None:
        return None
    if not _DNS1123_SUBDOMAIN.match(text):
        at.error(
            f"{show(text)} is not a valid name: lower-case letters, digits, '-' and '.', "
            "starting and ending with a letter or digit"
        )
        return None
    return text


_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


def date_time(at: At, value: Any) -> str | None:
    """An RFC 3339 date-time (OpenAPI's `date-time` format, e.g. 2025-01-31T12:00:00Z), kept as written."""
    text = string(at, value)
    if text is None:
        return None
    valid = _RFC3339.match(text) is not None
    if valid:
        try:  # the shape is right; are the month, day, hour... in range?
            datetime.fromisoformat(text.upper().replace("Z", "+00:00"))
        except ValueError:
            valid = False
    if not valid:
        at.error(f"{show(text)} is not an RFC 3339 date-time (e.g. 2025-01-31T12:00:00Z)")
        return None
    return text


def qualified_name_problem(key: str) -> str | None:
    """Why `key` is not a valid label/taint key (`[prefix/]name`), or None when it is."""
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN.match(prefix)):
        return f"{show(key)} has an invalid prefix: it must be a lower-case DNS subdomain"
    if not name or len(name) > 63 or not _QUALIFIED_NAME.match(name):
        return (
            f"{show(key)} is not a valid key: the name part must be 1-63 characters of letters, digits, "
            "'-', '_' or '.', starting and ending with a letter or digit"
        )
    return None


def label_value_problem(value: str) -> str | None:
    """Why `value` is not a valid label value, or None when it is."""
    if len(value) > 63 or not _LABEL_VALUE.match(value):
        return (
            f"{show(value)} is not a valid label value: at most 63 letters, digits, '-', '_' or '.', "
            "starting and ending with a letter or digit"
        )
    return None
