"""Node claims to and from JSON-safe dicts: the one serialised form of a claim. Pure.

Role: the state store writes a claim before CreateFleet and reads it back in a later
invocation, so the record must carry every field exactly. `claim_to_dict` and `claim_from_dict`
are inverses: `claim_from_dict(claim_to_dict(c)) == c` for every claim whose requirements are in
the normal form `Requirement.new` and `Requirement.intersection` produce (the only ones the
engine builds), and a resource list keeps even its explicit zeros (which `Resources` equality
ignores but a NodePool limit of `cpu: 0` relies on).

Form (version 1): plain str/int/float/list/dict values, so `json.dumps` takes it as it is.

    schema        1
    requirements  the NodeSelectorRequirement list of `Requirements.to_manifest` (sorted by key)
    requests      {resource: milli-units}, sorted by resource name
    labels        {key: value}, sorted by key
    taints, startup_taints   Kubernetes taint manifests, in order
    every other NodeClaim field under its own name (floats for times and price)

`claim_from_dict` accepts records that lack optional fields (they take the NodeClaim default),
so fields added later do not strand older records; it raises InvalidValue, naming the field, for
anything it cannot read, and for a schema version it does not know.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from types import MappingProxyType
from typing import Any

from nodewright.model.errors import InvalidValue
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.requirements import Requirements
from nodewright.model.resources import Resources
from nodewright.model.taints import Taint

SCHEMA = 1

_STRINGS = (
    "node_class",
    "state",
    "instance_type",
    "capacity_type",
    "zone",
    "instance_id",
    "provider_id",
    "node_name",
    "reason",
    "template_hash",
    "image_id",
)
_FLOATS = ("price", "created_at", "launched_at", "registered_at", "initialized_at")
# A NodeClaim's own default for each string field (what an older record without it meant).
_DEFAULTS: Mapping[str, str] = MappingProxyType(
    {f.name: f.default for f in fields(NodeClaim) if f.name in _STRINGS and isinstance(f.default, str)}
)


def claim_to_dict(claim: NodeClaim) -> dict[str, Any]:
    """The claim as a JSON-safe dict (see the module docstring for the form)."""
    out: dict[str, Any] = {
        "schema": SCHEMA,
        "name": claim.name,
        "nodepool": claim.nodepool,
        "requirements": claim.requirements.to_manifest(),
        "instance_type_options": list(claim.instance_type_options),
        "requests": {key: claim.requests[key] for key in sorted(claim.requests)},
        "pods": list(claim.pods),
        "labels": {key: claim.labels[key] for key in sorted(claim.labels)},
        "taints": [t.to_manifest() for t in claim.taints],
        "startup_taints": [t.to_manifest() for t in claim.startup_taints],
    }
    for name in _STRINGS:
        out[name] = getattr(claim, name)
    for name in _FLOATS:
        out[name] = float(getattr(claim, name))
    return out


def claim_from_dict(data: Mapping[str, Any]) -> NodeClaim:
    """The claim a `claim_to_dict` dict describes; InvalidValue (naming the field) when it cannot."""
    schema = data.get("schema", SCHEMA)
    # Older versions are read (fields they lack take their defaults); a newer one was written by a
    # newer Nodewright whose fields this one would drop on its next save.
    if isinstance(schema, bool) or not isinstance(schema, int) or not 1 <= schema <= SCHEMA:
        raise InvalidValue(f"schema: node claim record version {schema!r} is not 1-{SCHEMA}; upgrade Nodewright")
    name = _string(data, "name", required=True)
    where = f"node claim {name!r}"
    try:
        requirements = Requirements.parse(_list(data, "requirements"))
    except (KeyError, TypeError, InvalidValue) as error:
        raise InvalidValue(f"{where}: requirements: {error}") from None
    fields: dict[str, Any] = {
        "name": name,
        "nodepool": _string(data, "nodepool", required=True),
        "requirements": requirements,
        "instance_type_options": _strings(data, "instance_type_options"),
        "requests": _resources(data, "requests", where),
        "pods": _strings(data, "pods"),
        "labels": _labels(data, "labels", where),
        "taints": _taints(data, "taints", where),
        "startup_taints": _taints(data, "startup_taints", where),
    }
    for field_name in _STRINGS:
        fields[field_name] = _string(data, field_name, default=_DEFAULTS[field_name])
    for field_name in _FLOATS:
        fields[field_name] = _float(data, field_name, where)
    return NodeClaim(**fields)


def _string(data: Mapping[str, Any], key: str, *, required: bool = False, default: str = "") -> str:
    value = data.get(key)
    if value is None:
        if required:
            raise InvalidValue(f"{key}: a node claim record needs a {key}")
        return default
    if not isinstance(value, str):
        raise InvalidValue(f"{key}: expected a string, got {value!r}")
    return value


def _list(data: Mapping[str, Any], key: str) -> list[Any]:
    value = data.get(key)
    if value is None:
        return []
    if not isinstance(value, list | tuple):
        raise InvalidValue(f"{key}: expected a list, got {value!r}")
    return list(value)


def _strings(data: Mapping[str, Any], key: str) -> tuple[str, ...]:
    values = _list(data, key)
    if not all(isinstance(v, str) for v in values):
        raise InvalidValue(f"{key}: expected a list of strings, got {values!r}")
    return tuple(values)


def _float(data: Mapping[str, Any], key: str, where: str) -> float:
    value = data.get(key, 0.0)
    # bool is an int to Python but never a time or a price.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidValue(f"{where}: {key}: expected a number, got {value!r}")
    return float(value)


def _resources(data: Mapping[str, Any], key: str, where: str) -> Resources:
    value = data.get(key) or {}
    if not isinstance(value, Mapping):
        raise InvalidValue(f"{where}: {key}: expected a map of milli-units, got {value!r}")
    for name, amount in value.items():
        if not isinstance(name, str) or isinstance(amount, bool) or not isinstance(amount, int):
            raise InvalidValue(f"{where}: {key}.{name}: expected whole milli-units, got {amount!r}")
    return Resources(dict(value))


def _labels(data: Mapping[str, Any], key: str, where: str) -> dict[str, str]:
    value = data.get(key) or {}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise InvalidValue(f"{where}: {key}: expected a map of strings, got {value!r}")
    return dict(value)


def _taints(data: Mapping[str, Any], key: str, where: str) -> tuple[Taint, ...]:
    taints: list[Taint] = []
    for index, manifest in enumerate(_list(data, key)):
        if not isinstance(manifest, Mapping):
            raise InvalidValue(f"{where}: {key}[{index}]: expected a taint, got {manifest!r}")
        try:
            taints.append(Taint.parse(manifest))
        except InvalidValue as error:
            raise InvalidValue(f"{where}: {key}[{index}].{error}") from None
    return tuple(taints)


__all__ = ["SCHEMA", "claim_from_dict", "claim_to_dict"]
