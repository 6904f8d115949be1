"""Scenario files for `nodewright simulate`: what the simulated cluster runs and what happens to it.

A scenario is one YAML document (see examples/scenarios/ for complete ones):

    apiVersion: nodewright.io/v1alpha1    # optional; with kind, lets `nodewright plan -f` skip the file
    kind: Scenario
    name: spot-storm                      # required; names the report directory
    description: 30% of spot nodes warned within 5 minutes
    duration: 40m                         # required: virtual time to simulate
    seed: 7                               # which nodes are interrupted, instance ids (default 1)
    start: "2026-01-05T00:00:00Z"         # the virtual clock's start (a Monday, 00:00 UTC)
    boot_delay: 35s                       # launch -> Ready node (default 35s)
    zones: [us-east-1a, us-east-1b, us-east-1c]
    nodepools: [../nodepools/default.yaml]   # paths (relative to this file) or inline documents
    nodeclasses: []                       # the same; either list may hold both kinds
    workloads:
      - manifest: {apiVersion: apps/v1, kind: Deployment, ...}   # or a path; may hold several
        replicas:                         # optional schedule; each entry holds until the next
          - {at: 0s, replicas: 0}
          - {at: 1m, replicas: 1000}
          - {at: 2h, diurnal: {min: 200, max: 2000, period: 24h, peak: 14h, every: 5m}}
    pdbs: [ {apiVersion: policy/v1, kind: PodDisruptionBudget, ...} ]
    initial_nodes:                        # Ready at the start, launched by another autoscaler
      - {instance_type: m5.xlarge, zone: us-east-1a, capacity_type: on-demand, count: 3,
         labels: {karpenter.sh/nodepool: default}}   # no Nodewright tag or label
    interruptions:
      - {at: 10m, fraction: 0.3, within: 5m}   # or count: 3; optional nodepool, zone
    capacity_errors:
      - {instance_type: "*", zone: us-east-1a, capacity_type: spot, from: 0s, until: 2h}
    functions:
      provisioner: {rate: 1m, timeout: 68s}   # also memory (MB), idle_exit (the economy key)
      consolidator: {rate: 1m, timeout: 120s}
      interruption: {timeout: 30s}
    consolidation: nodewright            # karpenter | nodewright | off
    consolidation_min_savings: 0.01      # stability guard, $/h (default 0)
    consolidation_min_savings_percent: 5 # and percent of the removed nodes' price (default 0)
    spot_pool_depth: {min: 5, max: 500}  # spot instances per (type, zone) pool, drawn per seed
    kube_api: inmemory                   # or http: the functions read the cluster through the real
                                         # Kubernetes adapter, served over local HTTP
    faults:                              # failures as AWS and EKS produce them (see "Faults" below)
      - {kind: kube-5xx, rate: 0.05, verbs: [list, evict], from: 10m, until: 1h}
      - {kind: ec2-throttle, rate: 0.2, operations: [CreateFleet]}
      - {kind: crash, rate: 0.1, functions: [provisioner]}

Faults. Each entry injects one kind of failure with probability `rate` per opportunity, only
between `from` and `until` (default: the whole run), drawn from the scenario seed and the entry's
position, so a seed replays the same faults for the same calls:

    kind                  opportunity                 what the functions meet
    kube-5xx              a Kubernetes request        HTTP `status` (default 503) on `verbs`
    kube-429              a Kubernetes request        HTTP 429 with Retry-After `retry_after` (1s)
    kube-timeout          a Kubernetes request        no answer: the connection is dropped
    ec2-throttle          an EC2 call of `operations` RequestLimitExceeded (default operations:
                                                      CreateFleet, TerminateInstances, Describe*)
    ec2-partial-fleet     a CreateFleet               fewer instances than asked, plus Errors
    dynamodb-throttle     a DynamoDB call             `code` (ProvisionedThroughputExceededException
                                                      or ThrottlingException)
    dynamodb-conditional  a conditional write         the write lands but its answer is lost; the
                                                      SDK's retry meets ConditionalCheckFailed
    crash                 an effect (an AWS or         the invocation of `functions` that made it
                          Kubernetes write)           dies right after it, as a dying Lambda
    timeout               an invocation of `functions` killed at a random point before its deadline
    sqs-duplicate         an interruption message     delivered a second time, later
    sqs-reorder           an interruption message     held back up to a minute, delivered after later ones

`verbs` are list, watch, evict and patch (default all four). With `kube_api: inmemory` the
in-memory cluster does with those answers what the real adapter does (retries, then raises its
error); watch faults need `kube_api: http`, where the API emulator answers them to the real
adapter. How each kind enters and what is counted: nodewright/simulator/faults.py. summary.json's
`faults` block has, per kind, what was injected and what it cost, and an audit of duplicate and
orphan instances and claims 15 minutes after the last fault window (`Scenario.faults_end`).

Validation reports every problem at once, each naming the file, line and field, like the rest of
the project's configuration (`nodewright.config.problems`); NodePools and EC2NodeClasses go through
the same parsers as `nodewright nodepool validate`. Pure apart from reading the referenced files.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from nodewright.config import fields as f
from nodewright.config.documents import EC2NODECLASS, NODEPOOL, Loaded, combine, parse_manifest, parse_yaml
from nodewright.config.problems import At, ConfigError, Problem, SegmentPath, format_path, show
from nodewright.model.duration import parse_duration
from nodewright.model.errors import InvalidValue
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodepool import NodePool
from nodewright.model.pod import Pod, parse_timestamp
from nodewright.model.workloads import DaemonSet, PodDisruptionBudget
from nodewright.simulator.fleet import depth

DEFAULT_START = "2026-01-05T00:00:00Z"
DEFAULT_ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
CONSOLIDATION_MODES = ("karpenter", "nodewright", "off")
KUBE_APIS = ("inmemory", "http")
FAULT_KINDS = (
    "kube-5xx",
    "kube-429",
    "kube-timeout",
    "ec2-throttle",
    "ec2-partial-fleet",
    "dynamodb-throttle",
    "dynamodb-conditional",
    "crash",
    "timeout",
    "sqs-duplicate",
    "sqs-reorder",
)
KUBE_VERBS = ("list", "watch", "evict", "patch")
FUNCTIONS = ("provisioner", "consolidator", "interruption")
# EC2 calls throttled by default: every launch, termination and Describe*.
EC2_THROTTLED = ("CreateFleet", "TerminateInstances", "Describe*")
DYNAMODB_THROTTLE_CODES = ("ProvisionedThroughputExceededException", "ThrottlingException")
# The keys each fault kind takes besides kind, rate, from and until.
_FAULT_KEYS: dict[str, tuple[str, ...]] = {
    "kube-5xx": ("verbs", "status"),
    "kube-429": ("verbs", "retry_after"),
    "kube-timeout": ("verbs",),
    "ec2-throttle": ("operations",),
    "dynamodb-throttle": ("code",),
    "crash": ("functions",),
    "timeout": ("functions",),
}
DEFAULT_SPOT_POOL_DEPTH = (5, 500)
# kind -> the owner kind of its pods (whose controller recreates a deleted pod)
REPLICATED = {"Deployment": "ReplicaSet", "ReplicaSet": "ReplicaSet", "StatefulSet": "StatefulSet"}
# Kinds a workload manifest may hold besides workloads; they say nothing about capacity.
_IGNORED_KINDS = frozenset({"Namespace", "Service", "ConfigMap", "Secret", "ServiceAccount", "Ingress"})
SCENARIO_API_VERSION = "nodewright.io/v1alpha1"
SCENARIO_KIND = "Scenario"
_TOP = (
    "apiVersion",
    "kind",
    "name",
    "description",
    "duration",
    "seed",
    "start",
    "boot_delay",
    "zones",
    "nodepools",
    "nodeclasses",
    "workloads",
    "pdbs",
    "initial_nodes",
    "interruptions",
    "capacity_errors",
    "functions",
    "consolidation",
    "sample_interval",
    "consolidation_min_savings",
    "consolidation_min_savings_percent",
    "spot_pool_depth",
    "kube_api",
    "faults",
)


class ScenarioError(ConfigError):
    """A scenario with problems; `problems` names each one's file, line and field."""


