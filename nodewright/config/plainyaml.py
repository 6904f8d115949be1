"""Plain YAML read straight from libyaml's event stream into dicts and lists; lines found when asked. Pure.

Role: the fast path of `nodewright.config.stream`. Composing a node tree, measuring it for alias
bombs, walking it for every field's line and constructing it costs about 30 CPU-s on a 32 MB
workload file; most of it buys nothing for plain YAML (no anchors, aliases or tags), which is
what manifests are. `read_plain` builds the values from libyaml's events (PyYAML's C binding)
with SafeLoader's resolver and constructors, so the values are the ones the composing reader
would build; it notes each document's duplicated keys, and where the document starts so its
lines can be read again, from its own text, only when a problem needs one (`DocumentLines`).

It gives up (returns None) on anything outside plain YAML: anchors and aliases, explicit tags,
merge keys, complex keys, nesting near the depth limit, a very long integer, a value the
constructors refuse. The caller then reads the stream with the composing reader, which refuses
or reports those as it always has. A syntax error is libyaml's own either way; it is returned
with the documents read before it, as the composing reader would have yielded them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import yaml
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.events import (
    AliasEvent,
    DocumentEndEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)
from yaml.nodes import ScalarNode

from nodewright.config.problems import SegmentPath

# libyaml's parser when PyYAML was built with it (the wheels are); its events are told apart by
# class, so it is typed loosely. Without it every stream takes the composing reader.
_CParser: Any = getattr(getattr(yaml, "cyaml", None), "CParser", None)

# The fast path stops a little short of the composing reader's limits, so that whatever it would
# refuse (nesting past stream.MAX_DEPTH, integers past stream.MAX_INT_DIGITS) is refused there.
DEPTH_LIMIT = 90
INT_DIGITS_LIMIT = 3000

_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
# Plain scalars resolve as SafeLoader resolves them: by first character, then by pattern.
_RESOLVERS: dict[str | None, list[tuple[str, Any]]] = yaml.SafeLoader.yaml_implicit_resolvers
# A plain scalar starting with any other character is a string: no pattern to try.
_RESOLVABLE = frozenset(first for first in _RESOLVERS if first)
_WILDCARD = None in _RESOLVERS  # a resolver for any first character (SafeLoader has none)
# How many resolved plain scalars (`NoSchedule`, `true`, `100m`...) one read remembers.
_REMEMBERED = 4096
_CONSTRUCTOR = SafeConstructor()
_NO_KEY = object()  # a mapping waiting for its next key (None is a key: `~: x`)


class _NotPlain(Exception):
    """The stream uses something only the composing reader handles."""


@dataclass(frozen=True, slots=True)
class PlainDocument:
    """One document: its value, the line its root starts on, duplicated keys, and its lines on demand."""

    body: Any
    lines: DocumentLines
    duplicates: list[SegmentPath]


def read_plain(text: str) -> tuple[list[PlainDocument], yaml.YAMLError | None] | None:
    """Every document of a plain YAML stream and the syntax error that ended it early, if one did.

    None when the stream is not plain YAML (see the module docstring): read it with the composing reader.
    Empty documents are included (their body is None) so that positions match the stream's.
    """
    if _CParser is None:
        return None
    parser = _CParser(text)
    documents: list[PlainDocument] = []
    resolved: dict[str, Any] = {}
    try:
        parser.get_event()  # StreamStartEvent
        while True:
            start = parser.get_event()
            if isinstance(start, StreamEndEvent):
                return documents, None
            if documents:
                documents[-1].lines.ends_at(start.start_mark)
            body, root_line, duplicates = _document(parser, resolved)
            lines = DocumentLines(text, start.start_mark, root_line, len(documents))
            documents.append(PlainDocument(body, lines, duplicates))
    except (_NotPlain, ConstructorError, ValueError, OverflowError, TypeError):
        return None
    except yaml.YAMLError as error:
        return documents, error
    finally:
        parser.dispose()


def _scalar(event: Any, resolved: dict[str, Any]) -> Any:
    """The value SafeLoader constructs for a plain scalar event without tag or anchor.

    `resolved` remembers values already constructed (all immutable: str, None, bool, int, float,
    datetime), up to _REMEMBERED of them.
    """
    value: str = event.value
    found = resolved.get(value, _NO_KEY)
    if found is not _NO_KEY:
        return found
    found = _resolve(event, value)
    if len(resolved) < _REMEMBERED:
        resolved[value] = found
    return found


def _resolve(event: Any, value: str) -> Any:
    """Resolve and construct as SafeLoader's composer and constructor do (`BaseResolver.resolve`)."""
    for tag, pattern in _RESOLVERS.get(value[0] if value else "", []) + _RESOLVERS.get(None, []):
        if pattern.match(value):
            if tag == _INT and len(value) > INT_DIGITS_LIMIT:
                raise _NotPlain(tag)
            construct = _CONSTRUCTOR.yaml_constructors.get(tag)
            if construct is None:  # merge keys (`<<`), `=`: the composing reader's business
                raise _NotPlain(tag)
            node = ScalarNode(tag, value, event.start_mark, event.end_mark, event.style)
            return construct(_CONSTRUCTOR, node)
    return value


