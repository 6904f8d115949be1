"""Crash anywhere: the interruption function killed at every effect point, and at every pair.

What runs: the real `InterruptionController` (and the real provisioner, for the replacement) over
the in-memory cluster, cloud and state store, on a virtual clock, driven by a model of the
deployed queue: a message a dead invocation held comes back at its visibility deadline (the
function's timeout + the margin, `nodewright/config/timings.py`), goes to the dead-letter queue
after `QUEUE_MAX_RECEIVE_COUNT` receives, and a message whose id already completed is dropped (the
handler's idempotency on the event id). Continuations go to the same queue with their delay.

The case: a spot interruption warning (120 s notice) for a node running `PODS` pods under a strict
PodDisruptionBudget (one pod down at a time); the replacement boots in `BOOT` seconds; the
provisioner also runs on its one-minute schedule. An effect point is each write the controller
makes through a port: a Kubernetes write (cordon, eviction, Event, Node delete), a state-table
write (drain record, offering block, claim delete), an EC2 write (terminate), a continuation sent,
a provisioner invocation. At a point the invocation dies either before the write (`kill`) or just
after it, the answer lost (`lost`: the write happened, the response did not arrive).

Checked after the reclaim and ten quiet minutes: no pod was on the node when AWS took it or when
it was deleted (`lost`), no second of PDB violation, no duplicate instance for a claim, no orphan
(a live instance without a claim, a claim without a live instance, a Node without an instance),
every pod bound, no message in the dead-letter queue.

The provisioner's case (`--function provisioner`, `ProvisionerCrashWorld`): pods arrive, the
function runs every minute, killed at its writes (claim records, CreateFleet) the same way.

Run: `python -m bench.crash_points` (every single point and every pair; the figures go in the
README), `--visibility` to try another visibility timeout, `--function provisioner`.
"""

from __future__ import annotations

import argparse
import functools
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from bench.harness.cluster_actors import Kubelet, node_for, pdb, schedule_first_fit
from bench.harness.crash import KILL, LOST, Point, singles
from nodewright.config.timings import INTERRUPTION_TIMEOUT_SECONDS, QUEUE_MAX_RECEIVE_COUNT, visibility_seconds
from nodewright.controllers.assembly import build_provisioner
from nodewright.controllers.interruption import InterruptionController
from nodewright.controllers.observe import RecordingObserver
from nodewright.controllers.provisionoptions import ProvisionerOptions, StaticConfiguration
from nodewright.engine.interruption import parse
from nodewright.inmemory.catalog import FixedCatalog
from nodewright.inmemory.clock import VirtualClock
from nodewright.inmemory.cloud import FakeCloudProvider
from nodewright.inmemory.cluster import InMemoryCluster
from nodewright.inmemory.state import InMemoryStateStore
from nodewright.model import labels as wk
from nodewright.model.instance import Instance
from nodewright.model.instancetype import InstanceType, Offering
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.nodepool import NodePool
from nodewright.model.pod import Pod
from nodewright.model.requirements import Requirement, Requirements
from nodewright.model.resources import Resources

START = 1_800_000_000.0
NOTICE = 120.0
BOOT = 35.0
PODS = 6
SETTLE = 600.0
PENDING_PODS = 20
PROVISIONER_SETTLE = 1200.0
ZONE = "us-east-1a"
TYPE = "m5.2xlarge"

# The writes of each port the controller holds (reads are not effects).
WRITES: dict[str, frozenset[str]] = {
    "cluster": frozenset({"cordon", "uncordon", "evict", "record", "delete_node", "label_node", "delete_pod"}),
    "store": frozenset(
        {
            "save_drain",
            "delete_drain",
            "block_offerings",
            "delete_claim",
            "create_claim",
            "save_claim",
            "acquire_lease",
            "release_lease",
            "save_command",
            "delete_command",
        }
    ),
    "cloud": frozenset({"terminate", "launch"}),
    "continuations": frozenset({"send"}),
    "provisioner": frozenset({"request"}),
}
# The deployed queue's visibility timeout: how long a message a dead invocation held stays away.
VISIBILITY = visibility_seconds(INTERRUPTION_TIMEOUT_SECONDS)


