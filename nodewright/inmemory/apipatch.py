"""The PATCH bodies the API emulator accepts, applied to a stored manifest.

Role: `patched(target, content_type, body, list_keys)` returns the manifest after the patch, for
the four patch types kube-apiserver takes: JSON merge patch (RFC 7386), strategic merge patch
(a merge patch whose lists named in `list_keys` are merged by their key, as the built-in types'
`patchMergeKey` says; `$setElementOrder` hints dropped; `$patch: delete` of a keyed list entry
honoured; other directives answer 422), JSON patch (RFC 6902: add, remove, replace, test, move,
copy) and server-side apply (the applied configuration merged in, lists in `list_keys` merged by
key, other lists replaced). Errors are `Failure`s with the status kube-apiserver answers (415 for
an unknown content type, 422 for a patch that cannot apply, 400 for a body that is not JSON).

Deviation: server-side apply tracks no field ownership (no managedFields, no conflicts): a field
an applier stops sending stays, as with a merge patch.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

import yaml

from nodewright.inmemory.apiwire import MERGE_PATCH, STRATEGIC_MERGE_PATCH, Failure, merge_patch

JSON_PATCH = "application/json-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY_PATCH)
# Lists merged by key by a strategic merge patch of the built-in kinds the emulator writes.
BUILTIN_LIST_KEYS: dict[tuple[str, ...], str] = {
    ("status", "conditions"): "type",
    ("status", "addresses"): "type",
    ("metadata", "ownerReferences"): "uid",
}


def media_type(content_type: str) -> str:
    """The media type of a Content-Type header, without parameters."""
    return content_type.partition(";")[0].strip()


def patched(
    target: Mapping[str, Any],
    content_type: str,
    body: bytes,
    list_keys: Mapping[tuple[str, ...], str],
    *,
    strategic: bool = True,
) -> dict[str, Any]:
    """`target` after the patch (module docstring); `strategic` False refuses a strategic merge
    patch with 415, as kube-apiserver does for custom resources.
    """
    kind = media_type(content_type)
    if kind == JSON_PATCH:
        operations = _load_json(body)
        if not isinstance(operations, list):
            raise Failure(400, "a JSON patch must be a list of operations")
        return _json_patch(copy.deepcopy(dict(target)), operations)
    if kind == MERGE_PATCH:
        return dict(merge_patch(target, _object(body)))
    if kind == STRATEGIC_MERGE_PATCH and strategic:
        return dict(_keyed_merge(target, _object(body), list_keys, (), strategic=True))
    if kind == APPLY_PATCH:
        try:
            applied = yaml.safe_load(body)
        except yaml.YAMLError as error:
            raise Failure(400, f"the applied configuration is not YAML: {error}") from None
        if not isinstance(applied, Mapping):
            raise Failure(400, "the applied configuration is not an object")
        return dict(_keyed_merge(target, applied, list_keys, (), strategic=False))
    raise Failure(
        415,
        f"the body of the request was in an unknown format - accepted media types include: {', '.join(PATCH_TYPES)}",
    )


def _load_json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError as error:
        raise Failure(400, f"the request body is not JSON: {error}") from None


def _object(body: bytes) -> dict[str, Any]:
    value = _load_json(body)
    if not isinstance(value, dict):
        raise Failure(400, "the request body is not a JSON object")
    return value


def _keyed_merge(
    target: Any, patch: Any, list_keys: Mapping[tuple[str, ...], str], path: tuple[str, ...], *, strategic: bool
) -> Any:
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if key.startswith("$setElementOrder/") or key == "$retainKeys":
            continue  # ordering and retention hints: the result is the same without them
        if key.startswith("$"):
            raise Failure(422, f"unsupported strategic merge patch directive {key!r} at {'.'.join(path) or '.'}")
        here = (*path, key)
        if value is None and strategic:
            out.pop(key, None)
        elif here in list_keys and isinstance(value, list):
            out[key] = _merge_list(out.get(key), value, list_keys[here], strategic=strategic)
        else:
            out[key] = _keyed_merge(out.get(key), value, list_keys, here, strategic=strategic)
    return out


def _merge_list(current: Any, entries: list[Any], key: str, *, strategic: bool) -> list[Any]:
    merged = [dict(e) for e in current or () if isinstance(e, Mapping)]
    for entry in entries:
        if not isinstance(entry, Mapping) or key not in entry:
            raise Failure(422, f"a list entry without its merge key {key!r}: {entry!r}")
        index = next((i for i, e in enumerate(merged) if e.get(key) == entry[key]), None)
        if strategic and entry.get("$patch") == "delete":
            if index is not None:
                merged.pop(index)
            continue
        if index is None:
            merged.append({k: v for k, v in entry.items() if k != "$patch"})
        else:
            merged[index] = dict(merge_patch(merged[index], entry))
    return merged


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise Failure(422, f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _json_patch(document: dict[str, Any], operations: list[Any]) -> dict[str, Any]:
    for index, operation in enumerate(operations):
        if not isinstance(operation, Mapping) or "op" not in operation or "path" not in operation:
            raise Failure(422, f"JSON patch operation {index}: op and path are required")
        op, parts = operation["op"], _pointer(str(operation["path"]))
        if op in ("move", "copy"):
            source = _pointer(str(operation.get("from", "")))
            value = copy.deepcopy(_resolve(document, source, index))
            if op == "move":
                _remove(document, source, index)
            _add(document, parts, value, index)
        elif op == "add":
            _add(document, parts, copy.deepcopy(operation.get("value")), index)
        elif op == "remove":
            _remove(document, parts, index)
        elif op == "replace":
            _remove(document, parts, index)
            _add(document, parts, copy.deepcopy(operation.get("value")), index)
        elif op == "test":
            if _resolve(document, parts, index) != operation.get("value"):
                raise Failure(422, f"JSON patch operation {index}: test failed at {operation['path']}")
        else:
            raise Failure(422, f"JSON patch operation {index}: unknown op {op!r}")
    return document


def _resolve(document: Any, parts: list[str], index: int) -> Any:
    value = document
    for part in parts:
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            raise Failure(422, f"JSON patch operation {index}: path /{'/'.join(parts)} does not exist")
    return value


def _add(document: Any, parts: list[str], value: Any, index: int) -> None:
    if not parts:
        raise Failure(422, f"JSON patch operation {index}: cannot replace the whole object")
    parent = _resolve(document, parts[:-1], index)
    last = parts[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list) and (last == "-" or (last.isdigit() and int(last) <= len(parent))):
        parent.insert(len(parent) if last == "-" else int(last), value)
    else:
        raise Failure(422, f"JSON patch operation {index}: cannot add at /{'/'.join(parts)}")


def _remove(document: Any, parts: list[str], index: int) -> None:
    _resolve(document, parts, index)
    parent = _resolve(document, parts[:-1], index)
    if isinstance(parent, dict):
        del parent[parts[-1]]
    else:
        parent.pop(int(parts[-1]))
