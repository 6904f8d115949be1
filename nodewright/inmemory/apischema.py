"""A CRD's structural schema applied to a custom object, as kube-apiserver applies it on write.

Role: `admit(schema, obj, strict)` returns the object with the schema's `default`s filled in and
fields the schema does not declare pruned (or, with `strict` — kubectl's
`fieldValidation=Strict` — refused), and the list of validation errors (type, `enum`,
`required`, `minimum`/`maximum`, `minLength`/`maxLength`, `minItems`/`maxItems`, `pattern`), each
naming the field path as kube-apiserver does (`spec.weight: Invalid value: ...`). `metadata`,
`apiVersion` and `kind` are the API server's, never pruned. `x-kubernetes-preserve-unknown-fields`
keeps a subtree as sent; `x-kubernetes-int-or-string` accepts either.

Not applied here: CEL rules (`x-kubernetes-validations`: `apicel`, after this). Not applied at
all: formats, `oneOf`/`anyOf`/`allOf`, list-type uniqueness. The functions validate every
document fully when they read it (`nodewright.config`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_TOP = ("apiVersion", "kind", "metadata")
_TYPES: dict[str, type | tuple[type, ...]] = {
    "object": dict,
    "array": list,
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
}


def admit(schema: Mapping[str, Any], obj: Mapping[str, Any], *, strict: bool) -> tuple[dict[str, Any], list[str]]:
    """The object defaulted and pruned, and the errors (module docstring)."""
    errors: list[str] = []
    body = {k: v for k, v in obj.items() if k not in _TOP}
    admitted = _walk(schema, body, "", errors, strict=strict, top=True)
    out = {k: obj[k] for k in _TOP if k in obj}
    out.update(admitted if isinstance(admitted, dict) else {})
    return out, errors


def _walk(
    schema: Mapping[str, Any], value: Any, path: str, errors: list[str], *, strict: bool, top: bool = False
) -> Any:
    if value is None:
        return None
    kind = schema.get("type")
    if schema.get("x-kubernetes-int-or-string"):
        if not isinstance(value, (int, str)) or isinstance(value, bool):
            errors.append(f'{path}: Invalid value: "{value}": {path} in body must be of type integer-or-string')
        return value
    expected = _TYPES.get(str(kind))
    if expected is not None and (
        not isinstance(value, expected) or (kind in ("integer", "number") and isinstance(value, bool))
    ):
        errors.append(f'{path}: Invalid value: "{_short(value)}": {path} in body must be of type {kind}')
        return value
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(f'"{e}"' for e in schema["enum"])
        errors.append(f'{path}: Unsupported value: "{_short(value)}": supported values: {allowed}')
    _bounds(schema, value, path, errors)
    if isinstance(value, dict):
        return _object(schema, value, path, errors, strict=strict, top=top)
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        return [_walk(schema["items"], item, f"{path}[{i}]", errors, strict=strict) for i, item in enumerate(value)]
    return value


def _object(
    schema: Mapping[str, Any], value: dict[str, Any], path: str, errors: list[str], *, strict: bool, top: bool
) -> dict[str, Any]:
    properties: Mapping[str, Any] = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    out: dict[str, Any] = {}
    for key, item in value.items():
        here = f"{path}.{key}" if path else key
        if key in properties:
            out[key] = _walk(properties[key], item, here, errors, strict=strict)
        elif isinstance(extra, Mapping):
            out[key] = _walk(extra, item, here, errors, strict=strict)
        elif preserve or extra is True:
            out[key] = item
        elif strict:
            errors.append(f'unknown field "{here}"')
    for key, sub in properties.items():
        if key not in out and isinstance(sub, Mapping) and "default" in sub:
            out[key] = _walk(sub, sub["default"], f"{path}.{key}" if path else key, errors, strict=strict)
    for key in schema.get("required") or ():
        if key not in out:
            here = f"{path}.{key}" if path else key
            errors.append(f"{here}: Required value")
    return out


def _bounds(schema: Mapping[str, Any], value: Any, path: str, errors: list[str]) -> None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(
                f"{path}: Invalid value: {value}: {path} in body should be greater than or equal to {schema['minimum']}"
            )
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(
                f"{path}: Invalid value: {value}: {path} in body should be less than or equal to {schema['maximum']}"
            )
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            errors.append(
                f'{path}: Invalid value: "{value}": {path} in body should be at least {schema["minLength"]} chars long'
            )
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append(f"{path}: Too long: may not be more than {schema['maxLength']} bytes")
        if "pattern" in schema and not re.search(str(schema["pattern"]), value):
            errors.append(f"{path}: Invalid value: \"{value}\": {path} in body should match '{schema['pattern']}'")
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            errors.append(
                f"{path}: Invalid value: {len(value)}: {path} in body should have at least {schema['minItems']} items"
            )
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append(f"{path}: Too many: {len(value)}: must have at most {schema['maxItems']} items")


def _short(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."