@dataclass(frozen=True, slots=True)
class Diurnal:
    """A daily curve between `minimum` and `maximum` replicas, highest `peak` seconds after the
    scenario starts (and every `period` after that), re-evaluated every `every` seconds.
    """

    minimum: int
    maximum: int
    period: float = 86400.0
    peak: float = 43200.0
    every: float = 60.0

    def replicas(self, t: float) -> int:
        """The replica count `t` seconds after the start."""
        wave = (1 + math.cos(2 * math.pi * (t - self.peak) / self.period)) / 2
        return round(self.minimum + (self.maximum - self.minimum) * wave)


@dataclass(frozen=True, slots=True)
class Segment:
    """From `at` until the next segment: a fixed replica count, or a diurnal curve."""

    at: float
    replicas: int | None = None
    diurnal: Diurnal | None = None


@dataclass(frozen=True, slots=True)
class Workload:
    """A Deployment, ReplicaSet or StatefulSet: its pod template and its replicas over time."""

    kind: str
    namespace: str
    name: str
    template: Pod
    replicas: int
    schedule: tuple[Segment, ...] = ()

    @property
    def key(self) -> str:
        """`namespace/name`."""
        return f"{self.namespace}/{self.name}"

    def replicas_at(self, t: float) -> int:
        """How many replicas the workload wants `t` seconds after the start."""
        current: Segment | None = None
        for segment in self.schedule:
            if segment.at <= t:
                current = segment
        if current is None:
            return self.replicas
        if current.diurnal is not None:
            return current.diurnal.replicas(t)
        return current.replicas if current.replicas is not None else self.replicas

    def change_times(self, duration: float) -> list[float]:
        """When the wanted count may change: each segment's start, and each `every` of a curve."""
        times: list[float] = []
        for index, segment in enumerate(self.schedule):
            end = self.schedule[index + 1].at if index + 1 < len(self.schedule) else duration
            times.append(segment.at)
            if segment.diurnal is not None:
                t = segment.at + segment.diurnal.every
                while t < end:
                    times.append(t)
                    t += segment.diurnal.every
        return [t for t in times if 0 <= t <= duration]


