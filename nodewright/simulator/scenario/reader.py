"""Reading one scenario document: the top-level keys, the NodePools and EC2NodeClasses it holds or
names, and the checks that need the whole scenario.

`ScenarioReader.read` walks the document once, handing each list to its entry reader
(`workloads.py` for workloads and PodDisruptionBudgets, `entries.py` for
interruptions, initial nodes, capacity errors, faults and functions) and collecting every problem
with the file, the document (`Scenario/<name>`), the field and its line (from the YAML node tree,
`_lines`). NodePools and EC2NodeClasses go through `nodewright.config.documents`, the parsers of
`nodewright nodepool validate`, so their problems read the same. Pure apart from reading files.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from nodewright.config import fields as f
from nodewright.config.documents import EC2NODECLASS, NODEPOOL, Loaded, combine, parse_manifest
from nodewright.config.problems import At, Problem, SegmentPath, format_path, show
from nodewright.config.stream import parse_yaml
from nodewright.model.capacitybuffer import CapacityBuffer, PodTemplate
from nodewright.model.dra import DeviceClass, ResourceClaim, ResourceClaimTemplate
from nodewright.model.errors import InvalidValue
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodeoverlay import NodeOverlay
from nodewright.model.nodepool import NodePool
from nodewright.model.pod import parse_timestamp
from nodewright.simulator.scenario.entries import (
    read_capacity_error,
    read_capacity_reservation,
    read_fault,
    read_functions,
    read_initial_nodes,
    read_interruption,
    read_node_failure,
)
from nodewright.simulator.scenario.fields import read_duration, read_number
from nodewright.simulator.scenario.model import (
    CONSOLIDATION_MODES,
    DEFAULT_SPOT_POOL_DEPTH,
    DEFAULT_START,
    DEFAULT_ZONES,
    KUBE_APIS,
    SCENARIO_API_VERSION,
    SCENARIO_KIND,
    CapacityError,
    Interruption,
    NodePoolChange,
    Scenario,
)
from nodewright.simulator.scenario.workloads import read_pdb, read_workloads

# The top-level keys a scenario may have.
_DEVICE_PARSERS = {
    "DeviceClass": DeviceClass.parse,
    "ResourceClaim": ResourceClaim.parse,
    "ResourceClaimTemplate": ResourceClaimTemplate.parse,
}
_TOP = (
    "apiVersion",
    "kind",
    "name",
    "description",
    "duration",
    "seed",
    "start",
    "boot_delay",
    "start_delay",
    "zones",
    "nodepools",
    "nodeclasses",
    "workloads",
    "devices",
    "pdbs",
    "initial_nodes",
    "interruptions",
    "capacity_errors",
    "capacity_reservations",
    "functions",
    "consolidation",
    "sample_interval",
    "consolidation_min_savings",
    "consolidation_min_savings_percent",
    "spot_to_spot_consolidation",
    "deletion_cost_steering",
    "spot_pool_depth",
    "kube_api",
    "cpu_charge",
    "faults",
    "nodepool_changes",
    "node_failures",
    "repair_max_unhealthy_percent",
    "node_roles",
    "ami_releases",
)
_CHANGE = ("at", "manifest")


def _lines(node: yaml.Node, here: SegmentPath, out: dict[SegmentPath, int]) -> None:
    out.setdefault(here, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                child = (*here, str(key_node.value))
                out[child] = key_node.start_mark.line + 1
                _lines(value_node, child, out)
    elif isinstance(node, yaml.SequenceNode):
        for position, item in enumerate(node.value):
            _lines(item, (*here, position), out)


def _line(lines: Mapping[SegmentPath, int], segments: SegmentPath) -> int | None:
    for end in range(len(segments), -1, -1):
        found = lines.get(segments[:end])
        if found is not None:
            return found
    return None


class ScenarioReader:
    """Reads one scenario file, collecting problems from it and from every file it names."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.base = path.parent
        self.problems: list[Problem] = []
        self.lines: dict[SegmentPath, int] = {}
        self.label = "scenario"
        # CapacityBuffers and PodTemplates among the configuration documents (`_config`).
        self.buffers: tuple[CapacityBuffer, ...] = ()
        self.templates: tuple[PodTemplate, ...] = ()
        self.overlays: tuple[NodeOverlay, ...] = ()

    # -- the document ------------------------------------------------------------------------------

    def read(self, text: str) -> Scenario | None:
        try:
            node = yaml.compose(text, Loader=yaml.SafeLoader)
            body = yaml.safe_load(text)
        except yaml.YAMLError as error:
            mark = getattr(error, "problem_mark", None)
            reason = getattr(error, "problem", None) or str(error)
            line = mark.line + 1 if mark is not None else None
            self.problems.append(Problem(str(self.path), "", "", f"invalid YAML: {reason}", line))
            return None
        if node is not None:
            _lines(node, (), self.lines)
        at = At.root()
        top = f.obj(at, body, _TOP)
        if body is None or top is None:
            if body is None:
                at.error("the scenario is empty")
            self._collect(at)
            return None
        for key, expected in (("apiVersion", SCENARIO_API_VERSION), ("kind", SCENARIO_KIND)):
            if key in top and top[key] != expected:
                (at / key).error(f"must be {expected}, got {show(top[key])}")
        name = f.dns_subdomain(at / "name", f.required(at, top, "name"), max_length=63)
        if name:
            self.label = f"Scenario/{name}"
        duration = read_duration(at / "duration", f.required(at, top, "duration"), positive=True)
        description = f.string(at / "description", top.get("description")) or ""
        seed = f.integer(at / "seed", top.get("seed"), minimum=0)
        start = self._start(at / "start", top.get("start", DEFAULT_START))
        boot_delay = read_duration(at / "boot_delay", top.get("boot_delay"))
        start_delay = read_duration(at / "start_delay", top.get("start_delay"))
        zones = f.string_list(at / "zones", top.get("zones"), min_items=1) or DEFAULT_ZONES
        raw_mode = top.get("consolidation")
        # YAML 1.1 reads a bare `off` as false.
        consolidation = (
            "off" if raw_mode is False else f.string(at / "consolidation", raw_mode, enum=CONSOLIDATION_MODES)
        )
        sample = read_duration(at / "sample_interval", top.get("sample_interval"), positive=True)
        min_savings = read_number(
            at / "consolidation_min_savings", top.get("consolidation_min_savings"), low=0, high=1000
        )
        min_percent = read_number(
            at / "consolidation_min_savings_percent", top.get("consolidation_min_savings_percent"), low=0, high=100
        )
        spot_to_spot = f.boolean(at / "spot_to_spot_consolidation", top.get("spot_to_spot_consolidation"))
        steering = f.boolean(at / "deletion_cost_steering", top.get("deletion_cost_steering"))
        spot_depth = self._spot_pool_depth(at / "spot_pool_depth", top.get("spot_pool_depth"))
        kube_api = f.string(at / "kube_api", top.get("kube_api"), enum=KUBE_APIS)
        cpu_charge = read_number(at / "cpu_charge", top.get("cpu_charge"), low=0, high=100)
        nodepools, nodeclasses = self._config(at, top)
        workloads, daemonsets, pdbs, late_daemonsets = read_workloads(at, top, duration, self._documents)
        for index, raw in enumerate(f.array(at / "pdbs", top.get("pdbs")) or ()):
            for body_at, doc in self._documents(at / "pdbs" / index, raw):
                pdb = read_pdb(body_at, doc)
                if pdb is not None:
                    pdbs.append(pdb)
        devices = self._devices(at / "devices", top.get("devices"))
        initial_nodes = f.items(at / "initial_nodes", top.get("initial_nodes"), read_initial_nodes) or ()
        for index, group in enumerate(initial_nodes):
            if group.zone not in zones:
                (at / "initial_nodes" / index / "zone").error(f"{group.zone!r} is not one of the scenario's zones")
        interruptions = f.items(at / "interruptions", top.get("interruptions"), read_interruption) or ()
        errors = f.items(at / "capacity_errors", top.get("capacity_errors"), read_capacity_error) or ()
        reservations = (
            f.items(at / "capacity_reservations", top.get("capacity_reservations"), read_capacity_reservation) or ()
        )
        for index, reservation in enumerate(reservations):
            if reservation.zone not in zones:
                (at / "capacity_reservations" / index / "zone").error(f"{reservation.zone!r} is not one of zones")
        functions = read_functions(at / "functions", top.get("functions"))
        faults = f.items(at / "faults", top.get("faults"), read_fault) or ()
        changes = self._nodepool_changes(at / "nodepool_changes", top.get("nodepool_changes"), nodepools)
        failures = f.items(at / "node_failures", top.get("node_failures"), read_node_failure) or ()
        for index, failure in enumerate(failures):
            if failure.nodepool is not None and failure.nodepool not in {p.name for p in nodepools}:
                (at / "node_failures" / index / "nodepool").error(f"no NodePool is named {failure.nodepool!r}")
            if failure.zone is not None and failure.zone not in zones:
                (at / "node_failures" / index / "zone").error(f"{failure.zone!r} is not one of zones")
        repair_percent = f.integer(
            at / "repair_max_unhealthy_percent", top.get("repair_max_unhealthy_percent"), minimum=0, maximum=100
        )
        node_roles = f.string_list(at / "node_roles", top.get("node_roles"))
        releases: list[float] = []
        for index, raw in enumerate(f.array(at / "ami_releases", top.get("ami_releases")) or ()):
            release = read_duration(at / "ami_releases" / index, raw)
            if release is not None and duration is not None and release >= duration:
                (at / "ami_releases" / index).error("is not before the scenario's duration")
            elif release is not None:
                releases.append(release)
        self._cross_check(
            at, nodepools=nodepools, nodeclasses=nodeclasses, interruptions=interruptions, errors=errors, zones=zones
        )
        self._collect(at)
        if self.problems or name is None or duration is None:
            return None
        return Scenario(
            name=name,
            source=str(self.path),
            duration=duration,
            description=description,
            seed=seed if seed is not None else 1,
            start=start or parse_timestamp(DEFAULT_START),
            boot_delay=boot_delay if boot_delay is not None else 35.0,
            start_delay=start_delay if start_delay is not None else 20.0,
            zones=tuple(zones),
            nodepools=tuple(nodepools),
            nodeclasses=nodeclasses,
            workloads=tuple(workloads),
            daemonsets=tuple(daemonsets),
            late_daemonsets=tuple(sorted(late_daemonsets, key=lambda item: item[0])),
            pdbs=tuple(pdbs),
            devices=devices,
            initial_nodes=initial_nodes,
            interruptions=interruptions,
            capacity_errors=errors,
            capacity_reservations=reservations,
            consolidation=consolidation or "nodewright",
            sample_interval=sample or 0.0,
            consolidation_min_savings=min_savings or 0.0,
            consolidation_min_savings_percent=min_percent or 0.0,
            spot_to_spot_consolidation=spot_to_spot is not False,
            deletion_cost_steering=steering is not False,
            spot_pool_depth=spot_depth or DEFAULT_SPOT_POOL_DEPTH,
            kube_api=kube_api or "inmemory",
            cpu_charge=cpu_charge or 0.0,
            faults=faults,
            capacitybuffers=self.buffers,
            podtemplates=self.templates,
            nodeoverlays=self.overlays,
            nodepool_changes=changes,
            node_failures=failures,
            ami_releases=tuple(sorted(releases)),
            repair_max_unhealthy_percent=20 if repair_percent is None else repair_percent,
            node_roles=None if node_roles is None else tuple(node_roles),
            provisioner=functions["provisioner"],
            consolidator=functions["consolidator"],
            interruption=functions["interruption"],
        )

    def _devices(self, at: At, raw: Any) -> tuple[Mapping[str, Any], ...]:
        """DRA objects (DeviceClass, ResourceClaim, ResourceClaimTemplate), inline or in files,
        each checked as the API emulator would check it (`model.dra`).
        """
        out: list[Mapping[str, Any]] = []
        for index, item in enumerate(f.array(at, raw) or ()):
            for body_at, doc in self._documents(at / index, item):
                kind = doc.get("kind")
                parse = _DEVICE_PARSERS.get(str(kind))
                if parse is None:
                    (body_at / "kind").error(f"must be one of {', '.join(_DEVICE_PARSERS)}, got {show(kind)}")
                    continue
                try:
                    parse(doc)
                except InvalidValue as error:
                    body_at.error(str(error))
                    continue
                out.append(doc)
        return tuple(out)

    def _spot_pool_depth(self, at: At, raw: Any) -> tuple[int, int] | None:
        entry = f.obj(at, raw, ("min", "max"))
        if entry is None:
            return None
        low = f.integer(at / "min", f.required(at, entry, "min"), minimum=1)
        high = f.integer(at / "max", f.required(at, entry, "max"), minimum=1)
        if low is None or high is None:
            return None
        if high < low:
            (at / "max").error(f"must be at least min ({low}), got {high}")
            return None
        return low, high

    def _collect(self, at: At) -> None:
        for segments, message in at.sink:
            self.problems.append(
                Problem(str(self.path), self.label, format_path(segments), message, _line(self.lines, segments))
            )
        at.sink.clear()

    def _start(self, at: At, value: Any) -> float | None:
        try:
            return parse_timestamp(value)
        except (TypeError, ValueError):
            at.error(f"{show(value)} is not an RFC 3339 time such as {DEFAULT_START}")
            return None

    # -- documents, inline or in files -------------------------------------------------------------

    def _documents(self, at: At, raw: Any) -> list[tuple[At, Mapping[str, Any]]]:
        """The documents an entry stands for: an inline mapping, or every document of a file."""
        if isinstance(raw, Mapping):
            return [(at, raw)]
        if not isinstance(raw, str) or not raw:
            at.error(f"must be a document (an object) or the path of a YAML file, got {show(raw)}")
            return []
        path = self._resolve(raw)
        try:
            text = path.read_text(encoding="utf-8")
            docs = [d for d in yaml.safe_load_all(text) if d is not None]
        except (OSError, UnicodeDecodeError) as error:
            at.error(f"cannot read {path}: {getattr(error, 'strerror', None) or error}")
            return []
        except yaml.YAMLError as error:
            at.error(f"{path}: invalid YAML: {getattr(error, 'problem', None) or error}")
            return []
        out: list[tuple[At, Mapping[str, Any]]] = []
        for index, doc in enumerate(docs):
            if isinstance(doc, Mapping):
                out.append((at, doc))
            else:
                at.error(f"{path}: document #{index + 1} is not an object")
        return out

    def _resolve(self, raw: str) -> Path:
        path = Path(raw)
        return path if path.is_absolute() else self.base / path

    def _config(self, at: At, top: Mapping[str, Any]) -> tuple[list[NodePool], dict[str, EC2NodeClass]]:
        parts: list[Loaded] = []
        for key in ("nodepools", "nodeclasses"):
            for index, raw in enumerate(f.array(at / key, top.get(key)) or ()):
                here = at / key / index
                if isinstance(raw, str) and raw:
                    path = self._resolve(raw)
                    try:
                        parts.append(parse_yaml(path.read_text(encoding="utf-8"), str(path)))
                    except (OSError, UnicodeDecodeError) as error:
                        here.error(f"cannot read {path}: {getattr(error, 'strerror', None) or error}")
                elif isinstance(raw, Mapping):
                    prefix = here.segments
                    lines = {s[len(prefix) :]: n for s, n in self.lines.items() if s[: len(prefix)] == prefix}
                    parts.append(parse_manifest(raw, source=str(self.path), index=index, lines=lines))
                else:
                    here.error(f"must be a NodePool or EC2NodeClass document, or a path to one, got {show(raw)}")
        loaded = combine(parts)
        self.problems.extend(loaded.problems)
        nodepools = [d.model for d in loaded.of_kind(NODEPOOL) if isinstance(d.model, NodePool)]
        nodeclasses = {d.name: d.model for d in loaded.of_kind(EC2NODECLASS) if isinstance(d.model, EC2NodeClass)}
        self.buffers = tuple(d.model for d in loaded.documents if isinstance(d.model, CapacityBuffer))
        self.templates = tuple(d.model for d in loaded.documents if isinstance(d.model, PodTemplate))
        self.overlays = tuple(d.model for d in loaded.documents if isinstance(d.model, NodeOverlay))
        return nodepools, nodeclasses

    def _nodepool_changes(self, at: At, value: Any, nodepools: list[NodePool]) -> tuple[NodePoolChange, ...]:
        """`nodepool_changes`: [{at: 10m, manifest: <a NodePool>}]; each names a NodePool of `nodepools`."""
        names = {p.name for p in nodepools}
        out: list[NodePoolChange] = []
        for index, raw in enumerate(f.array(at, value) or ()):
            here = at / index
            entry = f.obj(here, raw, _CHANGE)
            if entry is None:
                continue
            when = read_duration(here / "at", f.required(here, entry, "at"))
            manifest = f.required(here, entry, "manifest")
            if manifest is None:
                continue
            prefix = (here / "manifest").segments
            lines = {s[len(prefix) :]: n for s, n in self.lines.items() if s[: len(prefix)] == prefix}
            loaded = parse_manifest(manifest, source=str(self.path), index=index, lines=lines)
            self.problems.extend(loaded.problems)
            pools = [d.model for d in loaded.of_kind(NODEPOOL) if isinstance(d.model, NodePool)]
            if loaded.problems:
                continue
            if len(pools) != 1 or len(loaded.documents) != 1:
                (here / "manifest").error("must be one NodePool document")
                continue
            if pools[0].name not in names:
                (here / "manifest").error(f"no NodePool of the scenario is named {pools[0].name!r}")
                continue
            if when is not None:
                out.append(NodePoolChange(when, pools[0]))
        return tuple(sorted(out, key=lambda c: c.at))

    # -- consistency -------------------------------------------------------------------------------

    def _cross_check(
        self,
        at: At,
        *,
        nodepools: list[NodePool],
        nodeclasses: Mapping[str, EC2NodeClass],
        interruptions: tuple[Interruption, ...],
        errors: tuple[CapacityError, ...],
        zones: tuple[str, ...],
    ) -> None:
        if not nodepools:
            (at / "nodepools").error("needs at least one NodePool")
        for pool in nodepools:
            if pool.node_class_ref.name not in nodeclasses:
                (at / "nodepools").error(
                    f"NodePool {pool.name} refers to EC2NodeClass {pool.node_class_ref.name!r}, which is not in "
                    "nodepools or nodeclasses"
                )
        for name, nodeclass in sorted(nodeclasses.items()):
            for why in unsupported(nodeclass):
                (at / "nodeclasses").error(f"EC2NodeClass {name}: {why}")
        names = {p.name for p in nodepools}
        for index, interruption in enumerate(interruptions):
            if interruption.nodepool is not None and interruption.nodepool not in names:
                (at / "interruptions" / index / "nodepool").error(f"no NodePool is named {interruption.nodepool!r}")
            if interruption.zone is not None and interruption.zone not in zones:
                (at / "interruptions" / index / "zone").error(f"{interruption.zone!r} is not one of zones")
        for index, error in enumerate(errors):
            if error.zone != "*" and error.zone not in zones:
                (at / "capacity_errors" / index / "zone").error(f"{error.zone!r} is not one of zones")


def unsupported(nodeclass: EC2NodeClass) -> list[str]:
    """What the simulator's made-up VPC and AMIs cannot satisfy in this EC2NodeClass."""
    out: list[str] = []
    for index, term in enumerate(nodeclass.subnet_selector_terms):
        if term.id or term.name or not term.tags:
            out.append(f"subnetSelectorTerms[{index}]: the simulator selects its subnets by tags only")
    for index, term in enumerate(nodeclass.security_group_selector_terms):
        if term.id or (not term.tags and not term.name):
            out.append(f"securityGroupSelectorTerms[{index}]: the simulator selects its security group by tags or name")
    if not any(term.alias is not None for term in nodeclass.ami_selector_terms):
        out.append("amiSelectorTerms: the simulator resolves AMIs by alias only (e.g. al2023@latest)")
    return out
