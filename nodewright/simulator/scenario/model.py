"""The validated scenario: `Scenario` and the entries it holds, the schema `reader.py`
fills in (the YAML format itself is described in the package's docstring, `__init__.py`).

Plain frozen dataclasses with the defaults a key left out takes, and the few questions the world
asks of them (`CapacityError.matches`, `Fault.active`/`throttles`, `Scenario.pool_depth`,
`faults_end`, `sampling`). The workloads' replica schedules are `workload.py`'s. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from nodewright.config import timings as t
from nodewright.config.problems import ConfigError
from nodewright.model.capacitybuffer import CapacityBuffer, PodTemplate
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodeoverlay import NodeOverlay
from nodewright.model.nodepool import NodePool
from nodewright.model.workloads import DaemonSet, PodDisruptionBudget
from nodewright.simulator.scenario.workload import Workload
from nodewright.simulator.standins.fleet import depth

DEFAULT_START = "2026-01-05T00:00:00Z"
DEFAULT_ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
# nodewright.controllers.algorithms says who decides in each; `off` runs no consolidator.
CONSOLIDATION_MODES = ("nodewright", "many-to-one", "karpenter", "automode", "off")
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
DEFAULT_SPOT_POOL_DEPTH = (5, 500)
SCENARIO_API_VERSION = "nodewright.io/v1alpha1"
SCENARIO_KIND = "Scenario"


class ScenarioError(ConfigError):
    """A scenario with problems; `problems` names each one's file, line and field."""


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
class NodeFailure:
    """At `at`, `count` Ready nodes Nodewright launched (of `nodepool` / `zone` when set) break:
    node condition `condition` goes to `status` (Ready Unknown or False: NotReady; another, such
    as the EKS node monitoring agent's KernelReady, False), or with `status_check` ("system",
    "instance" or "ebs") their instance's EC2 status check is impaired. They stay broken until
    they go (world/failures.py).
    """

    at: float
    count: int = 1
    condition: str = "Ready"
    status: str = "Unknown"
    status_check: str = ""
    nodepool: str | None = None
    zone: str | None = None

    @property
    def cause(self) -> str:
        """`Ready=Unknown`, `KernelReady=False`, `status-check:system`: how the summary names it."""
        return f"status-check:{self.status_check}" if self.status_check else f"{self.condition}={self.status}"


