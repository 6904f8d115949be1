"""A CRD's CEL rules (`x-kubernetes-validations`) evaluated on a custom object, as kube-apiserver does.

Role: `violations(schema, obj, old)` walks the structural schema beside the admitted object (after
`apischema.admit`: defaults filled, unknown fields pruned) and evaluates every rule found on the
way with `self` bound to the value at that place, and returns kube-apiserver's error for each rule
that does not hold: `<path>: Invalid value: "<schema type>": <message>` (the rule's `message`, or
`failed rule: <rule>`; an evaluation error appends it). Rules of a field the object does not
carry are not evaluated (as kube-apiserver: a rule applies to a value present).

Transition rules (those that read `oldSelf`) are evaluated only on an update, where the old object
has a value at the same place reached through object properties and additionalProperties; under
list items they are skipped (kube-apiserver correlates only `x-kubernetes-list-type: map` items,
which none of the CRDs this project serves declares).

`compile_errors(schema, at)` is the check at CRD creation: a rule that does not parse (or a rule
entry without its `rule`) refuses the CRD, with kube-apiserver's path to the rule
(`spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule`),
instead of refusing every object written under it later.

Why a library and not by hand: CEL is a full expression language (macros, `has`, ternaries, typed
comparison, errors as values); cel-python implements its standard definition. Not done here that
kube-apiserver does: type-checking the rules against the schema at CRD creation (cel-python parses
a rule; names and types are resolved when it is evaluated), cost limits,
Kubernetes' CEL extension libraries (`quantity`, `url`, `isSorted`, ...: the CRDs served here use
none), `messageExpression`, `fieldPath`, and validation ratcheting of unchanged fields.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Any

_TOP = ("apiVersion", "kind", "metadata")


@lru_cache(maxsize=1)
def _environment() -> Any:
    """cel-python, loaded on the first rule: importing it and building its parser costs about a
    third of a CPU-second, which a server never written a custom object with rules should not pay.
    """
    import celpy

    return celpy.Environment()


@lru_cache(maxsize=512)
def _program(rule: str) -> Any:
    """The rule compiled once per process: CRDs are re-applied often, their rules rarely change."""
    environment = _environment()
    return environment.program(environment.compile(rule))


def violations(schema: Mapping[str, Any], obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[str]:
    """kube-apiserver's error for every rule of `schema` that `obj` breaks (module docstring)."""
    body = {k: v for k, v in obj.items() if k not in _TOP}
    old_body = None if old is None else {k: v for k, v in old.items() if k not in _TOP}
    errors: list[str] = []
    for path, sub, value, before in _places(schema, body, old_body, ""):
        for rule in sub.get("x-kubernetes-validations") or ():
            error = _judge(rule, value, before, path, str(sub.get("type") or "object"))
            if error is not None:
                errors.append(error)
    return errors


def compile_errors(schema: Mapping[str, Any], at: str) -> list[str]:
    """kube-apiserver's error for every rule of `schema` (found at path `at` in the CRD) that is
    missing or does not parse: the CRD is refused with them (module docstring).
    """
    errors: list[str] = []
    for path, sub in _schemas(schema, at):
        for i, rule in enumerate(sub.get("x-kubernetes-validations") or ()):
            where = f"{path}.x-kubernetes-validations[{i}].rule"
            expression = str(rule.get("rule") or "") if isinstance(rule, Mapping) else ""
            if not expression.strip():
                errors.append(f"{where}: Required value: rule is not specified")
                continue
            failure = _parse_failure(expression)
            if failure is not None:
                message = str(rule.get("message") or "")
                errors.append(
                    f'{where}: Invalid value: apiextensions.ValidationRule{{Rule:"{expression}", '
                    f'Message:"{message}"}}: compilation failed: ERROR: <input>:{failure}: Syntax error'
                )
    return errors


def _parse_failure(expression: str) -> str | None:
    """`line:column` where `expression` stops parsing, None when it parses."""
    from celpy.celparser import CELParseError

    try:
        _program(expression)
    except CELParseError as error:
        return f"{getattr(error, 'line', 1)}:{getattr(error, 'column', 1)}"
    return None


def _schemas(schema: Mapping[str, Any], path: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every (path, sub-schema) of a structural schema, in kube-apiserver's path notation."""
    yield path, schema
    for key, sub in (schema.get("properties") or {}).items():
        if isinstance(sub, Mapping):
            yield from _schemas(sub, f"{path}.properties[{key}]")
    for key in ("items", "additionalProperties"):
        sub = schema.get(key)
        if isinstance(sub, Mapping):
            yield from _schemas(sub, f"{path}.{key}")


def _places(
    schema: Mapping[str, Any], value: Any, old: Any, path: str
) -> Iterator[tuple[str, Mapping[str, Any], Any, Any]]:
    """Every (path, schema, value, old value) the object has, parents before their fields."""
    if value is None:
        return
    yield path, schema, value, old
    if isinstance(value, dict):
        properties: Mapping[str, Any] = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            sub = properties.get(key, extra if isinstance(extra, Mapping) else None)
            if isinstance(sub, Mapping):
                before = old.get(key) if isinstance(old, dict) else None
                yield from _places(sub, item, before, f"{path}.{key}" if path else key)
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for i, item in enumerate(value):
            yield from _places(schema["items"], item, None, f"{path}[{i}]")


def _judge(rule: Mapping[str, Any], value: Any, old: Any, path: str, kind: str) -> str | None:
    from celpy.adapter import json_to_cel
    from celpy.celtypes import BoolType
    from celpy.evaluation import CELEvalError

    expression = str(rule.get("rule") or "")
    transition = "oldSelf" in expression
    if transition and old is None:
        return None
    activation: dict[str, Any] = {"self": json_to_cel(value)}
    if transition:
        activation["oldSelf"] = json_to_cel(old)
    message = str(rule.get("message") or f"failed rule: {expression}")
    where = path or "<nil>"
    try:
        # Every rule parses: a CRD whose rule does not is refused when written (`compile_errors`).
        result = _program(expression).evaluate(activation)
    except CELEvalError as error:
        return f'{where}: Invalid value: "{kind}": {message}: {_reason(error)}'
    if isinstance(result, BoolType):
        return None if bool(result) else f'{where}: Invalid value: "{kind}": {message}'
    # cel-python returns an evaluation error as a value: kube-apiserver refuses with it.
    return f'{where}: Invalid value: "{kind}": {message}: {_reason(result)}'


def _reason(error: Any) -> str:
    """An evaluation error's cause in one line: cel-python's error carries the Python exception's
    arguments after its own summary (`int('four')`: the ValueError's text).
    """
    args: tuple[Any, ...] = tuple(getattr(error, "args", ()))
    if len(args) >= 3 and isinstance(args[2], tuple) and args[2]:
        return str(args[2][0])
    return str(args[0]) if args else str(error)
