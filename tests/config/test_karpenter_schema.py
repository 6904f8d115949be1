"""Schema parity with Karpenter's v1 CRDs, walked path by path.

fixtures/karpenter-v1/schema.yaml is this project's table of every field path of Karpenter's
NodePool and EC2NodeClass (with the type and bounds the CRDs give each); nodepools.yaml and
ec2nodeclasses.yaml are valid documents that use every one of those paths between them. The
tests below say, per path:

- the documents use it, and use nothing the table lacks (so table and documents agree);
- the validator knows it: no "unknown field" warning for it, while a made-up field put beside it
  is warned about (so silence means the validator looked);
- its enum, minimum, maximum, minItems/maxItems and minLength/maxLength are enforced, with a
  problem that names the path.

A new Karpenter release adds paths to the table; these tests then fail until the validator knows them.
"""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from nodewright.config import Loaded, parse_yaml
from nodewright.config.problems import SegmentPath, format_path

HERE = Path(__file__).parent / "fixtures" / "karpenter-v1"
SCHEMA: dict[str, dict[str, dict[str, Any]]] = yaml.safe_load((HERE / "schema.yaml").read_text())
DOCUMENTS = {
    "NodePool": [d for d in yaml.safe_load_all((HERE / "nodepools.yaml").read_text()) if d],
    "EC2NodeClass": [d for d in yaml.safe_load_all((HERE / "ec2nodeclasses.yaml").read_text()) if d],
}
MADE_UP = "zzNotAKarpenterField"


def _walk(kind: str, value: Any, path: str, segments: SegmentPath, out: dict[str, SegmentPath]) -> None:
    """Table path -> the segments of its first occurrence in a document, for everything under `path`."""
    out.setdefault(path, segments)
    table = SCHEMA[kind]
    if isinstance(value, list):
        for index, item in enumerate(value):
            _walk(kind, item, f"{path}[]", (*segments, index), out)
    elif isinstance(value, dict) and f"{path}{{}}" in table:  # a map: its keys are data
        for key, item in value.items():
            _walk(kind, item, f"{path}{{}}", (*segments, key), out)
    elif isinstance(value, dict):
        for key, item in value.items():
            _walk(kind, item, f"{path}.{key}", (*segments, key), out)


@cache
def _occurrences(kind: str) -> dict[str, tuple[int, SegmentPath]]:
    """Table path -> (which document of `kind`, the segments where it first occurs)."""
    found: dict[str, tuple[int, SegmentPath]] = {}
    for number, document in enumerate(DOCUMENTS[kind]):
        paths: dict[str, SegmentPath] = {}
        _walk(kind, document["spec"], "spec", ("spec",), paths)
        for path, segments in paths.items():
            found.setdefault(path, (number, segments))
    return found


def _read(document: dict[str, Any]) -> Loaded:
    return parse_yaml(yaml.safe_dump(document, sort_keys=False), "schema.yaml")


@cache
def _as_given(kind: str, number: int) -> Loaded:
    return _read(DOCUMENTS[kind][number])


def _with(kind: str, path: str, change: Any) -> tuple[Loaded, SegmentPath]:
    """The document that uses `path`, changed there by `change(parent, key)`; and the path's segments."""
    number, segments = _occurrences(kind)[path]
    document = copy.deepcopy(DOCUMENTS[kind][number])
    parent: Any = document
    for segment in segments[:-1]:
        parent = parent[segment]
    change(parent, segments[-1])
    return _read(document), segments


def _unknown(loaded: Loaded) -> list[str]:
    return [w.path for w in loaded.warnings if "unknown field" in w.message]


PATHS = [pytest.param(kind, path, id=f"{kind}:{path}") for kind, paths in SCHEMA.items() for path in paths]


@pytest.mark.parametrize("kind", sorted(SCHEMA))
def test_the_documents_use_every_path_of_the_table_and_no_other(kind: str) -> None:
    used = set(_occurrences(kind))
    assert sorted(set(SCHEMA[kind]) - used) == [], "paths of the table no document uses"
    assert sorted(used - set(SCHEMA[kind])) == [], "paths the documents use that Karpenter's CRD lacks"


@pytest.mark.parametrize("kind", sorted(SCHEMA))
def test_the_documents_are_valid(kind: str) -> None:
    for number in range(len(DOCUMENTS[kind])):
        loaded = _as_given(kind, number)
        assert [str(p) for p in loaded.problems] == []
        assert len(loaded.documents) == 1


@pytest.mark.parametrize(("kind", "path"), PATHS)
def test_every_path_of_karpenters_schema_is_known_to_the_validator(kind: str, path: str) -> None:
    number, segments = _occurrences(kind)[path]
    unknown = _unknown(_as_given(kind, number))
    here = format_path(segments)
    assert [u for u in unknown if u == here or u.startswith((here + ".", here + "["))] == []
    if SCHEMA[kind][path]["type"] == "object" and f"{path}{{}}" not in SCHEMA[kind]:
        # An object whose fields the validator checks: a made-up one beside them is named.
        loaded, _ = _with(kind, path, lambda parent, key: parent[key].__setitem__(MADE_UP, "x"))
        assert f"{here}.{MADE_UP}" in _unknown(loaded), "the validator did not look inside this object"


def _bad_values(entry: dict[str, Any]) -> list[tuple[str, Any]]:
    """(what is wrong, a value the CRD refuses) for each bound of a table entry."""
    bad: list[tuple[str, Any]] = []
    if "enum" in entry:
        bad.append(("enum", "NotOneOfThem"))
    if "minimum" in entry:
        bad.append(("minimum", entry["minimum"] - 1))
    if "maximum" in entry:
        bad.append(("maximum", entry["maximum"] + 1))
    if "minLength" in entry:
        bad.append(("minLength", "" if entry["minLength"] == 1 else "a" * (entry["minLength"] - 1)))
    if "maxLength" in entry:
        bad.append(("maxLength", "a" * (entry["maxLength"] + 1)))
    return bad


BOUNDS = [
    pytest.param(kind, path, rule, value, id=f"{kind}:{path}:{rule}")
    for kind, paths in SCHEMA.items()
    for path, entry in paths.items()
    if entry["type"] != "array"
    for rule, value in _bad_values(entry)
]
LENGTHS = [
    pytest.param(kind, path, rule, id=f"{kind}:{path}:{rule}")
    for kind, paths in SCHEMA.items()
    for path, entry in paths.items()
    if entry["type"] == "array"
    for rule in ("minItems", "maxItems")
    if rule in entry
]


@pytest.mark.parametrize(("kind", "path", "rule", "value"), BOUNDS)
def test_every_enum_and_bound_of_the_schema_is_a_problem_naming_the_field(
    kind: str, path: str, rule: str, value: Any
) -> None:
    loaded, segments = _with(kind, path, lambda parent, key: parent.__setitem__(key, value))
    here = format_path(segments)
    assert here in [p.path for p in loaded.problems], [str(p) for p in loaded.problems]


@pytest.mark.parametrize(("kind", "path", "rule"), LENGTHS)
def test_every_list_length_bound_is_a_problem_naming_the_list(kind: str, path: str, rule: str) -> None:
    entry = SCHEMA[kind][path]

    def resize(parent: Any, key: Any) -> None:
        items = parent[key]
        parent[key] = [] if rule == "minItems" else [copy.deepcopy(items[0]) for _ in range(entry["maxItems"] + 1)]

    loaded, segments = _with(kind, path, resize)
    here = format_path(segments)
    assert here in [p.path for p in loaded.problems], [str(p) for p in loaded.problems]