@dataclass(frozen=True, slots=True)
class Interruption:
    """Spot interruptions from `at` on: `count` spot nodes, or `fraction` of them, rounded up;
    each gets a rebalance recommendation (when `rebalance`), its interruption warning
    `rebalance_lead` seconds later and is terminated `notice` seconds after the warning. The
    nodes' first signals are spread evenly over `within` seconds.
    """

    at: float
    count: int | None = None
    fraction: float | None = None
    within: float = 0.0
    rebalance: bool = True
    rebalance_lead: float = 60.0
    notice: float = 120.0
    nodepool: str | None = None
    zone: str | None = None


@dataclass(frozen=True, slots=True)
class InitialNodes:
    """`count` Ready nodes present at the start, launched by another autoscaler (e.g. Karpenter):
    instances without Nodewright's tags, Nodes with `labels` and none of Nodewright's labels.
    """

    instance_type: str
    zone: str
    capacity_type: str = "on-demand"
    count: int = 1
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CapacityError:
    """EC2 has no capacity for matching offerings between `start` and `end` (None: the run's end).
    `*` matches any instance type, zone or capacity type.
    """

    instance_type: str = "*"
    zone: str = "*"
    capacity_type: str = "*"
    start: float = 0.0
    end: float | None = None
    code: str = "InsufficientInstanceCapacity"

    def matches(self, instance_type: str, zone: str, capacity_type: str, t: float) -> bool:
        """True when this error applies to the offering `t` seconds after the start."""
        return (
            self.instance_type in ("*", instance_type)
            and self.zone in ("*", zone)
            and self.capacity_type in ("*", capacity_type)
            and self.start <= t
            and (self.end is None or t < self.end)
        )


@dataclass(frozen=True, slots=True)
class Fault:
    """One kind of injected failure (see "Faults" in the module docstring): with probability
    `rate` per opportunity, between `start` and `end` (None: the run's end) seconds after the start.
    Only the fields of its kind are set: `verbs` (kube-*), `status` (kube-5xx), `retry_after`
    (kube-429), `operations` (ec2-throttle), `code` (dynamodb-throttle), `functions` (crash, timeout).
    """

    kind: str
    rate: float
    start: float = 0.0
    end: float | None = None
    verbs: tuple[str, ...] = KUBE_VERBS
    status: int = 503
    retry_after: float = 1.0
    operations: tuple[str, ...] = EC2_THROTTLED
    code: str = DYNAMODB_THROTTLE_CODES[0]
    functions: tuple[str, ...] = FUNCTIONS

    def active(self, t: float) -> bool:
        """True when the fault may strike `t` seconds after the start."""
        return self.start <= t and (self.end is None or t < self.end)

    def throttles(self, operation: str) -> bool:
        """True when `operation` (an EC2 API name) is one this fault throttles (`Describe*` matches
        every Describe call).
        """
        return any(operation == o or (o.endswith("*") and operation.startswith(o[:-1])) for o in self.operations)


@dataclass(frozen=True, slots=True)
class FunctionSettings:
    """How a function runs: invoked every `rate` seconds (0: never on a schedule), for at most
    `timeout` seconds; `concurrency` bounds simultaneous SQS-driven invocations.
    """

    rate: float
    timeout: float
    offset: float = 0.0
    concurrency: int = 5
    batch_size: int = 10
    # The function's memory (what Lambda bills per second, and `self_cost` prices), and for the
    # provisioner the economy key `idle_exit` (seconds; None: wait for pods until the deadline).
    memory_mb: int = 1024
    idle_exit: float | None = None


