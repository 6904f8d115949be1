"""Configuration documents: YAML or API objects in, validated `Document`s and every `Problem` out. Pure.

Role: the one entry point for NodePool and EC2NodeClass configuration, whatever its origin
(files, the DynamoDB config table, custom objects in the cluster). A source yields raw manifests;
`parse_manifest` checks the envelope (apiVersion, kind, metadata) and hands the spec to the
kind's parser. Nothing stops at the first problem: a `Loaded` carries every valid document *and*
every problem, so a caller can show all of them; callers that store or act must refuse the whole
set unless `Loaded.ok` (see `Loaded.require`).

Accepted kinds: NodePool (`karpenter.sh/v1`, `nodewright.io/v1`), EC2NodeClass
(`karpenter.k8s.aws/v1`, `nodewright.io/v1`) and NodeOverlay (`karpenter.sh/v1alpha1`,
validated and kept, not applied yet), so unchanged Karpenter manifests work; CapacityBuffer
(`autoscaling.x-k8s.io/v1beta1`, `v1alpha1`) and the PodTemplates (`v1`) buffers name.

What `kubectl get -o yaml` or `-o json` prints is input too: a stream may be JSON, a `kind: List`
(or `NodePoolList`, any `*List`) stands for each of its `items`, and the fields the server writes
(`status`, `uid`, `resourceVersion`, `managedFields`, the last-applied annotation, ...) are
accepted and left out of the stored form. Unknown fields are warnings (`Loaded.warnings`) and are
dropped, as the API server drops them; `Loaded.strict()` makes them problems.

Files: this one is the envelope (apiVersion, kind, metadata, lists), `Document`, `Loaded` and
`combine`, and the dispatch to the kinds' parsers (`nodepool.py`, `nodeclass.py`,
`nodeoverlay.py`, ..., through `PARSERS`); `stream.py` is the text half: YAML or JSON text read
into `Manifest`s with the line of each field (hostile input refused before anything walks it),
`parse_yaml`, which reads and parses in one call, and `read_stream`.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import yaml

from nodewright.config import fields as f
from nodewright.config.capacitybuffer import parse_capacitybuffer, parse_podtemplate
from nodewright.config.nodeclass import parse_nodeclass
from nodewright.config.nodeoverlay import parse_nodeoverlay
from nodewright.config.nodepool import parse_nodepool
from nodewright.config.problems import SHOWN_KEY, At, ConfigError, Problem, SegmentPath, clip, format_path, show
from nodewright.model.capacitybuffer import CapacityBuffer, PodTemplate
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodeoverlay import NodeOverlay
from nodewright.model.nodepool import NodePool

NODEPOOL = "NodePool"
EC2NODECLASS = "EC2NodeClass"
NODEOVERLAY = "NodeOverlay"
CAPACITYBUFFER = "CapacityBuffer"
PODTEMPLATE = "PodTemplate"
API_VERSIONS: Mapping[str, tuple[str, ...]] = {
    NODEPOOL: ("karpenter.sh/v1", "nodewright.io/v1"),
    EC2NODECLASS: ("karpenter.k8s.aws/v1", "nodewright.io/v1"),
    NODEOVERLAY: ("karpenter.sh/v1alpha1",),
    CAPACITYBUFFER: ("autoscaling.x-k8s.io/v1beta1", "autoscaling.x-k8s.io/v1alpha1"),
    PODTEMPLATE: ("v1",),
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
# A list as kubectl prints it (`kind: List`, or `NodePoolList`, `DeploymentList`, ...) and its ListMeta.
_LIST = ("apiVersion", "kind", "metadata", "items")
_LIST_METADATA = ("resourceVersion", "continue", "remainingItemCount", "selfLink")

Model = NodePool | EC2NodeClass | NodeOverlay | CapacityBuffer | PodTemplate
# kind -> its spec parser: (cursor at the document, name, metadata, spec, apiVersion) -> model or None.
PARSERS: Mapping[str, Callable[[At, str, Mapping[str, Any], Any, str], Model | None]] = {
    NODEPOOL: parse_nodepool,
    EC2NODECLASS: parse_nodeclass,
    NODEOVERLAY: parse_nodeoverlay,
    CAPACITYBUFFER: parse_capacitybuffer,
    PODTEMPLATE: parse_podtemplate,
}
# A PodTemplate's body is `template`, not `spec`.
_BODY = {PODTEMPLATE: "template"}


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
    """The result of reading configuration: every valid document, every problem and every warning.

    Warnings (unknown fields, fields Nodewright does not act on) never make a document invalid.
    """

    documents: tuple[Document, ...] = ()
    problems: tuple[Problem, ...] = ()
    warnings: tuple[Problem, ...] = ()

    @property
    def ok(self) -> bool:
        """True when there are no problems at all (warnings allowed)."""
        return not self.problems

    @property
    def findings(self) -> tuple[Problem, ...]:
        """Every problem and warning, file by file in the order read, each file top to bottom."""
        order: dict[str, int] = {}
        for found in (*self.problems, *self.warnings):
            order.setdefault(found.source, len(order))
        return tuple(
            sorted(
                (*self.problems, *self.warnings),
                key=lambda p: (order[p.source], p.line if p.line is not None else 0),
            )
        )

    def strict(self) -> Loaded:
        """The same reading with every warning counted as a problem (`--strict`)."""
        if not self.warnings:
            return self
        promoted = tuple(replace(w, warning=False) for w in self.warnings)
        return Loaded(self.documents, Loaded(problems=(*self.problems, *promoted)).findings)

    def require(self) -> tuple[Document, ...]:
        """The documents, or ConfigError with every problem when there is any."""
        if self.problems:
            raise ConfigError(self.problems)
        return self.documents

    def of_kind(self, kind: str) -> tuple[Document, ...]:
        """The documents of one kind."""
        return tuple(d for d in self.documents if d.kind == kind)


def document_label(body: Any, index: int, within: str = "") -> str:
    """How problems name a document: `Kind/name`, or `Kind #n` / `document #n` when unnamed.

    `within` places an unnamed list item: `NodePool #1 items[2]`.
    """
    kind = body.get("kind") if isinstance(body, Mapping) else None
    metadata = body.get("metadata") if isinstance(body, Mapping) else None
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    kind_text = clip(kind, SHOWN_KEY) if isinstance(kind, str) and kind else None
    if kind_text and isinstance(name, str) and name:
        return f"{kind_text}/{clip(name, SHOWN_KEY)}"
    return f"{kind_text or 'document'} #{index + 1}{' ' + within if within else ''}"


def line_of(lines: Mapping[SegmentPath, int] | None, segments: SegmentPath) -> int | None:
    """The line of the deepest known segment of `segments` (None without line information)."""
    if lines is None:
        return None
    for end in range(len(segments), -1, -1):
        found = lines.get(segments[:end])
        if found is not None:
            return found
    return None


@dataclass(frozen=True, slots=True)
class Manifest:
    """One object as read: a whole YAML/JSON document, or one item of a `kind: List` in it.

    `lines` maps the object's own field paths to 1-based lines; `label` names it in problems.
    """

    body: Any
    index: int
    label: str
    lines: Mapping[SegmentPath, int] = field(default_factory=dict)

    @property
    def kind(self) -> Any:
        """The object's `kind` as written (any type: checking it is the reader's job)."""
        return self.body.get("kind") if isinstance(self.body, Mapping) else None

    @property
    def line(self) -> int | None:
        """The line the object starts on."""
        return line_of(self.lines, ())


def is_list(body: Any) -> bool:
    """True for what `kubectl get` prints for several objects: `kind: List`, `NodePoolList`, any `*List`."""
    kind = body.get("kind") if isinstance(body, Mapping) else None
    return isinstance(kind, str) and kind.endswith("List")


def _problems(
    sink: list[tuple[SegmentPath, str]], source: str, label: str, lines: Mapping[SegmentPath, int], *, warning: bool
) -> list[Problem]:
    found = [
        Problem(source, label, format_path(segments), message, line_of(lines, segments), warning)
        for segments, message in sink
    ]
    # In file order, so the list reads top to bottom (stable: same-line problems keep their order).
    found.sort(key=lambda p: p.line if p.line is not None else 0)
    return found


def unwrap(
    body: Any, *, source: str, index: int = 0, lines: Mapping[SegmentPath, int] | None = None
) -> tuple[list[Manifest], Loaded]:
    """The objects a document stands for (itself, or each item of a List) and the List's own problems.

    Items of a typed list (`NodePoolList`) without kind or apiVersion, as the API returns them,
    take the list's.
    """
    lines = lines if lines is not None else {}
    if not is_list(body):
        return [Manifest(body, index, document_label(body, index), lines)], Loaded()
    label = document_label(body, index)
    at = At.root()
    top = f.kube_obj(at, body, _LIST) or {}
    list_kind = f.string(at / "kind", top.get("kind")) or ""
    api_version = f.string(at / "apiVersion", top.get("apiVersion"))
    f.kube_obj(at / "metadata", top.get("metadata"), _LIST_METADATA)
    raw_items = f.array(at / "items", f.required(at, top, "items")) or []
    item_kind = list_kind.removesuffix("List") if list_kind != "List" else None
    manifests: list[Manifest] = []
    for position, raw in enumerate(raw_items):
        item = raw
        if item_kind and isinstance(raw, Mapping):
            defaults = {"kind": item_kind, **({"apiVersion": api_version} if api_version else {})}
            item = {**defaults, **raw}
        if is_list(item):  # kubectl never nests lists; an item is an object of its own kind
            (at / "items" / position / "kind").error("a list inside a list's items is not supported")
            continue
        label_within = document_label(item, index, f"items[{position}]")
        manifests.append(Manifest(item, index, label_within, _Within(lines, ("items", position))))
    return manifests, Loaded(
        problems=tuple(_problems(at.sink, source, label, lines, warning=False)),
        warnings=tuple(_problems(at.warnings, source, label, lines, warning=True)),
    )


def parse_manifest(
    body: Any,
    *,
    source: str,
    index: int = 0,
    lines: Mapping[SegmentPath, int] | None = None,
) -> Loaded:
    """Validate one manifest (a List: each of its items); a Loaded with its Documents, problems and warnings.

    `lines` maps field paths to 1-based line numbers (from YAML) so problems can point at them.
    """
    manifests, loaded = unwrap(body, source=source, index=index, lines=lines)
    return combine([loaded, *(parse_document(m, source) for m in manifests)])


def _pruned(body: Any, unknown: list[SegmentPath]) -> Any:
    """A copy of `body` without the fields at the `unknown` paths (what the API server would store)."""
    out = copy.deepcopy(body)
    for path in unknown:
        parent = out
        for segment in path[:-1]:
            parent = parent[segment]
        parent.pop(path[-1], None)
    return out


def parse_document(manifest: Manifest, source: str) -> Loaded:
    """Validate one NodePool or EC2NodeClass object; a Loaded with its Document, or its problems."""
    body, index, label, lines = manifest.body, manifest.index, manifest.label, manifest.lines
    at = At.root()
    model: Model | None = None
    kind: str | None = None
    api_version: str | None = None
    name: str | None = None
    body_field = _BODY.get(str(body.get("kind")), "spec") if isinstance(body, Mapping) else "spec"
    top = f.kube_obj(at, body, _TOP if body_field == "spec" else (*_TOP[:3], body_field))
    if top is not None:
        kind = f.string(at / "kind", f.required(at, top, "kind"), enum=KINDS)
        api_version = f.string(at / "apiVersion", f.required(at, top, "apiVersion"))
        if kind is not None and api_version is not None and api_version not in API_VERSIONS[kind]:
            (at / "apiVersion").error(f"{show(api_version)} is not one of {', '.join(API_VERSIONS[kind])} for {kind}")
            api_version = None
        metadata = f.kube_obj(at / "metadata", f.required(at, top, "metadata"), _METADATA) or {}
        max_name = 63 if kind == NODEPOOL else 253  # a NodePool's name is also a node label value
        name = f.dns_subdomain(
            at / "metadata" / "name", f.required(at / "metadata", metadata, "name"), max_length=max_name
        )
        f.string_map(at / "metadata" / "labels", metadata.get("labels"))
        f.string_map(at / "metadata" / "annotations", metadata.get("annotations"))
        if kind is not None and api_version is not None:
            model = PARSERS[kind](at, name or "", metadata, top.get(body_field), api_version)
    warnings = tuple(_problems(at.warnings, source, label, lines, warning=True))
    if at.failed_since() or model is None or kind is None or api_version is None or name is None:
        return Loaded(problems=tuple(_problems(at.sink, source, label, lines, warning=False)), warnings=warnings)
    stored = _pruned(dict(body), at.unknown)
    document = Document(source, index, kind, name, api_version, stored, model, manifest.line)
    return Loaded(documents=(document,), warnings=warnings)


class _Within(Mapping[SegmentPath, int]):
    """The lines of the object at `prefix` of a larger one, keyed by its own paths (a view, nothing copied)."""

    def __init__(self, outer: Mapping[SegmentPath, int], prefix: SegmentPath) -> None:
        self._outer = outer
        self._prefix = prefix

    def __getitem__(self, key: SegmentPath) -> int:
        return self._outer[(*self._prefix, *key)]

    def __iter__(self) -> Iterator[SegmentPath]:
        size = len(self._prefix)
        return (path[size:] for path in self._outer if path[:size] == self._prefix)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def combine(parts: Iterable[Loaded]) -> Loaded:
    """Several sources as one configuration; a `Kind/name` defined twice is a problem."""
    documents: list[Document] = []
    problems: list[Problem] = []
    warnings: list[Problem] = []
    first: dict[str, Document] = {}
    for part in parts:
        problems.extend(part.problems)
        warnings.extend(part.warnings)
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
    return Loaded(tuple(documents), tuple(problems), tuple(warnings))


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