def _document(parser: Any, resolved: dict[str, Any]) -> tuple[Any, int | None, list[SegmentPath]]:
    """One document's value from the parser's events, through its DocumentEndEvent.

    The stack holds the open collections; for each open mapping, `keys` holds the key waiting
    for its value and `raws` the keys' text seen so far that did not construct to themselves
    (duplicates are keys whose *text* repeats, as the composing reader finds them).
    """
    stack: list[Any] = []
    keys: list[Any] = []
    raws: list[set[str] | None] = []
    texts: list[str | None] = []  # the text of each open mapping's current key, for duplicate paths
    duplicates: list[SegmentPath] = []
    root: Any = None
    root_line: int | None = None
    get = parser.get_event
    while True:
        event = get()
        kind = event.__class__
        if kind is ScalarEvent:
            if event.anchor is not None or event.tag is not None:
                raise _NotPlain("anchor or tag")
            item = event.value
            if event.implicit[0] and (_WILDCARD or not item or item[0] in _RESOLVABLE):  # plain, maybe not a string
                item = _scalar(event, resolved)
        elif kind is MappingStartEvent or kind is SequenceStartEvent:
            if event.anchor is not None or event.tag is not None:
                raise _NotPlain("anchor or tag")
            if stack and keys[-1] is _NO_KEY and stack[-1].__class__ is dict:
                raise _NotPlain("a collection as a mapping key")
            if len(stack) >= DEPTH_LIMIT:
                raise _NotPlain("deep")
            if root_line is None:
                root_line = event.start_mark.line + 1
            stack.append({} if kind is MappingStartEvent else [])
            keys.append(_NO_KEY)
            raws.append(None)
            texts.append(None)
            continue
        elif kind is MappingEndEvent or kind is SequenceEndEvent:
            item = stack.pop()
            keys.pop()
            raws.pop()
            texts.pop()
        elif kind is DocumentEndEvent:
            return root, root_line, duplicates
        elif kind is AliasEvent:
            raise _NotPlain("alias")
        else:  # pragma: no cover - libyaml emits no other event inside a document
            raise _NotPlain(kind.__name__)
        if not stack:
            root = item
            if root_line is None:
                root_line = event.start_mark.line + 1
            continue
        parent = stack[-1]
        if parent.__class__ is list:
            parent.append(item)
        elif keys[-1] is _NO_KEY:  # `item` is a key (a scalar: collections as keys were refused above)
            text = event.value
            odd = raws[-1]
            if text in parent or (odd is not None and text in odd):
                duplicates.append(_path(stack, texts, text))
            if item.__class__ is not str:
                if odd is None:
                    odd = raws[-1] = set()
                odd.add(text)
            keys[-1] = item
            texts[-1] = text
        else:
            parent[keys[-1]] = item
            keys[-1] = _NO_KEY