@dataclass(frozen=True, slots=True)
class Scenario:
    """A validated scenario (see the module docstring)."""

    name: str
    source: str
    duration: float
    description: str = ""
    seed: int = 1
    start: float = 0.0
    boot_delay: float = 35.0
    zones: tuple[str, ...] = DEFAULT_ZONES
    nodepools: tuple[NodePool, ...] = ()
    nodeclasses: Mapping[str, EC2NodeClass] = field(default_factory=dict)
    workloads: tuple[Workload, ...] = ()
    daemonsets: tuple[DaemonSet, ...] = ()
    pdbs: tuple[PodDisruptionBudget, ...] = ()
    initial_nodes: tuple[InitialNodes, ...] = ()
    interruptions: tuple[Interruption, ...] = ()
    capacity_errors: tuple[CapacityError, ...] = ()
    provisioner: FunctionSettings = FunctionSettings(rate=60.0, timeout=68.0)
    consolidator: FunctionSettings = FunctionSettings(rate=60.0, timeout=120.0, offset=30.0)
    interruption: FunctionSettings = FunctionSettings(rate=0.0, timeout=30.0)
    consolidation: str = "nodewright"
    sample_interval: float = 0.0
    # The stability guard, as the deploy settings of the same names set it.
    consolidation_min_savings: float = 0.0
    consolidation_min_savings_percent: float = 0.0
    # Spot capacity of each (instance type, zone) pool: log-uniform in [min, max], drawn from the
    # seed (nodewright.simulator.fleet.depth); what price-capacity-optimized weighs against price.
    spot_pool_depth: tuple[int, int] = DEFAULT_SPOT_POOL_DEPTH
    # How the functions reach the cluster: "inmemory" (the in-memory cluster directly) or "http"
    # (the real KubeCluster adapter, watching the cluster served by nodewright.sim.apiserver).
    kube_api: str = "inmemory"
    faults: tuple[Fault, ...] = ()

    @property
    def faults_end(self) -> float | None:
        """Seconds after the start when the last fault window closes (the run's end for an open
        one); None without faults. The orphan audit counts from here.
        """
        if not self.faults:
            return None
        return max(self.duration if x.end is None else min(x.end, self.duration) for x in self.faults)

    def pool_depth(self, instance_type: str, zone: str) -> int:
        """The spot capacity of one pool (instances), drawn from the seed."""
        low, high = self.spot_pool_depth
        return depth(self.seed, instance_type, zone, low, high)

    def with_seed(self, seed: int) -> Scenario:
        """The same scenario with another seed."""
        return replace(self, seed=seed)

    @property
    def sampling(self) -> float:
        """Seconds between samples of the time series (about 600 points per run)."""
        if self.sample_interval > 0:
            return self.sample_interval
        return min(60.0, max(5.0, round(self.duration / 600)))


# --- reading --------------------------------------------------------------------------------------


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario file; raise ScenarioError listing every problem."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ScenarioError([Problem(str(path), "", "", f"cannot read scenario: {error}")]) from None
    return parse_scenario(text, path)


def parse_scenario(text: str, path: str | Path) -> Scenario:
    """Validate a scenario's text; files it names are read relative to `path`'s directory."""
    reader = _Reader(Path(path))
    scenario = reader.read(text)
    if reader.problems or scenario is None:
        raise ScenarioError(reader.problems)
    return scenario


def _duration(at: At, value: Any, *, positive: bool = False) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        at.error(f"must be a duration such as 90s, 15m or 24h, got {show(value)}")
        return None
    try:
        seconds = parse_duration(value, allow_never=False)
    except InvalidValue as error:
        at.error(str(error))
        return None
    if seconds is None or seconds < 0 or (positive and seconds <= 0):
        at.error(f"must be a {'positive' if positive else 'non-negative'} duration, got {show(value)}")
        return None
    return seconds


def _number(at: At, value: Any, *, low: float, high: float) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        at.error(f"must be a number, got {show(value)}")
        return None
    if not low <= value <= high:
        at.error(f"must be between {low:g} and {high:g}, got {value}")
        return None
    return float(value)


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


