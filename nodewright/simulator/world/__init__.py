"""The simulated world: one EKS cluster, its AWS account and Nodewright's three functions, on a
virtual clock.

Theory of operation. Everything happens on the `EventLoop` (nodewright.simulator.standins.lambdas):

* EventBridge schedules invoke the provisioner and the consolidator handlers (the real
  `functions.*.handler.handler`, through their `configure` seam) at their rates. Each invocation
  is a thread that runs until it sleeps or returns, so a provisioner polling every second for 80 s
  overlaps with everything else exactly as concurrent Lambdas would.
* Workload schedules scale Deployments; the in-memory API server recreates evicted or lost pods.
* After every step the world reads what changed in the cluster onto its change feed: the pods'
  accounting follows pods and nodes and the kube-scheduler binds pending pods (or marks them
  Unschedulable); the functions' decisions are read; and the SQS event source mappings (one per
  interruption queue: the priority queue of EC2's events, the main queue of AWS Health's and the
  drain continuations) receive due messages and invoke the interruption handler with them
  (deleting those not reported in `batchItemFailures`).
* The kubelet: every instance CreateFleet starts becomes a Ready Node `boot_delay` seconds later,
  with the labels and taints of its user data, capacity from the catalog, providerID
  `aws:///zone/id`; when an instance is terminated its Node goes at once (pods still on it are
  lost) and EC2's state-change events (shutting-down, terminated) are put on the bus.
* Spot interruptions are put on EventBridge as EC2 does (rebalance recommendation, interruption
  warning, and after `notice` EC2 reclaims the instance); the rules route them to the priority queue.
* Capacity errors come from `SimulatedEc2` (nodewright.simulator.standins.ec2), asking the kubelet.

Functions that do not exist in this tree (`functions/interruption/handler.py`,
`functions/consolidator/handler.py`) are skipped with a warning in the report.

Which file does what
--------------------
`World` builds the stand-ins and the components and holds them; each component owns its state
and takes its collaborators in its constructor. Components do not call each other's hooks: what
happens (a pod bound, a Node gone, an instance launched or terminating) is published on one typed
change feed (`feed.py`), and each component subscribes to what it follows.

    __init__.py     `World`: builds and holds everything; `build()`, the schedule, `run()`, `release()`
    feed.py         the typed changes, the feed, and the cluster's change log read onto it
    wiring.py       `Functions`: the real handlers wired to controllers on the stand-ins
    invocations.py  `Invocations`: the deployed handlers; EventBridge schedules, asynchronous invokes;
                    `SingleFlight`: reserved concurrency 1 and Lambda's retries of throttled events
    queue.py        `QueueSource`: the SQS event source mappings of the interruption function
    pods.py         `PodAccounting`: pending pods, the kube-scheduler's runs, lost pods
    decisions.py    `Decisions`: the functions' decisions into the recorder
    kubelet.py      `Kubelet`: EC2's hooks and the kubelet (launches into Nodes, terminations)
    signals.py      `Ec2Signals`: EC2's events on EventBridge
    spot.py         `SpotInterruptions`: signals on EventBridge, EC2's reclaim, the records
    failures.py     `NodeFailures`: broken nodes and node repair's records
    blocks.py       `CapacityBlocks`: capacity blocks' expiration warnings and reclaims
    audits.py       `Audits`: budget and do-not-disrupt violations, limits, fleet choices,
                    consolidation replacements, duplicate and orphan instances after faults
    foreign.py      the nodes another autoscaler launched before the run
    waits.py        `CapacityWaits`: seconds from pending to the capacity committed to each pod

The stand-ins themselves are in `nodewright.simulator.standins`, the scenario in
`nodewright.simulator.scenario`, the recorder and the report in `nodewright.simulator.report`.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from functools import partial
from typing import Any

from nodewright.adapters.aws.state_store import DynamoStateStore
from nodewright.controllers.observe import RecordingObserver
from nodewright.inmemory.claimobjects import InMemoryClaimObjects
from nodewright.inmemory.clock import VirtualClock
from nodewright.model import labels as wk
from nodewright.model.nodepool import NodePool
from nodewright.model.workloads import DaemonSet
from nodewright.simulator.report.metrics import Recorder, Sample
from nodewright.simulator.scenario import Scenario
from nodewright.simulator.standins.account import STATE_TABLE, Account, launched_roles
from nodewright.simulator.standins.catalog import SimCatalog
from nodewright.simulator.standins.configuration import ScenarioConfiguration
from nodewright.simulator.standins.cpuclock import CpuChargedClock, LoopClock
from nodewright.simulator.standins.ec2 import SimulatedEc2
from nodewright.simulator.standins.faults import ORPHAN_GRACE_SECONDS, Faults
from nodewright.simulator.standins.kube import Deployments, KubeScheduler, SimulatedCluster
from nodewright.simulator.standins.kubehttp import HttpCluster
from nodewright.simulator.standins.lambdas import ACCOUNT, REGION, EventLoop, Lambdas
from nodewright.simulator.standins.mirrors import MirroredCloud, MirroredStateStore
from nodewright.simulator.standins.reservations import SimulatedReservations
from nodewright.simulator.world.audits import Audits
from nodewright.simulator.world.blocks import CapacityBlocks
from nodewright.simulator.world.decisions import Decisions
from nodewright.simulator.world.failures import NodeFailures
from nodewright.simulator.world.feed import ChangeFeed, ClusterChanges
from nodewright.simulator.world.foreign import add_initial_nodes
from nodewright.simulator.world.invocations import Invocations, SingleFlight
from nodewright.simulator.world.kubelet import Kubelet
from nodewright.simulator.world.pods import PodAccounting
from nodewright.simulator.world.queue import QueueSource
from nodewright.simulator.world.signals import Ec2Signals
from nodewright.simulator.world.spot import SpotInterruptions
from nodewright.simulator.world.waits import CapacityWaits
from nodewright.simulator.world.wiring import HANDLERS, Functions, functions_importable, live_instances

__all__ = ["HANDLERS", "World", "functions_importable"]


class World:
    """One simulation run (see the module docstring). Build inside `mock_aws` and the time patches:
    `World(scenario, session)`, then `build()`, `run()`, and `release()` at the end.

    Its attributes are the stand-ins the report, the runner and `--serve` read (the scenario,
    clock, cluster, account, catalog, recorder, observers, ...) and the components it composed.
    """

    def __init__(self, scenario: Scenario, session: Any) -> None:
        self.scenario = scenario
        # -- the stand-ins: clock, event loop, Lambda, cluster (and its API), faults, AWS
        # The plain virtual clock, or with `cpu_charge` one that the handlers' CPU time moves too.
        charged = CpuChargedClock(scenario.start, scenario.cpu_charge) if scenario.cpu_charge > 0 else None
        self.clock: LoopClock = VirtualClock(scenario.start) if charged is None else charged
        self.end = scenario.start + scenario.duration
        self.loop = EventLoop(self.clock)
        self.loop.after_step = self._after_step
        self.lambdas = Lambdas(
            self.loop, {name: getattr(scenario, name).memory_mb for name in HANDLERS}, charged=charged
        )
        self.cluster = SimulatedCluster(self.clock)
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
        # The NodeClaim objects the functions mirror their claims into (served over HTTP too).
        self.claim_objects = InMemoryClaimObjects(clock=self.clock)
        if self.http is not None:
            self.http.server.claims = self.claim_objects
        self.scheduler = KubeScheduler(self.cluster)
        self.deployments = Deployments(self.cluster, scenario.workloads)
        self.account = Account(session)
        self.catalog = SimCatalog(scenario.zones, scenario.nodepools)
        if scenario.devices:
            self.scheduler.device_types = self.catalog.instance_types(None)
        self.recorder = Recorder(start=scenario.start)
        self.observers = {name: RecordingObserver(now=self.clock.now) for name in HANDLERS}
        self.pools: dict[str, NodePool] = {p.name: p for p in scenario.nodepools}
        self.store = MirroredStateStore(DynamoStateStore(self.account.dynamodb, STATE_TABLE))
        self.foreign_nodes: list[str] = []  # nodes another autoscaler launched before the run
        # -- the components, each on its collaborators; hooks are subscriptions on the feed
        self.feed = ChangeFeed()
        self.changes = ClusterChanges(self.cluster, self.feed)
        rng = random.Random(scenario.seed)  # one seeded stream: which nodes are interrupted, or break
        signals = Ec2Signals(self.account.events, self.clock)
        self.failures = NodeFailures(
            cluster=self.cluster,
            recorder=self.recorder,
            clock=self.clock,
            loop=self.loop,
            rng=rng,
            consolidator=self.observers["consolidator"],
            feed=self.feed,
        )
        self.kubelet = Kubelet(
            scenario=scenario,
            clock=self.clock,
            loop=self.loop,
            lambdas=self.lambdas,
            cluster=self.cluster,
            catalog=self.catalog,
            pools=self.pools,
            faults=self.faults,
            recorder=self.recorder,
            ec2=self.account.ec2,
            failures=self.failures,
            signals=signals,
            feed=self.feed,
        )
        reservations = SimulatedReservations(
            scenario.capacity_reservations, start=scenario.start, account=ACCOUNT, region=REGION
        )
        self.ec2 = SimulatedEc2(self.account.ec2, self.kubelet, reservations=reservations, clock=self.clock.now)
        self.spot = SpotInterruptions(
            cluster=self.cluster,
            recorder=self.recorder,
            clock=self.clock,
            loop=self.loop,
            rng=rng,
            signals=signals,
            ec2=self.ec2,
            feed=self.feed,
        )
        self.blocks = CapacityBlocks(scenario, self.loop, self.ec2, signals, self.recorder)
        self.pods = PodAccounting(self.scheduler, self.recorder, self.spot, self.feed)
        self.waits = CapacityWaits(
            cluster=self.cluster, provisioner=self.observers["provisioner"], recorder=self.recorder, feed=self.feed
        )
        self.audits = Audits(
            scenario=scenario,
            clock=self.clock,
            recorder=self.recorder,
            cluster=self.cluster,
            catalog=self.catalog,
            faults=self.faults,
            store=self.store,
            spot=self.spot,
            feed=self.feed,
        )
        self.cluster.after_evict = self.audits.after_evict
        self.cluster.before_delete_node = partial(self.audits.audit_node, how="Node deleted through the API")
        self.decisions = Decisions(self.observers, self.clock, self.recorder, self.audits)
        self.single_flight = SingleFlight(scenario=scenario, clock=self.clock, loop=self.loop, lambdas=self.lambdas)
        self.invocations = Invocations(
            scenario=scenario,
            clock=self.clock,
            loop=self.loop,
            lambdas=self.lambdas,
            faults=self.faults,
            recorder=self.recorder,
            single_flight=self.single_flight,
        )
        self.queue = QueueSource(
            scenario=scenario,
            clock=self.clock,
            loop=self.loop,
            lambdas=self.lambdas,
            faults=self.faults,
            account=self.account,
            invocations=self.invocations,
        )
        self.functions = Functions(
            scenario=scenario,
            clock=self.clock,
            lambdas=self.lambdas,
            faults=self.faults,
            account=self.account,
            catalog=self.catalog,
            cluster=self.cluster,
            http=self.http,
            claim_objects=self.claim_objects,
            observers=self.observers,
            recorder=self.recorder,
            ec2=self.ec2,
            store=self.store,
            invocations=self.invocations,
        )

    @property
    def cloud(self) -> MirroredCloud:
        """The functions' EC2 cloud provider (once built)."""
        return self.functions.cloud

    @property
    def configuration(self) -> ScenarioConfiguration:
        """The functions' configuration (once built): the scenario's, and with `simulate --serve`
        the cluster's.
        """
        return self.functions.configuration

    def build(self) -> None:
        """Create the AWS resources, the cluster's fixed objects, the controllers and the schedules."""
        scenario = self.scenario
        self.account.create(scenario.nodeclasses, scenario.zones, scenario.interruption.timeout)
        if scenario.node_roles is not None:
            self.account.create_node_roles(scenario.nodeclasses)
        for daemonset in scenario.daemonsets:
            self.cluster.memory.add_daemonset(daemonset)
        for pdb in scenario.pdbs:
            self.cluster.memory.add_pdb(pdb)
        for manifest in scenario.devices:
            self.cluster.memory.devices.put(manifest)
        # Nodes another autoscaler launched before the run (a migration's starting point).
        self.foreign_nodes = add_initial_nodes(scenario, self.account, self.catalog, self.cluster)
        self.functions.wire()
        self._schedule()

    def _schedule(self) -> None:
        """Put the scenario's events on the virtual clock: each workload's scale events (at the
        times its replica schedule may change), the spot interruptions, the node failures, the
        capacity blocks' ends, the orphan audit after the last fault window and the functions'
        schedules. Everything else is scheduled as it happens (instances booting, interruption
        signals, asynchronous invokes, due SQS messages).
        """
        scenario = self.scenario
        for workload in scenario.workloads:
            for t in sorted({0.0, *workload.change_times(scenario.duration)}):
                self.loop.at(scenario.start + t, partial(self._scale, workload.key, t))
        for t, daemonset in scenario.late_daemonsets:
            self.loop.at(scenario.start + t, partial(self._add_daemonset, daemonset))
        for t in scenario.ami_releases:
            self.loop.at(scenario.start + t, self._release_images)
        for index, interruption in enumerate(scenario.interruptions):
            self.loop.at(scenario.start + interruption.at, partial(self.spot.interrupt, interruption, index))
        for index, failure in enumerate(scenario.node_failures):
            self.loop.at(scenario.start + failure.at, partial(self.failures.strike, failure, index))
        self.blocks.schedule()
        if scenario.faults_end is not None and scenario.faults_end + ORPHAN_GRACE_SECONDS <= scenario.duration:
            self.loop.at(scenario.start + scenario.faults_end + ORPHAN_GRACE_SECONDS, self.audits.audit_claims)
        for name in ("provisioner", "consolidator"):
            settings = getattr(scenario, name)
            if self.invocations.deployed(name) and settings.rate > 0:
                t = settings.offset
                while t < scenario.duration:
                    self.loop.at(scenario.start + t, partial(self.invocations.scheduled, name))
                    t += settings.rate

    def run(self, progress: Callable[[float], None] | None = None) -> None:
        """Run the scenario to its end; `progress` gets the virtual seconds done at each sample.
        Then close the books: the last audits and the mirrors checked against moto.
        """
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
            self.audits.audit_claims(
                f"run ended less than {ORPHAN_GRACE_SECONDS:g} s after the last fault" if late else ""
            )
        for name, seconds in self.lambdas.wall.items():
            self.recorder.wall[name] += seconds
        for problem in self.store.verify():
            self.recorder.warnings.append(f"state mirror differs from DynamoDB: {problem}")
        if self.scenario.node_roles is not None:
            self.recorder.node_roles = launched_roles(self.ec2.instance_profiles, self.account.iam)
        registry = {i.instance_id for i in live_instances(self.recorder)}
        described = {i.instance_id for i in self.cloud.described()}
        if registry != described:
            self.recorder.warnings.append(
                f"instance registry differs from DescribeInstances: {sorted(registry ^ described)[:10]}"
            )

    def release(self) -> None:
        """Stop serving the cluster, close the faults, and hand the functions back their own controllers."""
        if self.http is not None:
            self.http.stop()
        self.faults.close()
        self.functions.release()

    def _after_step(self) -> None:
        """After every step of the loop: the cluster's changes onto the feed, the functions'
        decisions, the kube-scheduler, and the queue's due messages, until nothing more happens
        at this instant.
        """
        for _ in range(100):
            self.changes.read()
            self.decisions.read()
            if self.pods.schedule():
                self.changes.read()
            self.pods.settle()
            if not self.queue.poll():
                return

    def _release_images(self) -> None:
        """AWS publishes a new EKS-optimized AMI release: every alias resolves to it from now on."""
        images = self.account.release_images()
        self.recorder.image_releases.append((self.clock.now(), frozenset(images.values())))

    def _add_daemonset(self, daemonset: DaemonSet) -> None:
        """A DaemonSet created during the run: its controller makes a pod for every node at once."""
        self.cluster.memory.add_daemonset(daemonset)
        self.cluster.memory.reconcile_daemonsets()

    def _scale(self, key: str, t: float) -> None:
        workload = self.deployments.workloads[key]
        # Stamped with the time the event was due, which a handler's charged CPU may have passed.
        self.deployments.scale(workload, workload.replicas_at(t), at=self.scenario.start + t)

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
                booting=self.kubelet.booting,
                pending=self.pods.pending,
                running=sum(1 for p in self.cluster.snapshot().pods if p.node_name and not p.daemon),
                hourly_cost=sum(r.price for r in live),
            )
        )
        self.cluster.forget_calls()
