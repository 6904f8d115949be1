"""Configuration documents: YAML or API objects in, validated `Document`s and every `Problem` out. Pure.

Role: the one entry point for NodePool and EC2NodeClass configuration, whatever its origin
(files, the DynamoDB config table, custom objects in the cluster). A source yields raw manifests;
`parse_manifest` checks the envelope (apiVersion, kind, metadata) and hands the spec to the
kind's parser. Nothing stops at the first problem: a `Loaded` carries every valid document *and*
every problem, so a caller can show all of them; callers that store or act must refuse the whole
set unless `Loaded.ok` (see `Loaded.require`).

Accepted kinds: NodePool (`karpenter.sh/v1`, `nodewright.io/v1`) and EC2NodeClass
(`karpenter.k8s.aws/v1`, `nodewright.io/v1`), so unchanged Karpenter manifests work.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from nodewright.config import fields as f
from nodewright.config.nodeclass import parse_nodeclass
from nodewright.config.nodepool import parse_nodepool
from nodewright.config.problems import At, ConfigError, Problem, SegmentPath, format_path, show
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodepool import NodePool

NODEPOOL = "NodePool"
EC2NODECLASS = "EC2NodeClass"
API_VERSIONS: Mapping[str, tuple[str, ...]] = {
    NODEPOOL: ("karpenter.sh/v1", "nodewright.io/v1"),
    EC2NODECLASS: ("karpenter.k8s.aws/v1", "nodewright.io/v1"),
}
KINDS = tuple(API_VERSIONS)

_TOP = ("apiVersion", "kind", "metadata", "spec", "status")
# ObjectMeta as the API server returns it; only name, labels and annotations carry meaning here.
_METADATA = (
    "name",
    "generateName",
    "namespace",
    "labels",
    "annotations",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "finalizers",
    "managedFields",
    "ownerReferences",
    "selfLink",
)
# Fields the API server (or kubectl) writes: not part of what a person configured.
_SERVER_METADATA = (
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
)
_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"

Model = NodePool | EC2NodeClass


@dataclass(frozen=True, slots=True)
class Document:
    """One valid configuration document: where it came from, its raw body and its parsed model."""

    source: str
    index: int
    kind: str
    name: str
    api_version: str
    body: Mapping[str, Any]
    model: Model
    line: int | None = None

    @property
    def key(self) -> str:
        """`Kind/name`, unique within a configuration."""
        return f"{self.kind}/{self.name}"

    def to_manifest(self) -> dict[str, Any]:
        """The document as written, minus server-managed metadata and status (a fresh copy)."""
        body = copy.deepcopy(dict(self.body))
        body.pop("status", None)
        metadata = body.get("metadata")
        if isinstance(metadata, dict):
            for name in _SERVER_METADATA:
                metadata.pop(name, None)
            annotations = metadata.get("annotations")
            if isinstance(annotations, dict):
                annotations.pop(_LAST_APPLIED, None)
                if not annotations:
                    metadata.pop("annotations")
        ordered: dict[str, Any] = {
            key: body.pop(key) for key in ("apiVersion", "kind", "metadata", "spec") if key in body
        }
        return {**ordered, **body}

    def to_json(self) -> str:
        """The manifest as compact, key-sorted JSON (the stored form)."""
        return json.dumps(self.to_manifest(), sort_keys=True, separators=(",", ":"))

    def to_yaml(self) -> str:
        """The manifest as YAML; parsing it gives an equal document."""
        return dump_yaml([self.to_manifest()])


@dataclass(frozen=True, slots=True)
class Loaded:
    """The result of reading configuration: every valid document and every problem found."""

    documents: tuple[Document, ...] = ()
    problems: tuple[Problem, ...] = ()

    @property
    def ok(self) -> bool:
        """True when there are no problems at all."""
        return not self.problems

    def require(self) -> tuple[Document, ...]:
        """The documents, or ConfigError with every problem when there is any."""
        if self.problems:
            raise ConfigError(self.problems)
        return self.documents

    def of_kind(self, kind: str) -> tuple[Document, ...]:
        """The documents of one kind."""
        return tuple(d for d in self.documents if d.kind == kind)


def document_label(body: Any, index: int) -> str:
    """How problems name a document: `Kind/name`, or `Kind #n` / `document #n` when unnamed."""
    kind = body.get("kind") if isinstance(body, Mapping) else None
    metadata = body.get("metadata") if isinstance(body, Mapping) else None
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    kind_text = kind if isinstance(kind, str) and kind else None
    if kind_text and isinstance(name, str) and name:
        return f"{kind_text}/{name}"
    return f"{kind_text or 'document'} #{index + 1}"


def _line_of(lines: Mapping[SegmentPath, int] | None, segments: SegmentPath) -> int | None:
    if not lines:
        return None
    for end in range(len(segments), -1, -1):
        found = lines.get(segments[:end])
        if found is not None:
            return found
    return None


def parse_manifest(
    body: Any,
    *,
    source: str,
    index: int = 0,
    lines: Mapping[SegmentPath, int] | None = None,
) -> Loaded:
    """Validate one manifest; a Loaded with its Document, or with every problem it has.

    `lines` maps field paths to 1-based line numbers (from YAML) so problems can point at them.
    """
    label = document_label(body, index)
    at = At.root()
    model: Model | None = None
    kind: str | None = None
    api_version: str | None = None
    name: str | None = None
    top = f.obj(at, body, _TOP)
    if top is not None:
        kind = f.string(at / "kind", f.required(at, top, "kind"), enum=KINDS)
        api_version = f.string(at / "apiVersion", f.required(at, top, "apiVersion"))
        if kind is not None and api_version is not None and api_version not in API_VERSIONS[kind]:
            (at / "apiVersion").error(f"{show(api_version)} is not one of {', '.join(API_VERSIONS[kind])} for {kind}")
            api_version = None
        metadata = f.obj(at / "metadata", f.required(at, top, "metadata"), _METADATA) or {}
        max_name = 63 if kind == NODEPOOL else 253  # a NodePool's name is also a node label value
        name = f.dns_subdomain(
            at / "metadata" / "name", f.required(at / "metadata", metadata, "name"), max_length=max_name
        )
        f.string_map(at / "metadata" / "labels", metadata.get("labels"))
        f.string_map(at / "metadata" / "annotations", metadata.get("annotations"))
        if kind is not None and api_version is not None:
            parse = parse_nodepool if kind == NODEPOOL else parse_nodeclass
            model = parse(at, name or "", metadata, top.get("spec"), api_version)
    line = _line_of(lines, ())
    if at.failed_since() or model is None or kind is None or api_version is None or name is None:
        found = [
            Problem(source, label, format_path(segments), message, _line_of(lines, segments))
            for segments, message in at.sink
        ]
        # In file order, so the list reads top to bottom (stable: same-line problems keep their order).
        found.sort(key=lambda p: p.line if p.line is not None else 0)
        return Loaded(problems=tuple(found))
    document = Document(source, index, kind, name, api_version, copy.deepcopy(dict(body)), model, line)
    return Loaded(documents=(document,))


def _walk(node: yaml.Node, here: SegmentPath, lines: dict[SegmentPath, int], dupes: list[SegmentPath]) -> None:
    lines.setdefault(here, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                continue
            key = str(key_node.value)
            child = (*here, key)
            if key in seen:
                dupes.append(child)
            seen.add(key)
            lines[child] = key_node.start_mark.line + 1
            _walk(value_node, child, lines, dupes)
    elif isinstance(node, yaml.SequenceNode):
        for position, item in enumerate(node.value):
            _walk(item, (*here, position), lines, dupes)


def parse_yaml(text: str, source: str) -> Loaded:
    """Every document of a YAML stream, validated; broken YAML is a problem naming its line."""
    documents: list[Document] = []
    problems: list[Problem] = []
    loader = yaml.SafeLoader(text)
    index = 0
    try:
        while loader.check_node():
            node = loader.get_node()
            lines: dict[SegmentPath, int] = {}
            dupes: list[SegmentPath] = []
            if node is not None:
                _walk(node, (), lines, dupes)
            body = loader.construct_document(node) if node is not None else None
            if body is None:  # an empty document between `---` separators, as kubectl skips it
                continue
            label = document_label(body, index)
            for path in dupes:
                problems.append(Problem(source, label, format_path(path), "duplicate key", lines.get(path)))
            loaded = parse_manifest(body, source=source, index=index, lines=lines)
            documents.extend(loaded.documents)
            problems.extend(loaded.problems)
            index += 1
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
        line = mark.line + 1 if mark is not None else None
        reason = getattr(error, "problem", None) or str(error)
        column = f" (column {mark.column + 1})" if mark is not None else ""
        problems.append(Problem(source, f"document #{index + 1}", "", f"invalid YAML: {reason}{column}", line))
    finally:
        loader.dispose()
    return Loaded(tuple(documents), tuple(problems))


def combine(parts: Iterable[Loaded]) -> Loaded:
    """Several sources as one configuration; a `Kind/name` defined twice is a problem."""
    documents: list[Document] = []
    problems: list[Problem] = []
    first: dict[str, Document] = {}
    for part in parts:
        problems.extend(part.problems)
        for document in part.documents:
            earlier = first.get(document.key)
            if earlier is not None:
                where = f"{earlier.source}:{earlier.line}" if earlier.line is not None else earlier.source
                problems.append(
                    Problem(
                        document.source,
                        document.key,
                        "metadata.name",
                        f"{document.key} is defined more than once (first in {where})",
                        document.line,
                    )
                )
                continue
            first[document.key] = document
            documents.append(document)
    return Loaded(tuple(documents), tuple(problems))


class _Dumper(yaml.SafeDumper):
    """Block style for multi-line strings (user data), so printed documents stay readable."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)


def dump_yaml(manifests: Iterable[Mapping[str, Any]]) -> str:
    """Manifests as a YAML stream (`---` between documents), keys in their given order."""
    return yaml.dump_all(
        [dict(m) for m in manifests], Dumper=_Dumper, sort_keys=False, default_flow_style=False, explicit_start=True
    )