class Crash(Exception):
    """The invocation dies here (the harness's stand-in for a killed Lambda)."""


@dataclass
class Points:
    """Counts the writes and kills the invocation at the planned ones; records what each was."""

    plan: dict[int, str] = field(default_factory=dict)
    count: int = 0
    names: list[str] = field(default_factory=list)

    def wrap(self, port: str, target: Any) -> Any:
        return _Proxy(self, port, target)

    def call(self, name: str, method: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        self.count += 1
        self.names.append(name)
        mode = self.plan.get(self.count)
        if mode == KILL:
            raise Crash(f"killed before write {self.count} ({name})")
        result = method(*args, **kwargs)
        if mode == LOST:
            raise Crash(f"answer of write {self.count} ({name}) lost")
        return result


class _Proxy:
    def __init__(self, points: Points, port: str, target: Any) -> None:
        self._points, self._port, self._target = points, port, target

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if name in WRITES[self._port] and callable(attr):
            points, label = self._points, f"{self._port}.{name}"
            return lambda *a, **k: points.call(label, attr, a, k)
        return attr


@dataclass
class Message:
    id: str
    body: dict[str, Any]
    visible_at: float
    receives: int = 0


@dataclass
class Outcome:
    """What one run left: the checks of the module docstring (all zero or empty when it converged)."""

    lost: int
    pdb_violation_seconds: int
    duplicates: int
    orphans: list[str]
    pending: int
    dead_letters: int
    writes: int
    crashes: int

    @property
    def converged(self) -> bool:
        return not (
            self.lost or self.pdb_violation_seconds or self.duplicates or self.orphans or self.pending
        ) and not (self.dead_letters)


class _Queue:
    """The deployed queue as the controller's continuations port and the event source."""

    def __init__(self, clock: VirtualClock) -> None:
        self.clock = clock
        self.messages: list[Message] = []
        self.dead: list[Message] = []

    def send(self, event: dict[str, Any], delay: float) -> None:
        self.messages.append(Message(str(event["id"]), dict(event), self.clock.now() + delay))


class CrashWorld:
    """One run of the case with crashes at `plan` (ordinal -> mode)."""

    def __init__(self, plan: dict[int, str], *, visibility: float = VISIBILITY) -> None:
        self.visibility = visibility
        self.clock = VirtualClock(START)
        self.cluster = InMemoryCluster(self.clock, recreate_owned_pods=True)
        self.cloud = FakeCloudProvider(self.clock)
        self.store = InMemoryStateStore()
        self.observer = RecordingObserver()
        self.queue = _Queue(self.clock)
        self.points = Points(dict(plan))
        self.pools = (_pool(),)
        self.provision_requested = False
        self.completed: set[str] = set()
        self.crashes = 0
        self.pdb = pdb("web", "web", min_available=PODS - 1)
        self.kubelet = Kubelet(self.cluster, self.cloud, self.clock, _TYPES, boot=BOOT)
        store = self.points.wrap("store", self.store)
        self.controller = InterruptionController(
            cluster=self.points.wrap("cluster", self.cluster),
            claim_records=store,
            drain_records=store,
            offering_blocks=store,
            cloud=self.points.wrap("cloud", self.cloud),
            clock=self.clock,
            config=StaticConfiguration(self.pools),
            observer=self.observer,
            continuations=self.points.wrap("continuations", self.queue),
            provisioner=self.points.wrap("provisioner", self),
        )

    # -- the provisioner trigger port: invoked asynchronously, so it runs at the next second
    def request(self, reason: str) -> None:
        self.provision_requested = True

    def run(self) -> Outcome:
        self._spot_node()
        warning = _spot_warning(self.clock.now())
        self.queue.messages.append(Message(warning["id"], warning, self.clock.now()))
        reclaim = START + NOTICE
        violations = 0
        while self.clock.now() < reclaim + SETTLE:
            now = self.clock.now()
            self._deliver(now)
            if self.provision_requested or int(now - START) % 60 == 0:
                self.provision_requested = False
                self._provision()
            if reclaim <= now < reclaim + 1:
                self._reclaim()
            self.kubelet.register_booted()
            schedule_first_fit(self.cluster)
            if self._healthy() < self.pdb_min:
                violations += 1
            self.clock.advance(1.0)
        return self._outcome(violations)

    @property
    def pdb_min(self) -> int:
        return PODS - 1

    # -- the actors ---------------------------------------------------------------------------

    def _deliver(self, now: float) -> None:
        for message in sorted(self.queue.messages, key=lambda m: m.visible_at):
            if message.visible_at > now:
                continue
            if message.id in self.completed:  # the handler's idempotency: done once already
                self.queue.messages.remove(message)
                continue
            message.receives += 1
            try:
                self.controller.handle(parse(message.body))
            except Crash:
                self.crashes += 1
                if message.receives >= QUEUE_MAX_RECEIVE_COUNT:
                    self.queue.messages.remove(message)
                    self.queue.dead.append(message)
                else:
                    message.visible_at = now + self.visibility
                continue
            self.completed.add(message.id)
            self.queue.messages.remove(message)

    def _provision(self) -> None:
        build_provisioner(
            cluster=self.cluster,
            cloud=self.cloud,
            store=self.store,
            clock=self.clock,
            config=StaticConfiguration(self.pools),
            catalog=FixedCatalog(_TYPES),
            observer=self.observer,
            options=ProvisionerOptions(),
            sleep=lambda _: None,
        ).provision(self.cluster.snapshot())

    def _reclaim(self) -> None:
        """AWS takes the instance at the end of the notice, and its Node goes with it; EventBridge
        sends the instance's state change (`terminated`) to the queue, whoever terminated it.
        """
        self.cloud.terminate(["i-spot"])
        if self.cluster.get_node("spot") is not None:
            self.cluster.delete_node("spot")
        changed = _event("state-change-1", "EC2 Instance State-change Notification", self.clock.now())
        changed["detail"] = {"instance-id": "i-spot", "state": "terminated"}
        self.queue.messages.append(Message(changed["id"], changed, self.clock.now()))

    def _healthy(self) -> int:
        return sum(1 for p in self.cluster.pods() if p.labels.get("app") == "web" and p.node_name and not p.deleting)

    # -- setup and checks ---------------------------------------------------------------------

    def _spot_node(self) -> None:
        instance = self.cloud.add_instance(
            Instance(
                instance_id="i-spot",
                instance_type=TYPE,
                zone=ZONE,
                capacity_type="spot",
                state="running",
                launched_at=START - 3600,
                nodeclaim="claim-spot",
                nodepool="default",
                price=0.15,
            )
        )
        self.store.create_claim(
            NodeClaim(
                name="claim-spot",
                nodepool="default",
                state="initialized",
                instance_type=TYPE,
                capacity_type="spot",
                zone=ZONE,
                price=0.15,
                instance_id=instance.instance_id,
                provider_id=instance.provider_id,
                node_name="spot",
                created_at=START - 3600,
            )
        )
        self.cluster.add_node(node_for(instance, _TYPES, "spot"))
        self.cluster.add_pdb(self.pdb)
        for i in range(PODS):
            p = self.cluster.add_pod(_pod(f"web-{i}"))
            self.cluster.bind(p, "spot")

    def _outcome(self, violations: int) -> Outcome:
        return _outcome(
            self.cluster, self.cloud, self.store, self.points, self.crashes, violations, len(self.queue.dead)
        )


class ProvisionerCrashWorld:
    """The provisioner killed at `plan`'s writes: `PENDING_PODS` pods arrive at once; the function
    runs every minute (reconcile, then a pass), each run a new invocation; a dead one is simply
    the next minute's to finish. Checked after `PROVISIONER_SETTLE`: every pod bound, no duplicate
    instance for a claim, no orphan.
    """

    def __init__(self, plan: dict[int, str]) -> None:
        self.clock = VirtualClock(START)
        self.cluster = InMemoryCluster(self.clock)
        self.cloud = FakeCloudProvider(self.clock)
        self.store = InMemoryStateStore()
        self.points = Points(dict(plan))
        self.crashes = 0
        self.kubelet = Kubelet(self.cluster, self.cloud, self.clock, _TYPES, boot=BOOT)
        self.provisioner = build_provisioner(
            cluster=self.points.wrap("cluster", self.cluster),
            cloud=self.points.wrap("cloud", self.cloud),
            store=self.points.wrap("store", self.store),
            clock=self.clock,
            config=StaticConfiguration((_pool(),)),
            catalog=FixedCatalog(_TYPES),
            observer=RecordingObserver(),
            options=ProvisionerOptions(),
            sleep=lambda _: None,
        )

    def run(self) -> Outcome:
        for i in range(PENDING_PODS):
            self.cluster.add_pod(_pod(f"web-{i}"))
        while self.clock.now() < START + PROVISIONER_SETTLE:
            if int(self.clock.now() - START) % 60 == 0:
                try:
                    self.provisioner.housekeeping.reconcile(self.cluster.snapshot())
                    self.provisioner.provision(self.cluster.snapshot())
                except Crash:
                    self.crashes += 1
            self.kubelet.register_booted()
            schedule_first_fit(self.cluster)
            self.clock.advance(1.0)
        return _outcome(self.cluster, self.cloud, self.store, self.points, self.crashes, violations=0, dead=0)


def provisioner_run(plan: dict[int, str]) -> Outcome:
    """One run of the provisioner case with the invocation killed at `plan`'s writes."""
    return ProvisionerCrashWorld(plan).run()


def run(plan: dict[int, str], *, visibility: float = VISIBILITY) -> Outcome:
    """One run of the case with the invocation killed at `plan`'s writes."""
    return CrashWorld(plan, visibility=visibility).run()


Runner = Callable[[dict[int, str]], Outcome]


def pairs(writes: int, runner: Runner = run) -> Iterable[tuple[Point, ...]]:
    """Every pair: a first crash point, then every point of the run that first crash leaves."""
    for (first,) in singles(writes):
        after = runner({first.ordinal: first.mode}).writes
        for n in range(first.ordinal + 1, after + 1):
            for mode in (KILL, LOST):
                yield first, Point(n, mode)


def main(argv: list[str] | None = None) -> int:
    """Run every single crash point and every pair; 1 when a run did not converge."""
    parser = argparse.ArgumentParser(prog="python -m bench.crash_points", description=__doc__.split("\n")[0])
    parser.add_argument("--function", choices=("interruption", "provisioner"), default="interruption")
    parser.add_argument(
        "--visibility", type=float, default=VISIBILITY, help="the queue's visibility timeout (default: as deployed)"
    )
    parser.add_argument("--singles-only", action="store_true")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    runner: Runner = (
        provisioner_run if args.function == "provisioner" else functools.partial(run, visibility=args.visibility)
    )
    clean = runner({})
    if args.function == "interruption":
        print(f"visibility timeout {args.visibility:g} s (deployed: {VISIBILITY} s)")
    print(f"{args.function}, no crash: {clean.writes} writes, converged={clean.converged}")
    cases: list[tuple[Point, ...]] = singles(clean.writes)
    if not args.singles_only:
        cases += list(pairs(clean.writes, runner))
    failures: dict[int, list[str]] = {1: [], 2: []}
    totals = {1: 0, 2: 0}
    lost = {1: 0, 2: 0}
    for case in cases:
        outcome = runner({p.ordinal: p.mode for p in case})
        totals[len(case)] += 1
        if outcome.lost:
            lost[len(case)] += 1
        if not outcome.converged:
            failures[len(case)].append(f"{','.join(map(str, case))}: {outcome}")
    for size, name in ((1, "single crashes"), (2, "pairs")):
        if totals[size]:
            print(f"{name}: {totals[size]} runs, {lost[size]} losing pods, {len(failures[size])} not converged")
            for line in failures[size][:10]:
                print(f"  {line}")
    print(f"wall {time.perf_counter() - started:.1f} s")
    return 1 if failures[1] or failures[2] else 0


def _instance_type(name: str, cpu: str, memory: str, price: float, spot: float) -> InstanceType:
    family, _, size = name.partition(".")
    offerings = (Offering(ZONE, "on-demand", price), Offering(ZONE, "spot", spot))
    requirements = Requirements(
        [
            Requirement.new(wk.INSTANCE_TYPE, "In", [name]),
            Requirement.new(wk.ARCH, "In", ["amd64"]),
            Requirement.new(wk.OS, "In", ["linux"]),
            Requirement.new(wk.INSTANCE_FAMILY, "In", [family]),
            Requirement.new(wk.INSTANCE_CATEGORY, "In", [family[0]]),
            Requirement.new(wk.INSTANCE_SIZE, "In", [size]),
            Requirement.new(wk.ZONE, "In", [ZONE]),
            Requirement.new(wk.CAPACITY_TYPE, "In", ["on-demand", "spot"]),
        ]
    )
    capacity = Resources.of(cpu=cpu, memory=memory, pods=58)
    return InstanceType(name, requirements, capacity, Resources(), offerings)


_TYPES: tuple[InstanceType, ...] = (
    _instance_type("m5.xlarge", "4", "16Gi", 0.192, 0.08),
    _instance_type(TYPE, "8", "32Gi", 0.384, 0.15),
)


def _pool() -> NodePool:
    return NodePool(name="default", requirements=Requirements([]))


def _pod(name: str) -> Pod:
    return Pod(
        namespace="default",
        name=name,
        labels={"app": "web"},
        requests=Resources.of(cpu="500m", memory="1Gi", pods=1),
        owner_kind="ReplicaSet",
        unschedulable=True,
        phase="Pending",
    )


def _outcome(
    cluster: InMemoryCluster,
    cloud: FakeCloudProvider,
    store: InMemoryStateStore,
    points: Points,
    crashes: int,
    violations: int,
    dead: int,
) -> Outcome:
    live = [i for i in cloud.instances() if i.live]
    claims = store.claims()
    by_claim: dict[str, int] = {}
    for instance in live:
        by_claim[instance.nodeclaim] = by_claim.get(instance.nodeclaim, 0) + 1
    claimed = {c.instance_id for c in claims}
    orphans = [f"instance {i.instance_id}" for i in live if i.instance_id not in claimed]
    live_ids = {i.instance_id for i in live}
    orphans += [f"claim {c.name}" for c in claims if c.instance_id and c.instance_id not in live_ids]
    orphans += [f"claim {c.name} (no instance)" for c in claims if not c.instance_id]
    orphans += [f"node {n.name}" for n in cluster.nodes() if n.instance_id not in live_ids]
    return Outcome(
        lost=len(cluster.lost_pods()),
        pdb_violation_seconds=violations,
        duplicates=sum(n - 1 for n in by_claim.values() if n > 1),
        orphans=orphans,
        pending=sum(1 for p in cluster.pods() if not p.node_name and not p.daemon),
        dead_letters=dead,
        writes=points.count,
        crashes=crashes,
    )


def _spot_warning(now: float) -> dict[str, Any]:
    warning = _event("spot-warning-1", "EC2 Spot Instance Interruption Warning", now)
    warning["detail"] = {"instance-id": "i-spot", "instance-action": "terminate"}
    return warning


def _event(ident: str, detail_type: str, now: float) -> dict[str, Any]:
    return {
        "version": "0",
        "id": ident,
        "detail-type": detail_type,
        "source": "aws.ec2",
        "account": "123456789012",
        "time": datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": "us-east-1",
        "resources": ["arn:aws:ec2:us-east-1:123456789012:instance/i-spot"],
    }


if __name__ == "__main__":
    raise SystemExit(main())
