"""The simulated world: one EKS cluster, its AWS account and Nodewright's three functions, on a
virtual clock.

Theory of operation. Everything happens on the `EventLoop` (nodewright.simulator.lambdas):

* EventBridge schedules invoke the provisioner and the consolidator handlers (the real
  `functions.*.handler.handler`, through their `configure` seam) at their rates. Each invocation
  is a thread that runs until it sleeps or returns, so a provisioner polling every second for 80 s
  overlaps with everything else exactly as concurrent Lambdas would.
* Workload schedules scale Deployments; the in-memory API server recreates evicted or lost pods.
* After every step, `_after_step` looks at what changed in the cluster: the kube-scheduler binds
  pending pods (or marks them Unschedulable), the accounting follows pods and nodes, and the SQS
  event source mapping receives due messages from the interruption queue and invokes the
  interruption handler with them (deleting those not reported in `batchItemFailures`).
* The kubelet: every instance CreateFleet starts becomes a Ready Node `boot_delay` seconds later,
  with the labels and taints of its user data, capacity from the catalog, providerID
  `aws:///zone/id`; when an instance is terminated its Node goes at once (pods still on it are
  lost) and EC2's state-change events (shutting-down, terminated) are put on the bus.
* Spot interruptions are put on EventBridge as EC2 does (rebalance recommendation, interruption
  warning, and after `notice` the instance is terminated); the rules route them to the queue.
* Capacity errors come from `SimulatedEc2` (nodewright.simulator.aws).

Functions that do not exist yet in this tree (`functions/interruption/handler.py`,
`functions/consolidator/handler.py`) are skipped with a warning in the report.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import logging
import math
import random
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

from nodewright.adapters.aws.ec2 import NODECLAIM_TAG, NODEPOOL_TAG
from nodewright.adapters.aws.retry import Backoff
from nodewright.adapters.kube.store import KINDS, NODES
from nodewright.adapters.offline_catalog import load_catalog
from nodewright.controllers.observe import RecordingObserver
from nodewright.controllers.provisioning import Provisioner, ProvisionerOptions, StaticConfiguration
from nodewright.engine.interruption.rules import (
    REBALANCE_RECOMMENDATION,
    SOURCE_EC2,
    SPOT_INTERRUPTION_WARNING,
    STATE_CHANGE_NOTIFICATION,
)
from nodewright.model import labels as wk
from nodewright.model.instance import Instance
from nodewright.model.instancetype import InstanceType
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodepool import NodePool
from nodewright.model.pod import Pod
from nodewright.model.requirements import Requirements
from nodewright.model.resources import Resources
from nodewright.model.snapshot import reschedulable
from nodewright.ports import Cluster, Eviction
from nodewright.sim import cluster as kinds
from nodewright.sim.clock import VirtualClock
from nodewright.simulator.aws import (
    CLUSTER,
    IDEMPOTENCY_TABLE,
    NODE_INSTANCE_PROFILE,
    QUEUE,
    STATE_TABLE,
    Account,
    Ec2Hooks,
    FleetCall,
    Launched,
    MirroredCloud,
    MirroredStateStore,
    PublicParameters,
    SimulatedEc2,
    SimulatedLambda,
    instance_arn,
)
from nodewright.simulator.faults import ORPHAN_GRACE_SECONDS, Faults, audit_claims
from nodewright.simulator.foreign import add_initial_nodes
from nodewright.simulator.kube import Deployments, KubeScheduler, SimulatedCluster, node_for, registration
from nodewright.simulator.kubehttp import HttpCluster
from nodewright.simulator.lambdas import ACCOUNT, REGION, EventLoop, Invocation, Lambdas
from nodewright.simulator.metrics import (
    InstanceRecord,
    InterruptionRecord,
    LaunchAudit,
    Recorder,
    ReplaceAudit,
    Sample,
    Violation,
)
from nodewright.simulator.scenario import Interruption, Scenario

log = logging.getLogger(__name__)

HANDLERS = {
    "provisioner": "functions.provisioner.handler",
    "interruption": "functions.interruption.handler",
    "consolidator": "functions.consolidator.handler",
}
ASYNC_INVOKE_DELAY = 0.2  # seconds from an asynchronous invoke to the handler starting
TERMINATED_BY = {"provisioner": "provisioner", "interruption": "interruption", "consolidator": "consolidation"}
_POD_GONE = (kinds.POD_DELETED, kinds.POD_EVICTED)


class SimCatalog:
    """The controllers' Catalog: the bundled offline catalog, one per kubelet configuration, keeping
    only the types some NodePool of the NodeClass could launch (the solver would drop the others
    on every pass; leaving them out changes no decision and saves most of a pass's preparation).
    """

    def __init__(self, zones: Sequence[str], nodepools: Sequence[NodePool]) -> None:
        self.zones = tuple(zones)
        self.nodepools = tuple(nodepools)
        self._all: dict[str, tuple[InstanceType, ...]] = {}
        self._types: dict[tuple[str, str], tuple[InstanceType, ...]] = {}
        self._by_name: dict[str, dict[str, InstanceType]] = {}

    def _catalog(self, nodeclass: EC2NodeClass | None) -> str:
        kubelet = nodeclass.kubelet if nodeclass is not None else None
        key = repr(kubelet)
        if key not in self._all:
            types = tuple(load_catalog(self.zones, kubelet=kubelet))
            self._all[key] = types
            self._by_name[key] = {t.name: t for t in types}
        return key

    def instance_types(self, nodeclass: EC2NodeClass | None) -> Sequence[InstanceType]:
        """The types offered in the scenario's zones that a NodePool of this NodeClass allows."""
        key = self._catalog(nodeclass)
        name = nodeclass.name if nodeclass is not None else ""
        cached = self._types.get((key, name))
        if cached is None:
            pools = [p for p in self.nodepools if nodeclass is None or p.node_class_ref.name == name]
            wanted = [p.requirements.intersection(Requirements.from_labels(p.labels)) for p in pools]
            cached = tuple(t for t in self._all[key] if any(t.requirements.intersects(r) for r in wanted))
            self._types[(key, name)] = cached
        return cached

    def find(self, name: str, nodeclass: EC2NodeClass | None) -> InstanceType | None:
        """One type by name (from the whole catalog)."""
        return self._by_name[self._catalog(nodeclass)].get(name)

    def price(self, name: str, zone: str, capacity_type: str, nodeclass: EC2NodeClass | None) -> float:
        """$/h of one offering (0 when unknown)."""
        found = self.find(name, nodeclass)
        if found is None:
            return 0.0
        for offering in found.offerings:
            if offering.zone == zone and offering.capacity_type == capacity_type:
                return offering.price
        return 0.0


def functions_importable() -> bool:
    """Make the `functions` package importable: it sits next to `nodewright` in the repository,
    but the package build only ships `nodewright` (so an installed `nodewright` command run from
    elsewhere would not find it). False when it is not there at all.
    """
    if importlib.util.find_spec("functions") is not None:
        return True
    root = Path(__file__).resolve().parents[2]
    if (root / "functions" / "__init__.py").exists():
        sys.path.insert(0, str(root))
        importlib.invalidate_caches()
        return True
    return False


def _import(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        if error.name and (name == error.name or name.startswith(error.name + ".")):
            return None
        raise


class World(Ec2Hooks):
    """One simulation run (see the module docstring). Build inside `mock_aws` and the time patches."""

    def __init__(self, scenario: Scenario, session: Any) -> None:
        self.scenario = scenario
        self.clock = VirtualClock(scenario.start)
        self.end = scenario.start + scenario.duration
        self.loop = EventLoop(self.clock)
        self.loop.after_step = self._after_step
        self.lambdas = Lambdas(self.loop, {name: getattr(scenario, name).memory_mb for name in HANDLERS})
        self.cluster = SimulatedCluster(self.clock)
        self.cluster.before_evict = self._before_evict
        self.cluster.after_evict = self._after_evict
        self.cluster.before_delete_node = lambda name: self._audit_node(name, "Node deleted through the API")
        # The scenario's faults meet the functions at the cluster's and AWS's edges (faults.py).
        self.faults = Faults(scenario, self.lambdas)
        self.cluster.before_request = self.faults.kube
        self.cluster.after_effect = self.faults.effect
        # With `kube_api: http` the functions reach the cluster through the real adapter over HTTP.
        self.http = (
            HttpCluster(
                self.cluster,
                fault=self.faults.api_fault,
                alive=self.faults.check_alive,
                effect=self.faults.effect,
                sleep=self.faults.kube_sleep,
            )
            if scenario.kube_api == "http"
            else None
        )
        self.scheduler = KubeScheduler(self.cluster)
        self.deployments = Deployments(self.cluster, scenario.workloads)
        self.account = Account(session)
        self.catalog = SimCatalog(scenario.zones, scenario.nodepools)
        self.recorder = Recorder(start=scenario.start)
        self.observers = {name: RecordingObserver() for name in HANDLERS}
        self.pools: dict[str, NodePool] = {p.name: p for p in scenario.nodepools}
        self.handlers: dict[str, Callable[[dict[str, Any], Any], Any]] = {}
        self.modules: dict[str, ModuleType] = {}
        self._levels: dict[str, int] = {}
        self.store: MirroredStateStore | None = None
        self._seen = 0
        self._dirty = False
        self._unbound: set[str] = set()
        self._forced: set[str] = set()  # nodes under a spot interruption warning
        self._watched: dict[str, InterruptionRecord] = {}  # interrupted nodes by name
        self._refused: dict[str, float] = {}  # pod -> when a PodDisruptionBudget last refused its eviction
        self._booting: dict[str, float] = {}
        self._node_instance: dict[str, str] = {}
        self._reason = ""
        self._queue_check: float | None = None
        self._queue: Any = None
        self._observed: dict[str, int] = dict.fromkeys(HANDLERS, 0)
        self._rng = random.Random(scenario.seed)

    # -- setup ---------------------------------------------------------------------------------------

    def build(self) -> None:
        """Create the AWS resources, the cluster's fixed objects, the controllers and the schedules."""
        scenario = self.scenario
        self.account.create(scenario.nodeclasses, scenario.zones, scenario.interruption.timeout)
        for daemonset in scenario.daemonsets:
            self.cluster.add_daemonset(daemonset)
        for pdb in scenario.pdbs:
            self.cluster.add_pdb(pdb)
        # Nodes another autoscaler launched before the run (a migration's starting point).
        self.foreign_nodes = add_initial_nodes(self)
        self._wire()
        for workload in scenario.workloads:
            for t in sorted({0.0, *workload.change_times(scenario.duration)}):
                self.loop.at(scenario.start + t, partial(self._scale, workload.key, t))
        for index, interruption in enumerate(scenario.interruptions):
            self.loop.at(scenario.start + interruption.at, partial(self._interrupt, interruption, index))
        if scenario.faults_end is not None and scenario.faults_end + ORPHAN_GRACE_SECONDS <= scenario.duration:
            self.loop.at(scenario.start + scenario.faults_end + ORPHAN_GRACE_SECONDS, self._audit_claims)
        for name in ("provisioner", "consolidator"):
            settings = getattr(scenario, name)
            if name in self.handlers and settings.rate > 0:
                t = settings.offset
                while t < scenario.duration:
                    self.loop.at(scenario.start + t, partial(self._scheduled, name))
                    t += settings.rate

    def _wire(self) -> None:
        scenario = self.scenario
        ec2 = SimulatedEc2(self.account.ec2, self)
        ssm = PublicParameters(self.account.ssm, self.account.images)
        clients = {"ec2": self.account.ec2, "dynamodb": self.account.dynamodb, "sqs": self.account.sqs}
        self.faults.install(clients, lambda: ec2.quiet)
        cloud = MirroredCloud(
            ec2,
            ssm,
            CLUSTER,
            instance_profile=NODE_INSTANCE_PROFILE,
            clock=self.clock,
            registry=self._live_instances,
            backoff=Backoff(sleep=self.faults.sleep, random=self.faults.jitter),
        )
        self.ec2 = ec2
        self.cloud = cloud
        self.store = store = MirroredStateStore(self.account.dynamodb, STATE_TABLE)
        config = StaticConfiguration(scenario.nodepools, dict(scenario.nodeclasses))
        if self.http is not None:
            self.http.start()

        def provisioner(observer: RecordingObserver) -> Provisioner:
            return Provisioner(
                cluster=self._cluster_for("provisioner"),
                cloud=cloud,
                store=store,
                clock=self.clock,
                config=config,
                catalog=self.catalog,
                observer=observer,
                sleep=self.lambdas.sleep,
                wait=self.lambdas.sleep,
                options=ProvisionerOptions(idle_exit=scenario.provisioner.idle_exit),
            )

        module = importlib.import_module(HANDLERS["provisioner"])
        module.configure(provisioner(self.observers["provisioner"]))
        self._use("provisioner", module)

        interruption = _import(HANDLERS["interruption"])
        if interruption is None:
            self.recorder.warnings.append("functions/interruption/handler.py is missing: interruptions are not handled")
        else:
            try:
                self._wire_interruption(interruption, cloud, store, config)
            except (ImportError, TypeError, AttributeError) as error:
                self.recorder.warnings.append(f"the interruption function could not be wired: {error}")

        if scenario.consolidation == "off":
            self.recorder.warnings.append("consolidation is off in this scenario")
            return
        consolidator = _import(HANDLERS["consolidator"])
        if consolidator is None:
            self.recorder.warnings.append("functions/consolidator/handler.py is missing: nothing is consolidated")
            return
        try:
            from nodewright.controllers.disruption import Consolidator, ConsolidatorOptions
            from nodewright.controllers.settings import disruption_options

            options = ConsolidatorOptions(
                disruption=disruption_options(
                    scenario.consolidation,
                    scenario.consolidation_min_savings,
                    scenario.consolidation_min_savings_percent,
                )
            )
            observer = self.observers["consolidator"]
            controller = Consolidator(
                cluster=self._cluster_for("consolidator"),
                cloud=cloud,
                store=store,
                clock=self.clock,
                config=config,
                catalog=self.catalog,
                observer=observer,
                launcher=provisioner(observer),
                options=options,
                sleep=self.lambdas.sleep,
            )
            consolidator.configure(controller)
            self._use("consolidator", consolidator)
        except (ImportError, TypeError, AttributeError) as error:
            self.recorder.warnings.append(f"the consolidator could not be wired: {error}")

    def _wire_interruption(self, module: ModuleType, cloud: MirroredCloud, store: Any, config: Any) -> None:
        from nodewright.adapters.aws.signals import LambdaProvisionerTrigger, SqsContinuations
        from nodewright.adapters.idempotency import EventDeduplicator
        from nodewright.controllers.interruption import InterruptionController

        lambda_client = SimulatedLambda(self._async_invoke, self.faults.effect)
        controller = InterruptionController(
            cluster=self._cluster_for("interruption", (NODES,)),
            store=store,
            cloud=cloud,
            clock=self.clock,
            config=config,
            observer=self.observers["interruption"],
            continuations=SqsContinuations(self.account.sqs, self.account.queue_url),
            provisioner=LambdaProvisionerTrigger(lambda_client, "nodewright-provisioner"),
        )
        module.configure(EventDeduplicator(controller.process, table=IDEMPOTENCY_TABLE, client=self.account.dynamodb))
        self._use("interruption", module)
        from moto.sqs.models import sqs_backends

        self._queue = sqs_backends[ACCOUNT][REGION].queues[QUEUE]

    def _cluster_for(self, function: str, kinds: tuple[str, ...] = KINDS) -> Cluster:
        """The cluster as `function` reaches it: directly, or through its own adapter over HTTP."""
        return self.cluster if self.http is None else self.http.adapter(function, kinds)

    def _use(self, name: str, module: ModuleType) -> None:
        self.modules[name] = module
        self.handlers[name] = module.handler
        logger = getattr(module, "logger", None)
        if logger is not None and hasattr(logger, "setLevel"):
            self._levels[name] = logger.log_level if hasattr(logger, "log_level") else logging.INFO
            logger.setLevel(logging.WARNING)

    def release(self) -> None:
        """Hand the functions back their own controllers (built from the environment on next use)."""
        if self.http is not None:
            self.http.stop()
        self.faults.close()
        for name, module in self.modules.items():
            module.configure(None)
            logger = getattr(module, "logger", None)
            if name in self._levels and logger is not None:
                logger.setLevel(self._levels[name])

    # -- running ---------------------------------------------------------------------------------------

    def run(self, progress: Callable[[float], None] | None = None) -> None:
        """Run the scenario to its end; `progress` gets the virtual seconds done at each sample."""
        step = self.scenario.sampling
        t = self.scenario.start
        while t < self.end:
            t = min(self.end, t + step)
            self.loop.run_until(t)
            self._sample()
            if progress is not None:
                progress(t - self.scenario.start)
        self.lambdas.shutdown()
        self._after_step()
        if not self.faults.audit:
            late = self.scenario.faults_end is not None
            self._audit_claims(f"run ended less than {ORPHAN_GRACE_SECONDS:g} s after the last fault" if late else "")
        for name, seconds in self.lambdas.wall.items():
            self.recorder.wall[name] += seconds
        if self.store is not None:
            for problem in self.store.verify():
                self.recorder.warnings.append(f"state mirror differs from DynamoDB: {problem}")
        registry = {i.instance_id for i in self._live_instances()}
        described = {i.instance_id for i in self.cloud.described()}
        if registry != described:
            self.recorder.warnings.append(
                f"instance registry differs from DescribeInstances: {sorted(registry ^ described)[:10]}"
            )

    def _live_instances(self) -> list[Instance]:
        return [
            Instance(
                instance_id=r.instance_id,
                instance_type=r.instance_type,
                zone=r.zone,
                capacity_type=r.capacity_type,
                state="running",
                launched_at=r.launched_at,
                nodeclaim=r.nodeclaim,
                nodepool=r.nodepool,
                image_id=r.image_id,
            )
            for r in self.recorder.instances.values()
            if r.terminated_at is None
        ]

    def _scheduled(self, name: str) -> None:
        event = {
            "version": "0",
            "id": f"schedule-{name}-{int(self.clock.now())}",
            "detail-type": "Scheduled Event",
            "source": "aws.events",
            "account": ACCOUNT,
            "time": _iso(self.clock.now()),
            "region": REGION,
            "resources": [f"arn:aws:events:{REGION}:{ACCOUNT}:rule/nodewright-{name}-schedule"],
            "detail": {},
        }
        self._invoke(name, event)

    def _async_invoke(self, function: str, event: dict[str, Any]) -> None:
        self.recorder.replacement_requests.append(self.clock.now())
        if "provisioner" in self.handlers:
            self.loop.at(self.clock.now() + ASYNC_INVOKE_DELAY, partial(self._start, "provisioner", event))

    def _start(self, name: str, event: dict[str, Any]) -> None:
        self._invoke(name, event)

    def _invoke(
        self, name: str, event: dict[str, Any], after: Callable[[Invocation], None] | None = None
    ) -> Invocation:
        self.recorder.invocations[name] += 1
        timeout = getattr(self.scenario, name).timeout
        kill_at = self.faults.kill_at(name, self.clock.now(), timeout)

        def done(invocation: Invocation) -> None:
            self._finished(invocation)
            if after is not None:
                after(invocation)

        invocation = self.lambdas.invoke(name, self.handlers[name], event, timeout, done, kill_at=kill_at)
        if kill_at is not None:
            self.faults.doomed(invocation)
        return invocation

    def _finished(self, invocation: Invocation) -> None:
        self.faults.finished(invocation)
        if invocation.error is not None:
            self.recorder.errors.append(
                {
                    "function": invocation.function,
                    "at": round(invocation.ended - self.scenario.start, 3),
                    "error": f"{type(invocation.error).__name__}: {invocation.error}",
                    "trace": invocation.trace[-4000:],
                }
            )
        if invocation.stopped == "timeout":
            self.recorder.timeouts[invocation.function] += 1
        result = invocation.result
        if isinstance(result, Mapping) and result.get("lease") is False:
            self.recorder.busy[invocation.function] += 1

    # -- after each step: what changed -----------------------------------------------------------------

    def _after_step(self) -> None:
        for _ in range(100):
            self._read_changes()
            self._read_decisions()
            if self._dirty and self._unbound:
                self._dirty = False
                started = time.perf_counter()
                self.scheduler.schedule(sorted(self._unbound))
                self.recorder.wall["kube-scheduler"] += time.perf_counter() - started
                self._read_changes()
            self._dirty = False
            if not self._poll_queue():
                return

    def _read_changes(self) -> None:
        changes = self.cluster.changes
        if self._seen == len(changes):
            return
        recorder = self.recorder
        gone: tuple[float, str] | None = None  # the pod deleted just before, for its replacement
        for change in changes[self._seen :]:
            kind = change.kind
            if kind == kinds.POD_CREATED:
                if not change.node:
                    self._unbound.add(change.name)
                    recorder.pod_created(change.name, change.at)
                    self._dirty = True
                    if gone is not None and gone[0] == change.at:
                        # The controller's replacement of a pod evicted or deleted from a node.
                        recorder.displaced[change.name] = "interruption" if gone[1] in self._watched else "other"
                gone = None
                continue
            gone = None
            if kind == kinds.POD_BOUND:
                self._unbound.discard(change.name)
                recorder.pod_bound(change.name, change.at)
            elif kind in _POD_GONE:
                self._unbound.discard(change.name)
                recorder.pod_gone(change.name)
                self._dirty = True
                if change.node:
                    gone = (change.at, change.node)
                if change.node in self._watched:
                    self._check_drained(change.node, change.at)
            elif kind == kinds.NODE_DELETED:
                interrupted = self._watched.get(change.name)
                for pod in change.pods:
                    if interrupted is not None and self._refused.get(pod, -math.inf) >= interrupted.first_signal:
                        # A budget refused every eviction until the instance went: counted apart.
                        recorder.held_by_pdb.append((change.at, pod, change.name))
                    else:
                        recorder.lost.append((change.at, pod, change.name))
                self._dirty = True
                self._node_gone(change.name, change.at)
            elif kind == kinds.NODE_CORDONED:
                self._cordoned(change.name, change.at)
            elif kind == kinds.EVICTION_BLOCKED:
                self._refused[change.name] = change.at
            else:
                self._dirty = True
        self._seen = len(changes)

    def _read_decisions(self) -> None:
        for name, observer in self.observers.items():
            decisions = observer.decisions
            start = self._observed[name]
            if start == len(decisions):
                continue
            for decision in decisions[start:]:
                kind = decision.get("decision")
                if kind == "launch":
                    pods = decision.get("pods")
                    keys = [str(p) for p in pods] if isinstance(pods, list) else []
                    at = decision.get("at")
                    self.recorder.launched_for(keys, at if isinstance(at, float) else self.clock.now())
                    if name == "provisioner" and keys and all(self._on_consolidated_node(k) for k in keys):
                        self.recorder.double_launches += 1
                elif kind == "capacity-error":
                    self.recorder.capacity_errors.append((self.clock.now(), str(decision.get("offerings"))))
                elif kind == "disruption-launched":
                    self._audit_replace(decision)
            self._observed[name] = len(decisions)

    def _audit_replace(self, decision: Mapping[str, Any]) -> None:
        """A consolidation command's replacements came up: price them from the world's own records
        (the nodes replaced by node name, the new ones by claim name) against the promise.
        """
        candidates = tuple(str(n) for n in decision.get("candidates") or ())
        claims = {str(c) for c in decision.get("replacements") or ()}
        by_node = {r.node: r for r in self.recorder.instances.values() if r.node}
        new = [r for r in self.recorder.instances.values() if r.nodeclaim in claims]
        replaced = sum(by_node[n].price if n in by_node else 0.0 for n in candidates)
        self.recorder.replaces.append(
            ReplaceAudit(
                at=self.clock.now() - self.scenario.start,
                command=str(decision.get("command", "")),
                candidates=candidates,
                replaced_price=replaced if all(n in by_node for n in candidates) else _number(decision.get("price")),
                promised_price=_number(decision.get("promised")),
                launched_types=tuple(sorted(r.instance_type for r in new)),
                launched_price=sum(r.price for r in new),
                rolled_back=decision.get("outcome") == "rolled-back",
            )
        )

    def _on_consolidated_node(self, key: str) -> bool:
        """True when the pod is still bound to a node a consolidation command has tainted."""
        pod = self.cluster.get_pod(key)
        return pod is not None and bool(pod.node_name) and self._consolidating(pod.node_name)

    def _consolidating(self, name: str) -> bool:
        """True when a consolidation command has tainted the node."""
        node = self.cluster.get_node(name) if name else None
        return node is not None and any(
            t.key == wk.DISRUPTED_TAINT_KEY and t.value == wk.DISRUPTED_CONSOLIDATION for t in node.taints
        )

    # -- the SQS event source mapping -----------------------------------------------------------------

    def _poll_queue(self) -> bool:
        """Invoke the interruption handler with due messages; True when it ran."""
        queue = self._queue
        if queue is None or not queue._messages:
            return False
        now = self.clock.now()
        if self._queue_check is not None and now < self._queue_check:
            return False
        due = self._next_delivery()
        if due is None:
            self._queue_check = None
            return False
        if due > now:
            if self._queue_check is None or due < self._queue_check or self._queue_check <= now:
                self._queue_check = due
                self.loop.at(due, lambda: None)  # a step at `due`, so _after_step polls then
            return False
        self._queue_check = None
        settings = self.scenario.interruption
        running = sum(1 for i in self.lambdas.running if i.function == "interruption")
        if running >= settings.concurrency:
            return False
        response = self.account.sqs.receive_message(
            QueueUrl=self.account.queue_url,
            MaxNumberOfMessages=settings.batch_size,
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
        )
        messages = response.get("Messages") or []
        if not messages:
            return False
        records: list[Mapping[str, Any]] = [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": dict(m.get("Attributes") or {}),
                "messageAttributes": {},
                "md5OfBody": m.get("MD5OfBody", ""),
                "eventSource": "aws:sqs",
                "eventSourceARN": self.account.queue_arn,
                "awsRegion": REGION,
            }
            for m in messages
        ]
        records, duplicates = self.faults.deliveries(records, self._hold)
        for delay, record in duplicates:
            # A second delivery of the same message: nothing to acknowledge (its receipt is spent).
            self.loop.at(now + delay, partial(self._start, "interruption", {"Records": [record]}))
        if not records:
            return False
        batch = records
        self._invoke("interruption", {"Records": list(batch)}, lambda done: self._acknowledge(done, batch))
        return True

    def _hold(self, record: Mapping[str, Any], seconds: float) -> None:
        """Deliver a received message `seconds` later instead, after others: put back as a delayed
        copy, so holding it does not count as a receive (the redrive policy counts those).
        """
        sqs, queue = self.account.sqs, self.account.queue_url
        sqs.delete_message(QueueUrl=queue, ReceiptHandle=str(record["receiptHandle"]))
        sqs.send_message(QueueUrl=queue, MessageBody=str(record["body"]), DelaySeconds=min(900, round(seconds)))

    def _next_delivery(self) -> float | None:
        times = [max(m.visible_at, m.delayed_until) / 1000 for m in list(self._queue._messages)]
        if not times:
            return None
        # moto makes a message visible strictly after its time (ms resolution).
        return float(min(times)) + 0.001

    def _acknowledge(self, invocation: Invocation, records: Sequence[Mapping[str, Any]]) -> None:
        """Delete the batch's messages except those the handler reported failed (as the ESM does);
        a failed or stopped invocation deletes nothing, so all come back after the visibility timeout.
        """
        if invocation.error is not None or invocation.stopped or not isinstance(invocation.result, Mapping):
            return
        failed = {str(item.get("itemIdentifier")) for item in invocation.result.get("batchItemFailures") or ()}
        entries = [
            {"Id": str(index), "ReceiptHandle": str(record["receiptHandle"])}
            for index, record in enumerate(records)
            if record["messageId"] not in failed
        ]
        if entries:
            self.account.sqs.delete_message_batch(QueueUrl=self.account.queue_url, Entries=entries)

    # -- the kubelet and EC2 ----------------------------------------------------------------------------

    def capacity_error(self, instance_type: str, zone: str, capacity_type: str) -> str | None:
        """The scenario's capacity errors, at the current virtual time."""
        t = self.clock.now() - self.scenario.start
        for error in self.scenario.capacity_errors:
            if error.matches(instance_type, zone, capacity_type, t):
                return error.code
        return None

    def price(self, instance_type: str, zone: str, capacity_type: str) -> float | None:
        """The scenario's price of the offering (the catalog the controllers read too)."""
        return self.catalog.price(instance_type, zone, capacity_type, None) or None

    def spot_depth(self, instance_type: str, zone: str) -> int | None:
        """The spot capacity the scenario drew for the pool."""
        return self.scenario.pool_depth(instance_type, zone)

    def short_fleet(self) -> bool:
        """An `ec2-partial-fleet` fault strikes this CreateFleet (only a function's)."""
        return self.faults.invocation() is not None and self.faults.draw("ec2-partial-fleet", "ec2:fleet") is not None

    def effect(self, operation: str) -> None:
        """A whole CreateFleet or TerminateInstances was carried out: a crash may follow."""
        self.faults.effect(f"ec2:{operation}")

    def fleet(self, call: FleetCall) -> None:
        """Audit each instance the fleet started against the cheapest override it allowed."""
        if not call.launched or not call.allowed:
            return
        cheapest = min(call.allowed, key=lambda p: (p.unit_price, p.instance_type, p.zone))
        units = {(p.instance_type, p.zone): p.unit_price for p in call.allowed}
        at = self.clock.now() - self.scenario.start
        for instance in call.launched:
            self.recorder.fleet_launches.append(
                LaunchAudit(
                    at=at,
                    instance_id=instance.instance_id,
                    capacity_type=instance.capacity_type,
                    strategy=call.strategy,
                    instance_type=instance.instance_type,
                    zone=instance.zone,
                    price=units.get((instance.instance_type, instance.zone), math.inf),
                    cheapest_type=cheapest.instance_type,
                    cheapest_zone=cheapest.zone,
                    cheapest_price=cheapest.unit_price,
                )
            )

    def launched(self, instance: Launched) -> None:
        """Account for the instance and boot it into a Node after the boot delay."""
        now = self.clock.now()
        pool_name = instance.tags.get(NODEPOOL_TAG, "")
        pool = self.pools.get(pool_name)
        nodeclass = self.scenario.nodeclasses.get(pool.node_class_ref.name) if pool else None
        current = self.lambdas.current
        record = InstanceRecord(
            instance_id=instance.instance_id,
            instance_type=instance.instance_type,
            zone=instance.zone,
            capacity_type=instance.capacity_type,
            nodepool=pool_name,
            price=self.catalog.price(instance.instance_type, instance.zone, instance.capacity_type, nodeclass),
            launched_at=now,
            launched_by=current.function if current is not None else "world",
            nodeclaim=instance.tags.get(NODECLAIM_TAG, ""),
        )
        self.recorder.instances[instance.instance_id] = record
        self.recorder.launches.append(now)
        self._check_limits(pool, nodeclass)
        self._booting[instance.instance_id] = now + self.scenario.boot_delay
        self.loop.at(now + self.scenario.boot_delay, lambda: self._register(instance.instance_id))

    def _check_limits(self, pool: NodePool | None, nodeclass: EC2NodeClass | None) -> None:
        if pool is None or pool.limits is None:
            return
        used = Resources()
        for record in self.recorder.instances.values():
            if record.nodepool == pool.name and record.terminated_at is None:
                found = self.catalog.find(record.instance_type, nodeclass)
                if found is not None:
                    used = used + found.capacity
        over = [name for name, limit in pool.limits.items() if used[name] > limit]
        if over:
            self.recorder.limit_violations.append(
                {"at": round(self.clock.now() - self.scenario.start, 3), "nodepool": pool.name, "resources": over}
            )

    def _register(self, instance_id: str) -> None:
        self._booting.pop(instance_id, None)
        record = self.recorder.instances.get(instance_id)
        if record is None or record.terminated_at is not None:
            return
        described = self.account.ec2.describe_instances(InstanceIds=[instance_id])
        item = next((i for r in described.get("Reservations", []) for i in r.get("Instances", [])), None)
        if item is None or item.get("State", {}).get("Name") not in ("pending", "running"):
            return
        user_data = self.account.ec2.describe_instance_attribute(InstanceId=instance_id, Attribute="userData")
        labels, taints = registration(str((user_data.get("UserData") or {}).get("Value", "")))
        pool = self.pools.get(record.nodepool)
        nodeclass = self.scenario.nodeclasses.get(pool.node_class_ref.name) if pool else None
        instance_type = self.catalog.find(record.instance_type, nodeclass)
        if instance_type is None:
            self.recorder.warnings.append(f"{instance_id}: {record.instance_type} is not in the catalog; no node")
            return
        name = str(item.get("PrivateDnsName") or instance_id)
        record.image_id = str(item.get("ImageId", ""))
        labels = {
            **labels,
            wk.HOSTNAME: name,
            wk.ZONE: record.zone,
            wk.REGION: REGION,
            wk.ARCH: instance_type.arch,
            wk.OS: "linux",
            wk.INSTANCE_TYPE: record.instance_type,
        }
        if wk.CAPACITY_TYPE not in labels:
            labels[wk.CAPACITY_TYPE] = record.capacity_type
        node = node_for(
            name,
            labels=labels,
            taints=taints,
            startup_taints=pool.startup_taints if pool else (),
            capacity=instance_type.capacity,
            allocatable=instance_type.allocatable,
            provider_id=f"aws:///{record.zone}/{instance_id}",
        )
        self.cluster.add_node(node)
        self.cluster.reconcile_daemonsets()
        record.node = name
        record.ready_at = self.clock.now()
        self._node_instance[name] = instance_id
        self._dirty = True

    def terminating(self, instance_ids: Sequence[str]) -> None:
        """A controller (or EC2 itself) is terminating instances: audit what their nodes still hold."""
        if self._reason == "spot-reclaimed":
            return
        for instance_id in instance_ids:
            record = self.recorder.instances.get(instance_id)
            if record is not None and record.node and record.terminated_at is None:
                self._audit_node(record.node, "instance terminated by a controller")

    def terminated(self, instance_ids: Sequence[str]) -> None:
        """The instances are gone: their nodes with them; EC2 reports the state changes."""
        now = self.clock.now()
        current = self.lambdas.current
        reason = self._reason or (TERMINATED_BY.get(current.function, current.function) if current else "world")
        for instance_id in instance_ids:
            record = self.recorder.instances.get(instance_id)
            if record is None or record.terminated_at is not None:
                continue
            record.terminated_at = now
            record.terminated_by = reason
            self._booting.pop(instance_id, None)
            if record.node and self.cluster.get_node(record.node) is not None:
                self.cluster.remove_node(record.node)
                self.cluster.reconcile_daemonsets()
            for state in ("shutting-down", "terminated"):
                self._put(STATE_CHANGE_NOTIFICATION, instance_id, {"instance-id": instance_id, "state": state})

    def _node_gone(self, name: str, at: float) -> None:
        interrupted = self._watched.get(name)
        if interrupted is not None and interrupted.drained_at is None:
            self._check_drained(name, at)

    # -- spot interruptions ------------------------------------------------------------------------------

    def _interrupt(self, spec: Interruption, index: int) -> None:
        now = self.clock.now()
        candidates = sorted(
            (
                n
                for n in self.cluster.nodes()
                if n.labels.get(wk.CAPACITY_TYPE) == "spot"
                and n.instance_id
                and n.instance_id not in self.recorder.interruptions
                and (spec.nodepool is None or n.nodepool == spec.nodepool)
                and (spec.zone is None or n.labels.get(wk.ZONE) == spec.zone)
            ),
            key=lambda n: n.name,
        )
        wanted = spec.count if spec.count is not None else math.ceil((spec.fraction or 0.0) * len(candidates))
        wanted = min(wanted, len(candidates))
        if wanted < (spec.count or 0):
            self.recorder.warnings.append(
                f"interruptions[{index}]: {spec.count} spot nodes asked for, {len(candidates)} running"
            )
        victims = self._rng.sample(candidates, wanted) if wanted else []
        for position, node in enumerate(victims):
            offset = spec.within * position / (wanted - 1) if wanted > 1 else 0.0
            first = now + offset
            warning = first + (spec.rebalance_lead if spec.rebalance else 0.0)
            record = InterruptionRecord(
                instance_id=node.instance_id,
                node=node.name,
                first_signal=first,
                warning_at=warning,
                reclaim_at=warning + spec.notice,
                rebalance_at=first if spec.rebalance else None,
            )
            self.recorder.interruptions[node.instance_id] = record
            self._watched[node.name] = record
            if spec.rebalance:
                self.loop.at(first, partial(self._rebalance, record))
            self.loop.at(warning, partial(self._warn, record))
            self.loop.at(warning + spec.notice, partial(self._reclaim, record))

    def _rebalance(self, record: InterruptionRecord) -> None:
        self._put(REBALANCE_RECOMMENDATION, record.instance_id, {"instance-id": record.instance_id})

    def _warn(self, record: InterruptionRecord) -> None:
        self._forced.add(record.node)
        self._put(
            SPOT_INTERRUPTION_WARNING,
            record.instance_id,
            {"instance-id": record.instance_id, "instance-action": "terminate"},
        )

    def _reclaim(self, record: InterruptionRecord) -> None:
        instance = self.recorder.instances.get(record.instance_id)
        if instance is None or instance.terminated_at is not None:
            return
        if self.cluster.get_node(record.node) is not None:
            record.pods_at_reclaim = sum(1 for p in self.cluster.pods_on(record.node) if reschedulable(p))
        record.reclaimed = True
        self._reason = "spot-reclaimed"
        try:
            self.ec2.terminate_instances(InstanceIds=[record.instance_id])
        finally:
            self._reason = ""

    def _cordoned(self, node: str, at: float) -> None:
        record = self._watched.get(node)
        if record is not None and record.cordoned_at is None and at >= record.first_signal:
            record.cordoned_at = at
            record.replacement_at = self._replacement_after(record.first_signal)

    def _check_drained(self, node: str, at: float) -> None:
        record = self._watched.get(node)
        if record is None or record.drained_at is not None or at < record.first_signal:
            return
        if record.replacement_at is None:
            record.replacement_at = self._replacement_after(record.first_signal)
        gone = self.cluster.get_node(node) is None or not any(reschedulable(p) for p in self.cluster.pods_on(node))
        if gone and not record.reclaimed:
            record.drained_at = at

    def _replacement_after(self, first: float) -> float | None:
        """The first provisioner invoke or CreateFleet at or after `first`."""
        requests = [t for t in (*self.recorder.replacement_requests, *self.recorder.launches) if t >= first]
        return min(requests) if requests else None

    def _put(self, detail_type: str, instance_id: str, detail: Mapping[str, Any]) -> None:
        self.account.events.put_events(
            Entries=[
                {
                    "Time": datetime.fromtimestamp(self.clock.now(), UTC),
                    "Source": SOURCE_EC2,
                    "DetailType": detail_type,
                    "Detail": json.dumps(dict(detail)),
                    "Resources": [instance_arn(instance_id)],
                }
            ]
        )

    # -- audits -------------------------------------------------------------------------------------------

    def _before_evict(self, pod: Pod) -> None:
        return None

    def _after_evict(self, pod: Pod, result: Eviction) -> None:
        if result.outcome == "evicted" and self._consolidating(pod.node_name):
            self.recorder.consolidation_moves += 1
        if result.outcome == "evicted" and pod.do_not_disrupt and pod.node_name not in self._forced:
            self.recorder.violations.append(
                Violation(self.clock.now() - self.scenario.start, "do-not-disrupt", pod.key, pod.node_name, "evicted")
            )

    def _audit_claims(self, note: str = "") -> None:
        """Duplicate and orphan instances and claims (`faults.audit_claims`), into the faults block."""
        claims = self.store.claims() if self.store is not None else []
        now = self.clock.now()
        self.faults.audit = audit_claims(self.recorder.instances, claims, now, at=now - self.scenario.start, note=note)

    def _audit_node(self, node: str, how: str) -> None:
        """Pods about to go with `node`: count those no budget allowed to go, and do-not-disrupt ones."""
        if node in self._forced:
            return
        with self.faults.quiet():  # the audit's own read, not the function's
            pods = [p for p in self.cluster.pods_on(node) if reschedulable(p)]
        if not pods:
            return
        at = self.clock.now() - self.scenario.start
        budgets = self.cluster.snapshot().pdbs
        allowed = {f"{b.namespace}/{b.name}": b.disruptions_allowed or 0 for b in budgets}
        for pod in pods:
            if pod.do_not_disrupt:
                self.recorder.violations.append(Violation(at, "do-not-disrupt", pod.key, node, how))
            for budget in budgets:
                if not budget.selects(pod):
                    continue
                key = f"{budget.namespace}/{budget.name}"
                if allowed[key] <= 0:
                    self.recorder.violations.append(Violation(at, "pdb", pod.key, node, how, key))
                else:
                    allowed[key] -= 1

    # -- workloads and samples ------------------------------------------------------------------------------

    def _scale(self, key: str, t: float) -> None:
        workload = self.deployments.workloads[key]
        self.deployments.scale(workload, workload.replicas_at(t))

    def _sample(self) -> None:
        nodes: dict[str, int] = {}
        for node in self.cluster.snapshot().nodes:
            capacity_type = node.labels.get(wk.CAPACITY_TYPE, "unknown")
            nodes[capacity_type] = nodes.get(capacity_type, 0) + 1
        live = [r for r in self.recorder.instances.values() if r.terminated_at is None]
        self.recorder.samples.append(
            Sample(
                t=self.clock.now() - self.scenario.start,
                nodes=nodes,
                booting=len(self._booting),
                pending=len(self._unbound),
                running=sum(1 for p in self.cluster.snapshot().pods if p.node_name and not p.daemon),
                hourly_cost=sum(r.price for r in live),
            )
        )
        self.cluster.forget_calls()


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _number(value: object) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0