class _Reader:
    """Reads one scenario file, collecting problems from it and from every file it names."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.base = path.parent
        self.problems: list[Problem] = []
        self.lines: dict[SegmentPath, int] = {}
        self.label = "scenario"

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
        duration = _duration(at / "duration", f.required(at, top, "duration"), positive=True)
        description = f.string(at / "description", top.get("description")) or ""
        seed = f.integer(at / "seed", top.get("seed"), minimum=0)
        start = self._start(at / "start", top.get("start", DEFAULT_START))
        boot_delay = _duration(at / "boot_delay", top.get("boot_delay"))
        zones = f.string_list(at / "zones", top.get("zones"), min_items=1) or DEFAULT_ZONES
        raw_mode = top.get("consolidation")
        # YAML 1.1 reads a bare `off` as false.
        consolidation = (
            "off" if raw_mode is False else f.string(at / "consolidation", raw_mode, enum=CONSOLIDATION_MODES)
        )
        sample = _duration(at / "sample_interval", top.get("sample_interval"), positive=True)
        min_savings = _number(at / "consolidation_min_savings", top.get("consolidation_min_savings"), low=0, high=1000)
        min_percent = _number(
            at / "consolidation_min_savings_percent", top.get("consolidation_min_savings_percent"), low=0, high=100
        )
        spot_depth = self._spot_pool_depth(at / "spot_pool_depth", top.get("spot_pool_depth"))
        kube_api = f.string(at / "kube_api", top.get("kube_api"), enum=KUBE_APIS)
        nodepools, nodeclasses = self._config(at, top)
        workloads, daemonsets, pdbs = self._workloads(at, top, duration)
        for index, raw in enumerate(f.array(at / "pdbs", top.get("pdbs")) or ()):
            for body_at, doc in self._documents(at / "pdbs" / index, raw):
                pdb = self._pdb(body_at, doc)
                if pdb is not None:
                    pdbs.append(pdb)
        initial_nodes = f.items(at / "initial_nodes", top.get("initial_nodes"), self._initial_nodes) or ()
        for index, group in enumerate(initial_nodes):
            if group.zone not in zones:
                (at / "initial_nodes" / index / "zone").error(f"{group.zone!r} is not one of the scenario's zones")
        interruptions = f.items(at / "interruptions", top.get("interruptions"), self._interruption) or ()
        errors = f.items(at / "capacity_errors", top.get("capacity_errors"), self._capacity_error) or ()
        functions = self._functions(at / "functions", top.get("functions"))
        faults = f.items(at / "faults", top.get("faults"), self._fault) or ()
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
            zones=tuple(zones),
            nodepools=tuple(nodepools),
            nodeclasses=nodeclasses,
            workloads=tuple(workloads),
            daemonsets=tuple(daemonsets),
            pdbs=tuple(pdbs),
            initial_nodes=initial_nodes,
            interruptions=interruptions,
            capacity_errors=errors,
            consolidation=consolidation or "nodewright",
            sample_interval=sample or 0.0,
            consolidation_min_savings=min_savings or 0.0,
            consolidation_min_savings_percent=min_percent or 0.0,
            spot_pool_depth=spot_depth or DEFAULT_SPOT_POOL_DEPTH,
            kube_api=kube_api or "inmemory",
            faults=faults,
            **functions,
        )

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
        return nodepools, nodeclasses

    # -- workloads ---------------------------------------------------------------------------------

    def _workloads(
        self, at: At, top: Mapping[str, Any], duration: float | None
    ) -> tuple[list[Workload], list[DaemonSet], list[PodDisruptionBudget]]:
        workloads: list[Workload] = []
        daemonsets: list[DaemonSet] = []
        pdbs: list[PodDisruptionBudget] = []
        seen: set[str] = set()
        for index, raw in enumerate(f.array(at / "workloads", top.get("workloads")) or ()):
            here = at / "workloads" / index
            entry = f.item(here, raw, ("manifest", "replicas"))
            if entry is None:
                continue
            schedule = self._schedule(here / "replicas", entry.get("replicas"), duration)
            found: list[Workload] = []
            for doc_at, doc in self._documents(here / "manifest", f.required(here, entry, "manifest")):
                kind = doc.get("kind")
                if kind in REPLICATED:
                    workload = self._workload(doc_at, doc, str(kind))
                    if workload is not None:
                        found.append(workload)
                elif kind == "DaemonSet":
                    daemonset = self._daemonset(doc_at, doc)
                    if daemonset is not None:
                        daemonsets.append(daemonset)
                elif kind == "PodDisruptionBudget":
                    pdb = self._pdb(doc_at, doc)
                    if pdb is not None:
                        pdbs.append(pdb)
                elif kind not in _IGNORED_KINDS:
                    doc_at.error(
                        f"kind {show(kind)} is not supported: use Deployment, ReplicaSet, StatefulSet, "
                        "DaemonSet or PodDisruptionBudget"
                    )
            if schedule and len(found) != 1:
                (here / "replicas").error(
                    f"a replica schedule needs exactly one Deployment, ReplicaSet or StatefulSet in its "
                    f"manifest, found {len(found)}"
                )
            for workload in found:
                if workload.key in seen:
                    (here / "manifest").error(f"workload {workload.key} is defined more than once")
                    continue
                seen.add(workload.key)
                workloads.append(replace(workload, schedule=schedule or ()))
        return workloads, daemonsets, pdbs

    def _workload(self, at: At, doc: Mapping[str, Any], kind: str) -> Workload | None:
        metadata = doc.get("metadata") or {}
        name = f.dns_subdomain(at / "metadata" / "name", metadata.get("name"))
        if metadata.get("name") is None:
            (at / "metadata" / "name").error("is required")
        namespace = str(metadata.get("namespace") or "default")
        spec = doc.get("spec")
        if not isinstance(spec, Mapping):
            (at / "spec").error("is required")
            return None
        replicas = f.integer(at / "spec" / "replicas", spec.get("replicas", 1), minimum=0)
        template = spec.get("template")
        if not isinstance(template, Mapping):
            (at / "spec" / "template").error("a workload needs a pod template")
            return None
        if name is None or replicas is None:
            return None
        pod = self._template(at / "spec" / "template", template, namespace, name, REPLICATED[kind])
        if pod is None:
            return None
        return Workload(kind, namespace, name, pod, replicas)

    def _template(self, at: At, template: Mapping[str, Any], namespace: str, owner: str, owner_kind: str) -> Pod | None:
        spec = template.get("spec")
        if not isinstance(spec, Mapping) or not spec.get("containers"):
            (at / "spec" / "containers").error("a pod needs at least one container")
            return None
        meta = dict(template.get("metadata") or {})
        meta.update(
            name=f"{owner}-template",
            namespace=namespace,
            ownerReferences=[{"kind": owner_kind, "name": owner, "controller": True}],
        )
        try:
            pod = Pod.parse({"metadata": meta, "spec": spec})
        except (InvalidValue, KeyError, TypeError, ValueError) as error:
            (at / "spec").error(str(error))
            return None
        return replace(pod, phase="Pending", unschedulable=False, node_name="", uid="", created_at=0.0)

    def _daemonset(self, at: At, doc: Mapping[str, Any]) -> DaemonSet | None:
        template = (doc.get("spec") or {}).get("template")
        if not isinstance(template, Mapping) or not (template.get("spec") or {}).get("containers"):
            (at / "spec" / "template" / "spec" / "containers").error("a pod needs at least one container")
            return None
        try:
            return DaemonSet.parse(doc)
        except (InvalidValue, KeyError, TypeError, ValueError) as error:
            at.error(str(error))
            return None

    def _pdb(self, at: At, doc: Mapping[str, Any]) -> PodDisruptionBudget | None:
        if doc.get("kind") != "PodDisruptionBudget":
            (at / "kind").error(f"{show(doc.get('kind'))} is not PodDisruptionBudget")
            return None
        spec = doc.get("spec")
        if not isinstance(spec, Mapping) or ("minAvailable" in spec) == ("maxUnavailable" in spec):
            (at / "spec").error("a PodDisruptionBudget needs exactly one of minAvailable and maxUnavailable")
            return None
        if not isinstance(spec.get("selector"), Mapping):
            (at / "spec" / "selector").error("is required")
            return None
        for key in ("minAvailable", "maxUnavailable"):
            value = spec.get(key)
            if value is None:
                continue
            ok = (isinstance(value, int) and not isinstance(value, bool) and value >= 0) or (
                isinstance(value, str) and value.endswith("%") and value[:-1].isdigit()
            )
            if not ok:
                (at / "spec" / key).error(f"{show(value)} is not a whole number or a percentage such as 20%")
                return None
        try:
            pdb = PodDisruptionBudget.parse(doc)
        except (InvalidValue, KeyError, TypeError, ValueError) as error:
            at.error(str(error))
            return None
        if not pdb.name:
            (at / "metadata" / "name").error("is required")
            return None
        return pdb

    def _schedule(self, at: At, value: Any, duration: float | None) -> tuple[Segment, ...] | None:
        segments = f.items(at, value, self._segment)
        if segments is None:
            return None
        times = [s.at for s in segments]
        if times != sorted(times) or len(set(times)) != len(times):
            at.error("entries must be in increasing order of `at`")
        if duration is not None:
            for index, segment in enumerate(segments):
                if segment.at > duration:
                    (at / index / "at").error(f"is after the end of the scenario ({show(segment.at)} s)")
        return segments

    def _segment(self, at: At, raw: Any) -> Segment | None:
        entry = f.item(at, raw, ("at", "replicas", "diurnal"))
        if entry is None:
            return None
        start = _duration(at / "at", f.required(at, entry, "at"))
        if ("replicas" in entry) == ("diurnal" in entry):
            at.error("needs exactly one of replicas and diurnal")
            return None
        if "replicas" in entry:
            count = f.integer(at / "replicas", entry["replicas"], minimum=0)
            if count is None:
                if entry["replicas"] is None:
                    (at / "replicas").error("is required")
                return None
            return Segment(start, replicas=count) if start is not None else None
        curve = self._diurnal(at / "diurnal", entry["diurnal"])
        return Segment(start, diurnal=curve) if start is not None and curve is not None else None

    def _diurnal(self, at: At, raw: Any) -> Diurnal | None:
        entry = f.item(at, raw, ("min", "max", "period", "peak", "every"))
        if entry is None:
            return None
        low = f.integer(at / "min", f.required(at, entry, "min"), minimum=0)
        high = f.integer(at / "max", f.required(at, entry, "max"), minimum=0)
        period = _duration(at / "period", entry.get("period"), positive=True) or 86400.0
        peak = _duration(at / "peak", entry.get("peak"))
        every = _duration(at / "every", entry.get("every"), positive=True) or 60.0
        if low is None or high is None:
            return None
        if high < low:
            (at / "max").error(f"must be at least min ({low}), got {high}")
            return None
        return Diurnal(low, high, period, peak if peak is not None else period / 2, every)

    # -- events ------------------------------------------------------------------------------------

    def _interruption(self, at: At, raw: Any) -> Interruption | None:
        keys = ("at", "count", "fraction", "within", "rebalance", "rebalance_lead", "notice", "nodepool", "zone")
        entry = f.item(at, raw, keys)
        if entry is None:
            return None
        start = _duration(at / "at", f.required(at, entry, "at"))
        if ("count" in entry) == ("fraction" in entry):
            at.error("needs exactly one of count and fraction")
            return None
        count = f.integer(at / "count", entry.get("count"), minimum=1)
        fraction = _number(at / "fraction", entry.get("fraction"), low=0.0, high=1.0)
        within = _duration(at / "within", entry.get("within"))
        rebalance = f.boolean(at / "rebalance", entry.get("rebalance"))
        lead = _duration(at / "rebalance_lead", entry.get("rebalance_lead"))
        notice = _duration(at / "notice", entry.get("notice"))
        nodepool = f.string(at / "nodepool", entry.get("nodepool"), non_empty=True)
        zone = f.string(at / "zone", entry.get("zone"), non_empty=True)
        if start is None or (count is None and fraction is None):
            return None
        return Interruption(
            at=start,
            count=count,
            fraction=fraction,
            within=within or 0.0,
            rebalance=rebalance if rebalance is not None else True,
            rebalance_lead=lead if lead is not None else 60.0,
            notice=notice if notice is not None else 120.0,
            nodepool=nodepool,
            zone=zone,
        )

    def _initial_nodes(self, at: At, raw: Any) -> InitialNodes | None:
        entry = f.item(at, raw, ("instance_type", "zone", "capacity_type", "count", "labels"))
        if entry is None:
            return None
        instance_type = f.string(at / "instance_type", f.required(at, entry, "instance_type"), non_empty=True)
        zone = f.string(at / "zone", f.required(at, entry, "zone"), non_empty=True)
        capacity_type = f.string(
            at / "capacity_type", entry.get("capacity_type", "on-demand"), enum=("spot", "on-demand", "reserved")
        )
        count = f.integer(at / "count", entry.get("count", 1), minimum=1)
        labels = entry.get("labels") or {}
        if not isinstance(labels, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in labels.items()
        ):
            (at / "labels").error("must map label keys to string values")
            return None
        owned = sorted(k for k in labels if k.startswith("nodewright.io/"))
        if owned:
            (at / "labels").error(f"{', '.join(owned)}: another autoscaler's nodes carry no Nodewright label")
            return None
        if instance_type is None or zone is None or capacity_type is None or count is None:
            return None
        return InitialNodes(instance_type, zone, capacity_type, count, dict(labels))

    def _capacity_error(self, at: At, raw: Any) -> CapacityError | None:
        entry = f.item(at, raw, ("instance_type", "zone", "capacity_type", "from", "until", "code"))
        if entry is None:
            return None
        instance_type = f.string(at / "instance_type", entry.get("instance_type", "*"), non_empty=True)
        zone = f.string(at / "zone", entry.get("zone", "*"), non_empty=True)
        capacity_type = f.string(
            at / "capacity_type", entry.get("capacity_type", "*"), enum=("*", "spot", "on-demand", "reserved")
        )
        start = _duration(at / "from", entry.get("from"))
        end = _duration(at / "until", entry.get("until"))
        code = f.string(at / "code", entry.get("code", "InsufficientInstanceCapacity"), non_empty=True)
        if start is not None and end is not None and end <= start:
            (at / "until").error("must be after `from`")
            return None
        if instance_type is None or zone is None or capacity_type is None or code is None:
            return None
        return CapacityError(instance_type, zone, capacity_type, start or 0.0, end, code)

    def _fault(self, at: At, raw: Any) -> Fault | None:
        if isinstance(raw, Mapping) and raw.get("kind") in FAULT_KINDS:
            extra = _FAULT_KEYS.get(str(raw["kind"]), ())
        else:
            extra = tuple(sorted({k for keys in _FAULT_KEYS.values() for k in keys}))
        entry = f.item(at, raw, ("kind", "rate", "from", "until", *extra))
        if entry is None:
            return None
        # Keys of another kind were reported as unknown by `item`: they are not read again.
        given = {k: v for k, v in entry.items() if k in extra}
        kind = f.string(at / "kind", f.required(at, entry, "kind"), enum=FAULT_KINDS)
        rate = _number(at / "rate", f.required(at, entry, "rate"), low=0.0, high=1.0)
        start = _duration(at / "from", entry.get("from"))
        end = _duration(at / "until", entry.get("until"))
        verbs = self._choices(at / "verbs", given.get("verbs"), KUBE_VERBS)
        functions = self._choices(at / "functions", given.get("functions"), FUNCTIONS)
        operations = f.string_list(at / "operations", given.get("operations"), min_items=1)
        for index, operation in enumerate(operations or ()):
            if not re.fullmatch(r"(CreateFleet|TerminateInstances|Describe[A-Za-z]*\*?)", operation):
                (at / "operations" / index).error(
                    f"{show(operation)} is not CreateFleet, TerminateInstances or a Describe call (Describe* for all)"
                )
                operations = None
        status = f.integer(at / "status", given.get("status"), minimum=500, maximum=599)
        retry_after = _duration(at / "retry_after", given.get("retry_after"))
        code = f.string(at / "code", given.get("code"), enum=DYNAMODB_THROTTLE_CODES)
        if start is not None and end is not None and end <= start:
            (at / "until").error("must be after `from`")
            return None
        read = {"verbs": verbs, "functions": functions, "operations": operations, "status": status, "code": code}
        if kind is None or rate is None or any(given.get(k) is not None and v is None for k, v in read.items()):
            return None
        return Fault(
            kind=kind,
            rate=rate,
            start=start or 0.0,
            end=end,
            verbs=verbs or KUBE_VERBS,
            status=status or 503,
            retry_after=retry_after if retry_after is not None else 1.0,
            operations=operations or EC2_THROTTLED,
            code=code or DYNAMODB_THROTTLE_CODES[0],
            functions=functions or FUNCTIONS,
        )

    def _choices(self, at: At, raw: Any, known: tuple[str, ...]) -> tuple[str, ...] | None:
        """A non-empty list of distinct names from `known`."""
        names = f.string_list(at, raw, min_items=1)
        if names is None:
            return None
        ok = True
        for index, name in enumerate(names):
            if name not in known:
                (at / index).error(f"{show(name)} is not one of {', '.join(known)}")
                ok = False
        if len(set(names)) != len(names):
            at.error("names a value more than once")
            ok = False
        return names if ok else None

    def _functions(self, at: At, raw: Any) -> dict[str, FunctionSettings]:
        entry = f.obj(at, raw, ("provisioner", "consolidator", "interruption")) or {}
        defaults = {
            "provisioner": FunctionSettings(rate=60.0, timeout=68.0, memory_mb=1024),
            "consolidator": FunctionSettings(rate=60.0, timeout=120.0, offset=30.0, memory_mb=1024),
            "interruption": FunctionSettings(rate=0.0, timeout=60.0, memory_mb=512),
        }
        out: dict[str, FunctionSettings] = {}
        for name, default in defaults.items():
            here = at / name
            keys: tuple[str, ...] = (
                ("timeout", "batch_size", "concurrency") if name == "interruption" else ("rate", "timeout", "offset")
            )
            keys += ("memory", "idle_exit") if name == "provisioner" else ("memory",)
            settings = f.obj(here, entry.get(name), keys) or {}
            memory = f.integer(here / "memory", settings.get("memory"), minimum=128, maximum=10240)
            idle_exit = _duration(here / "idle_exit", settings.get("idle_exit"))
            rate = _duration(here / "rate", settings.get("rate"))
            timeout = _duration(here / "timeout", settings.get("timeout"), positive=True)
            offset = _duration(here / "offset", settings.get("offset"))
            batch = f.integer(here / "batch_size", settings.get("batch_size"), minimum=1, maximum=10)
            concurrency = f.integer(here / "concurrency", settings.get("concurrency"), minimum=1, maximum=100)
            if timeout is not None and not 3 <= timeout <= 900:
                (here / "timeout").error("must be between 3s and 15m (Lambda's limits)")
            out[name] = FunctionSettings(
                rate=rate if rate is not None else default.rate,
                timeout=timeout if timeout is not None else default.timeout,
                offset=offset if offset is not None else default.offset,
                concurrency=concurrency or default.concurrency,
                batch_size=batch or default.batch_size,
                memory_mb=memory or default.memory_mb,
                idle_exit=idle_exit,
            )
        return out

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