@dataclass(frozen=True, slots=True)
class NodePoolChange:
    """At `at` seconds after the start the NodePool of the same name becomes `nodepool` (replicas
    scaled, template changed: its nodes drift), as `kubectl apply` or `kubectl scale` would do.
    """

    at: float
    nodepool: NodePool


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
class CapacityReservationSpec:
    """A capacity reservation the simulated EC2 holds: `count` instances of `instance_type` in
    `zone`, active from `start` to `end` seconds after the start (None: no end; a capacity block
    must have one). `reservation_type` is `default` (an ODCR) or `capacity-block`; `match` is EC2's
    instance match criteria (`open` or `targeted`); `owner_id` and `tags` are what selector terms
    filter on; `interruptible`: an interruptible ODCR (EC2's `Interruptible`).
    """

    id: str
    instance_type: str
    zone: str
    count: int
    reservation_type: str = "default"
    match: str = "targeted"
    owner_id: str = ""
    tags: Mapping[str, str] = field(default_factory=dict)
    start: float = 0.0
    end: float | None = None
    interruptible: bool = False


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
    `timeout` seconds; `concurrency` bounds simultaneous SQS-driven invocations from the main
    queue, `priority_concurrency` those from the priority queue (EC2's own events).

    `single_flight` (scheduled functions): reserved concurrency 1 and a maximum event age of one
    `rate`, as the stack deploys them (infra `configure_single_flight`): an event that finds an
    invocation running is throttled, and Lambda retries it 1, 2, 4, 8, ... s later until it is
    older than one `rate`, then drops it (`world.invocations.SingleFlight`). False: every event
    starts an invocation at once, and the function's lease turns a second one away.
    """

    rate: float
    timeout: float
    offset: float = 0.0
    concurrency: int = 5
    priority_concurrency: int = 5
    batch_size: int = 10
    # The function's memory (what Lambda bills per second, and `self_cost` prices), and for the
    # provisioner the economy key `idle_exit` (seconds; None: wait for pods until the deadline).
    memory_mb: int = 1024
    idle_exit: float | None = None
    single_flight: bool = False


# What is deployed (nodewright/config/timings.py, which infra/config.py reads too): a scenario's
# `functions` block overrides it.
DEPLOYED_PROVISIONER = FunctionSettings(
    rate=t.PROVISIONER_RATE_SECONDS, timeout=t.PROVISIONER_TIMEOUT_SECONDS, memory_mb=t.PROVISIONER_MEMORY_MB
)
DEPLOYED_CONSOLIDATOR = FunctionSettings(
    rate=t.CONSOLIDATOR_RATE_SECONDS,
    timeout=t.CONSOLIDATOR_TIMEOUT_SECONDS,
    offset=t.CONSOLIDATOR_OFFSET_SECONDS,
    memory_mb=t.CONSOLIDATOR_MEMORY_MB,
)
DEPLOYED_INTERRUPTION = FunctionSettings(
    rate=0.0,
    timeout=t.INTERRUPTION_TIMEOUT_SECONDS,
    memory_mb=t.INTERRUPTION_MEMORY_MB,
    concurrency=t.INTERRUPTION_CONCURRENCY,
    priority_concurrency=t.INTERRUPTION_CONCURRENCY,
    batch_size=t.INTERRUPTION_BATCH_SIZE,
)


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
    # StartInstances of a stopped standby instance -> its Node Ready again (docs/standby.md: an
    # approximation; EC2 publishes no start-time figure).
    start_delay: float = 20.0
    zones: tuple[str, ...] = DEFAULT_ZONES
    nodepools: tuple[NodePool, ...] = ()
    nodeclasses: Mapping[str, EC2NodeClass] = field(default_factory=dict)
    workloads: tuple[Workload, ...] = ()
    daemonsets: tuple[DaemonSet, ...] = ()
    # DaemonSets created during the run (a workloads entry with `at`), by the second they appear.
    late_daemonsets: tuple[tuple[float, DaemonSet], ...] = ()
    pdbs: tuple[PodDisruptionBudget, ...] = ()
    # DRA DeviceClasses, ResourceClaims and ResourceClaimTemplates, as manifests.
    devices: tuple[Mapping[str, Any], ...] = ()
    initial_nodes: tuple[InitialNodes, ...] = ()
    interruptions: tuple[Interruption, ...] = ()
    capacity_errors: tuple[CapacityError, ...] = ()
    provisioner: FunctionSettings = DEPLOYED_PROVISIONER
    consolidator: FunctionSettings = DEPLOYED_CONSOLIDATOR
    interruption: FunctionSettings = DEPLOYED_INTERRUPTION
    consolidation: str = "nodewright"
    sample_interval: float = 0.0
    # The stability guard, as the deploy settings of the same names set it.
    consolidation_min_savings: float = 0.0
    consolidation_min_savings_percent: float = 0.0
    # The deploy key spotToSpotConsolidation: whether a spot node may be replaced by a spot node.
    spot_to_spot_consolidation: bool = True
    # The deploy key deletionCostSteering: whether the consolidator writes pod deletion costs.
    deletion_cost_steering: bool = True
    # Spot capacity of each (instance type, zone) pool: log-uniform in [min, max], drawn from the
    # seed (nodewright.simulator.standins.fleet.depth); what price-capacity-optimized weighs against price.
    spot_pool_depth: tuple[int, int] = DEFAULT_SPOT_POOL_DEPTH
    # How the functions reach the cluster: "inmemory" (the in-memory cluster directly) or "http"
    # (the real KubeCluster adapter, watching the cluster served by nodewright.inmemory.apiserver).
    kube_api: str = "inmemory"
    # Virtual seconds per CPU second a handler spends (`standins.cpuclock`): 0 (the default) keeps
    # the plain virtual clock, on which computing takes no time and every run repeats byte for
    # byte; 1.0 charges this machine's CPU time, about 1.7 a 1,024 MB Lambda's.
    cpu_charge: float = 0.0
    # `ProvisionerOptions` fields set otherwise than deployed (name, value), for experiments such
    # as the latency benchmark's `--option`; not a scenario file's key.
    provisioner_options: tuple[tuple[str, float], ...] = ()
    faults: tuple[Fault, ...] = ()
    # CapacityBuffers and the PodTemplates they name (documents in `nodepools`), and NodePool
    # changes over time (`nodepool_changes`).
    capacitybuffers: tuple[CapacityBuffer, ...] = ()
    # NodeOverlays (karpenter.sh/v1alpha1 documents in `nodepools`): the prices the functions plan with.
    nodeoverlays: tuple[NodeOverlay, ...] = ()
    podtemplates: tuple[PodTemplate, ...] = ()
    nodepool_changes: tuple[NodePoolChange, ...] = ()
    # Nodes that break (node repair), and the share of unhealthy nodes repair stops at (the deploy
    # key repairMaxUnhealthyPercent).
    node_failures: tuple[NodeFailure, ...] = ()
    # When AWS publishes a new EKS-optimized AMI release: every alias resolves to new images.
    ami_releases: tuple[float, ...] = ()
    repair_max_unhealthy_percent: int = 20
    # Capacity reservations (ODCRs, capacity blocks) the simulated EC2 holds.
    capacity_reservations: tuple[CapacityReservationSpec, ...] = ()
    # The deploy key nodeRoles: the node roles the simulated stack may pass besides its own
    # (NODE_ROLE), with instance profiles kept in the simulated IAM as the functions keep them.
    # None: every NodeClass's role launches with the stack's instance profile (the default for
    # scenarios that are not about node roles).
    node_roles: tuple[str, ...] | None = None

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