def _path(stack: list[Any], texts: list[str | None], last: str) -> SegmentPath:
    """The path (keys as written, list positions) to a key being added to the innermost mapping."""
    path: list[str | int] = []
    for container, text in zip(stack[:-1], texts[:-1], strict=True):
        path.append(len(container) if container.__class__ is list else str(text))
    return (*path, last)


class DocumentLines(Mapping[SegmentPath, int]):
    """Field paths (keys as written, list positions) -> 1-based lines of one document, read when first asked.

    The root's line is known without reading. Any other line reads the document's own text again
    (from its start to the next document's) for lines only; should that text not read as one
    document, the whole stream is read for this one document's lines.
    """

    def __init__(self, text: str, start: Any, root_line: int | None, position: int) -> None:
        self._text = text
        self._start = start.index - start.column  # from the start of its line, so indentation reads alike
        self._first_line = start.line
        self._root_line = root_line
        self._position = position
        self._end: int | None = None
        self._lines: dict[SegmentPath, int] | None = None

    def ends_at(self, end: Any) -> None:
        """Where the next document starts (its start mark): this one's text ends before that line."""
        self._end = end.index - end.column

    def _read(self) -> dict[SegmentPath, int]:
        if self._lines is None:
            found = _lines_of(self._text[self._start : self._end], self._first_line)
            if len(found) == 1 and found[0].get(()) == self._root_line:
                self._lines = found[0]
            else:
                every = _lines_of(self._text, 0)
                self._lines = every[self._position] if self._position < len(every) else {}
        return self._lines

    def get(self, key: SegmentPath, default: Any = None) -> Any:
        if key == () and self._root_line is not None:
            return self._root_line
        return self._read().get(key, default)

    def __getitem__(self, key: SegmentPath) -> int:
        if key == () and self._root_line is not None:
            return self._root_line
        return self._read()[key]

    def __iter__(self) -> Iterator[SegmentPath]:
        return iter(self._read())

    def __len__(self) -> int:
        return len(self._read())


def _lines_of(text: str, first_line: int) -> list[dict[SegmentPath, int]]:
    """The field lines of every document of a plain YAML text (lines counted from `first_line`).

    As the composing reader records them: a key's line for its path, else the line the value
    starts on; the root's line for `()`. Under a key written twice, the lines are those of the later
    value (the one kept).
    """
    assert _CParser is not None  # only documents read_plain read ask
    parser = _CParser(text)
    out: list[dict[SegmentPath, int]] = []
    try:
        parser.get_event()
        while not isinstance(parser.get_event(), StreamEndEvent):
            lines: dict[SegmentPath, int] = {}
            # Each open collection: [its path, next list position (None: a mapping), the key's path
            # while its value is awaited (None: a key is awaited)].
            stack: list[list[Any]] = []
            while True:
                event = parser.get_event()
                kind = event.__class__
                if kind is DocumentEndEvent:
                    break
                if kind is MappingEndEvent or kind is SequenceEndEvent:
                    stack.pop()
                    continue
                line = event.start_mark.line + 1 + first_line
                here: SegmentPath = ()
                if stack:
                    top = stack[-1]
                    if top[1] is not None:
                        here = (*top[0], top[1])
                        top[1] += 1
                    elif top[2] is None:  # a mapping's key
                        key = top[2] = (*top[0], event.value)
                        if key in lines:  # written twice: the value kept is the later one, so are its lines
                            for path in [p for p in lines if p[: len(key)] == key]:
                                del lines[path]
                        lines[key] = line
                        continue
                    else:
                        here, top[2] = top[2], None
                lines.setdefault(here, line)
                if kind is MappingStartEvent:
                    stack.append([here, None, None])
                elif kind is SequenceStartEvent:
                    stack.append([here, 0, None])
            out.append(lines)
    except yaml.YAMLError:
        pass  # lines up to the error are all there are
    finally:
        parser.dispose()
    return out
