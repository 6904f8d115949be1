"""Configuration text read into manifests with the line of each field, and manifests written back. Pure.

Role: the text half of configuration loading (`nodewright.config.documents` is the other: the
envelope, `Document`, `Loaded` and the kinds' parsers). `read_stream` turns a YAML or JSON stream
into `Manifest`s, each with a map from field path to line, so every problem names its line;
`parse_yaml` reads and parses in one call; `dump_yaml` writes manifests back as YAML.

Plain YAML (no anchors, aliases or tags: what manifests are) is read from libyaml's events and
its lines are found only when a problem asks (`nodewright.config.plainyaml`); any other stream is
composed into nodes, measured and walked here. Hostile input is refused with a problem before
anything walks it: a YAML document whose aliases would repeat more than MAX_ALIASED_VALUES values
("billion laughs"), an alias inside the node it names (a cycle), any document nested deeper than
MAX_DEPTH, an integer longer than MAX_INT_DIGITS.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import yaml

from nodewright.config.documents import (
    Loaded,
    Manifest,
    combine,
    document_label,
    parse_document,
    unwrap,
)
from nodewright.config.plainyaml import read_plain
from nodewright.config.problems import Problem, SegmentPath, format_path

# How many values YAML aliases may add to one document beyond those written out. Anchors in real
# manifests share a few requirement or toleration blocks; a billion-laughs bomb adds billions.
MAX_ALIASED_VALUES = 10_000
# How deep one document may nest (a Deployment with node affinity is about 12 levels; a List adds 2).
MAX_DEPTH = 100
# Longest integer literal read (Python's own limit for decimal text is 4300 digits).
MAX_INT_DIGITS = 4000
_INT_TAG = "tag:yaml.org,2002:int"
# libyaml's loader when PyYAML was built with it (the wheels are): same documents, a few times faster.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _walk(root: yaml.Node, here: SegmentPath, lines: dict[SegmentPath, int], dupes: list[SegmentPath]) -> None:
    """Record the line of every field path under `root` and the paths of duplicated keys."""
    stack: list[tuple[yaml.Node, SegmentPath]] = [(root, here)]
    while stack:
        node, path = stack.pop()
        lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for key_node, value_node in node.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    continue
                key = str(key_node.value)
                child = (*path, key)
                if key in seen:
                    dupes.append(child)
                seen.add(key)
                lines[child] = key_node.start_mark.line + 1
                stack.append((value_node, child))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((item, (*path, position)) for position, item in enumerate(node.value))


class Refused(yaml.YAMLError):
    """A document read no further (alias bomb, alias cycle, nesting too deep); `line` is where it starts."""

    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.line = line


def _measure(root: yaml.Node) -> None:
    """Refuse `root` when its aliases repeat too many values, form a cycle, or it nests too deep.

    Iterative, and each node is visited once however often aliases name it: the size and height of
    a shared node are remembered, so measuring a bomb costs what its text costs.
    """
    line = root.start_mark.line + 1
    measured: dict[int, tuple[int, int]] = {}  # id(node) -> (values when expanded, height)
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            open_nodes.discard(key)
            children = _children(node)
            size = 1 + sum(measured[id(c)][0] for c in children)
            height = 1 + max((measured[id(c)][1] for c in children), default=0)
            measured[key] = (size, height)
            if height > MAX_DEPTH:
                raise Refused(f"nested more than {MAX_DEPTH} levels deep; refused", line)
            if size - len(measured) > MAX_ALIASED_VALUES:
                raise Refused(
                    f"YAML aliases repeat more than {MAX_ALIASED_VALUES:,} values in this document "
                    "(an alias bomb?); refused",
                    line,
                )
            continue
        if key in measured:
            continue
        if key in open_nodes:
            raise Refused("a YAML alias refers to a node that contains it (a cycle); refused", line)
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in measured)
        if len(open_nodes) > MAX_DEPTH:
            raise Refused(f"nested more than {MAX_DEPTH} levels deep; refused", line)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.ScalarNode) and node.tag == _INT_TAG and len(node.value) > MAX_INT_DIGITS:
        # Python refuses to read a decimal integer this long (it would take quadratic time).
        raise Refused(f"a number of more than {MAX_INT_DIGITS:,} digits; refused", node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _depth(value: Any) -> int:
    """How deep a decoded JSON value nests (iterative: the value may be deeper than Python's stack)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > MAX_DEPTH:
            break
        if isinstance(item, dict):
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
    return deepest


def _yaml_documents(text: str) -> Iterable[tuple[Any, dict[SegmentPath, int], list[SegmentPath]]]:
    """Each non-empty document of a YAML stream with its field lines and duplicated keys.

    Raises Refused (a YAMLError) for a document `_measure` refuses, before it is walked or built.
    """
    loader = _LOADER(text)
    try:
        while loader.check_node():
            node = loader.get_node()
            lines: dict[SegmentPath, int] = {}
            dupes: list[SegmentPath] = []
            if node is not None:
                _measure(node)
                _walk(node, (), lines, dupes)
            body = loader.construct_document(node) if node is not None else None
            if body is not None:  # an empty document between `---` separators, as kubectl skips it
                yield body, lines, dupes
    finally:
        loader.dispose()


def _documents(text: str) -> Iterable[tuple[Any, Mapping[SegmentPath, int], list[SegmentPath]]]:
    """Each non-empty document of a YAML stream with its field lines and duplicated keys.

    Plain YAML is read from libyaml's events, its lines found only when asked (`plainyaml`); a
    stream with anchors, aliases, tags or the like is composed, measured and walked (`_yaml_documents`).
    Either way the documents before a syntax error come out before the error is raised.
    """
    plain = read_plain(text)
    if plain is None:
        yield from _yaml_documents(text)
        return
    documents, error = plain
    for document in documents:
        if document.body is not None:  # an empty document between `---` separators, as kubectl skips it
            yield document.body, document.lines, document.duplicates
    if error is not None:
        raise error


class _JsonLines(Mapping[SegmentPath, int]):
    """Field paths -> lines of a JSON text, worked out (by reading the text as YAML) only when first asked.

    Reading a large `kubectl get -o json` as YAML costs seconds; JSON itself takes milliseconds.
    So lines are only looked up when something is reported, or a configuration document is kept.
    """

    def __init__(self, text: str) -> None:
        self._text = text
        self._lines: Mapping[SegmentPath, int] | None = None
        self._dupes: list[SegmentPath] = []

    def _read(self) -> Mapping[SegmentPath, int]:
        if self._lines is None:
            try:
                as_yaml = list(_documents(self._text))
            except yaml.YAMLError:  # valid JSON that YAML 1.1 cannot read (e.g. tabs): no line numbers then
                as_yaml = []
            _, self._lines, self._dupes = as_yaml[0] if len(as_yaml) == 1 else (None, {}, [])
        return self._lines

    @property
    def duplicates(self) -> list[SegmentPath]:
        """The paths of keys written twice in one object."""
        self._read()
        return self._dupes

    def __getitem__(self, key: SegmentPath) -> int:
        return self._read()[key]

    def __iter__(self) -> Iterator[SegmentPath]:
        return iter(self._read())

    def __len__(self) -> int:
        return len(self._read())


def _json_document(text: str) -> tuple[Any, Mapping[SegmentPath, int], list[SegmentPath]] | None:
    """A JSON text (`kubectl get -o json`) read as JSON, so its values keep JSON's types; None if not JSON."""
    if not text.lstrip().startswith(("{", "[")):
        return None
    repeated = False

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal repeated
        out = dict(items)
        repeated = repeated or len(out) != len(items)
        return out

    try:
        body = json.loads(text, object_pairs_hook=pairs)
    except ValueError:
        return None
    except RecursionError:
        raise Refused(f"nested more than {MAX_DEPTH} levels deep; refused", 1) from None
    if _depth(body) > MAX_DEPTH:
        raise Refused(f"nested more than {MAX_DEPTH} levels deep; refused", 1)
    lines = _JsonLines(text)
    return body, lines, lines.duplicates if repeated else []


def read_stream(text: str, source: str) -> tuple[list[Manifest], Loaded]:
    """Every object of a YAML stream or a JSON text, Lists unwrapped; broken input is a problem naming its line."""
    manifests: list[Manifest] = []
    parts: list[Loaded] = []
    index = 0
    try:
        as_json = _json_document(text)
        for body, lines, dupes in [as_json] if as_json is not None else _documents(text):
            if body is None:  # JSON `null`, or an empty YAML document
                continue
            label = document_label(body, index)
            duplicated = [Problem(source, label, format_path(p), "duplicate key", lines.get(p)) for p in dupes]
            duplicated.sort(key=lambda p: p.line if p.line is not None else 0)  # top to bottom, as other problems
            found, loaded = unwrap(body, source=source, index=index, lines=lines)
            manifests.extend(found)
            parts.extend([Loaded(problems=tuple(duplicated)), loaded])
            index += 1
    except Refused as error:
        parts.append(Loaded(problems=(Problem(source, f"document #{index + 1}", "", str(error), error.line),)))
    except yaml.YAMLError as error:
        parts.append(Loaded(problems=(_syntax_problem(text, error, source, index),)))
    return manifests, combine(parts)


def _syntax_problem(text: str, error: yaml.YAMLError, source: str, index: int) -> Problem:
    if text.lstrip().startswith("{"):
        try:
            json.loads(text)
        except ValueError as json_error:  # it was meant as JSON: JSON's own message is the clearer one
            line = getattr(json_error, "lineno", None)
            reason = getattr(json_error, "msg", str(json_error))
            column = getattr(json_error, "colno", None)
            return Problem(source, f"document #{index + 1}", "", f"invalid JSON: {reason} (column {column})", line)
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    line = mark.line + 1 if mark is not None else None
    reason = getattr(error, "problem", None) or str(error)
    column = f" (column {mark.column + 1})" if mark is not None else ""
    return Problem(source, f"document #{index + 1}", "", f"invalid YAML: {reason}{column}", line)


def parse_yaml(text: str, source: str) -> Loaded:
    """Every document of a YAML stream (or a JSON text), validated; broken input is a problem naming its line."""
    manifests, loaded = read_stream(text, source)
    return combine([loaded, *(parse_document(m, source) for m in manifests)])
