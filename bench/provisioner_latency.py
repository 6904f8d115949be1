"""Provisioner latency: from a pod becoming pending to its CreateFleet call (`python -m bench.provisioner_latency`).

Drives the real `Provisioner.run()` (nodewright/controllers/provisioning.py), invocation after
invocation as the Lambda schedule runs it, against the in-memory cluster, the in-memory state
store and the fake cloud provider, on a virtual clock, for several arrival patterns; prints per
pattern the median, p99 and max wait and the CPU seconds per provisioning pass. Goal (issue 4):
median <= 3 s, p99 <= 12 s.

The model, and what is real:

* Controller: real (batching, solve, claims, launches, housekeeping), with its default
  `ProvisionerOptions` unless `--option name=value` overrides one.
* Time: a virtual clock that sleeps take no real time on, but that also advances by the CPU
  seconds the process spends between sleeps (times `--cpu-scale`; 1.0 = this machine, ~1.7 = a
  1,024 MB Lambda, which gets 0.58 of a vCPU). So a one-second solve delays the pods behind it
  by one second, as it would in the Lambda. The world's own work (creating pods, registering
  nodes, binding) is not charged.
* Schedule (infra/config.py): an EventBridge tick every `--rate` s (60), the function's timeout
  `--timeout` s (68), the loop stopping `deadline_margin` (10 s) before it, reserved concurrency
  1. A tick that finds the previous invocation still running is throttled and retried by Lambda
  1, 2, 4, 8, 16, ... s later (exponential backoff from 1 s) until the event is older than
  its maximum age (one tick, `configure_single_flight`); then it is dropped. Between
  invocations nothing watches the cluster.
* Pods: created at their arrival time already marked unschedulable (the emulated kube-scheduler
  found no room), unless a registered node has room, in which case they are bound at once and
  never pending (counted as `bound`, not measured). Shapes cycle through a few common requests.
* Nodes: a launched instance registers as a Ready node `--boot-seconds` (40) after CreateFleet;
  the emulated kube-scheduler then binds the claim's pods, then any other pending pod that fits.
* CreateFleet: the fake cloud answers at once, or after `--fleet-seconds` of virtual time (the
  controller launches claims one after another, so later claims of a pass wait for earlier ones).

A pod's wait ends when capacity is committed to it: the CreateFleet call for a claim holding it
is issued, it is nominated onto a node already launched whose Node has not registered yet, or
kube-scheduler binds it to a node with room, whichever comes first. A nomination onto a claim
whose node had already registered does not count ("phantom": nothing will come for the pod);
the table counts them. Pods with no commitment by the end are `unserved`.

Patterns (times from the first invocation's start; every pattern is deterministic):
  single        one pod needing its own node (3 cpu) every 97.31 s, 30 times (phases vary)
  burst-100     100 pods at once, 8 times, 137.43 s apart
  burst-1000    1,000 pods at once, 4 times, 211.57 s apart
  ramp-1000     a Deployment scaled to 1,000 replicas, created at 50 pods/s for 20 s
  poisson-1     a Poisson stream of 1 pod/s for 10 minutes
  poisson-5     a Poisson stream of 5 pods/s for 10 minutes
  stream-0.3s   one pod every 0.3 s for 10 minutes (never a 1 s idle gap)
  mid-burst     bursts of 100 in the middle of an invocation (30 s), during the pass that handles
                them (30.3 s), late (55 s), just before the loop stops (79.5 s) and between
                invocations (85 s)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from bench.harness.instance_types import benchmark_types, default_pool, machine
from nodewright.controllers.assembly import build_provisioner
from nodewright.controllers.observe import RecordingObserver
from nodewright.controllers.provisioning import Provisioner
from nodewright.controllers.provisionoptions import PassReport, ProvisionerOptions, StaticConfiguration
from nodewright.inmemory.catalog import FixedCatalog
from nodewright.inmemory.cloud import FakeCloudProvider
from nodewright.inmemory.cluster import InMemoryCluster
from nodewright.inmemory.state import InMemoryStateStore
from nodewright.inmemory.timeline import Timeline, Waits, capacity_committed
from nodewright.model import labels as wk
from nodewright.model.instance import Instance
from nodewright.model.instancetype import InstanceType
from nodewright.model.node import Node
from nodewright.model.pod import Pod
from nodewright.model.resources import Resources
from nodewright.model.snapshot import ClusterSnapshot
from nodewright.ports import LaunchRequest

START = 1_800_000_000.0
GOAL_MEDIAN = 3.0
GOAL_P99 = 12.0
SHAPES = (("250m", "512Mi"), ("500m", "1Gi"), ("1", "2Gi"), ("2", "4Gi"), ("500m", "4Gi"), ("1", "1Gi"))
DRAIN_SECONDS = 200.0
LAMBDA_RETRY_OFFSETS = (0.0, 1.0, 3.0, 7.0, 15.0, 31.0, 63.0, 127.0)


# --- arrival patterns ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Pattern:
    """Arrivals: (seconds after the first invocation starts, pods arriving then), and the shapes."""

    name: str
    arrivals: tuple[tuple[float, int], ...]
    shapes: tuple[tuple[str, str], ...] = SHAPES

    @property
    def pods(self) -> int:
        return sum(count for _, count in self.arrivals)


def _poisson(rate: float, seconds: float, seed: int, start: float = 5.0) -> tuple[tuple[float, int], ...]:
    rng = random.Random(seed)
    out: list[tuple[float, int]] = []
    t = start + rng.expovariate(rate)
    while t < start + seconds:
        out.append((round(t, 3), 1))
        t += rng.expovariate(rate)
    return tuple(out)


def patterns(quick: bool = False) -> dict[str, Pattern]:
    """Every pattern by name (`quick`: fewer repetitions and a 2-minute stream, for smoke tests)."""
    reps = 2 if quick else 0
    minutes = 2.0 if quick else 10.0
    found = [
        # Repetitions at odd intervals, so they meet the polls and the schedule at varied phases.
        Pattern("single", tuple((10.0 + 97.31 * i, 1) for i in range(reps * 2 or 30)), (("3", "6Gi"),)),
        Pattern("burst-100", tuple((10.0 + 137.43 * i, 100) for i in range(reps or 8))),
        Pattern("burst-1000", tuple((10.0 + 211.57 * i, 1000) for i in range(reps or 4))),
        Pattern("ramp-1000", tuple((10.0 + i / 50.0, 1) for i in range(1000))),
        Pattern("poisson-1", _poisson(1.0, 60 * minutes, seed=1)),
        Pattern("poisson-5", _poisson(5.0, 60 * minutes, seed=5)),
        Pattern("stream-0.3s", tuple((5.0 + 0.3 * i, 1) for i in range(int(60 * minutes / 0.3)))),
        Pattern("mid-burst", ((30.0, 100), (30.3, 100), (55.0, 100), (79.5, 100), (85.0, 100))),
    ]
    return {p.name: p for p in found}


# --- the world: clock, kube-scheduler and kubelets -------------------------------------------------


class ChargedClock:
    """A virtual clock that also advances by the CPU time spent between its readings (x `scale`).

    `quiet(action)` wraps world emulation whose CPU must not be charged.
    """

    def __init__(self, start: float, scale: float = 1.0) -> None:
        self._now = start
        self.scale = scale
        self._mark = time.process_time()

    def now(self) -> float:
        if self.scale > 0:
            cpu = time.process_time()
            self._now += (cpu - self._mark) * self.scale
            self._mark = cpu
        return self._now

    def advance_to(self, t: float) -> float:
        """Move to `t`, or stay where charged CPU time already carried the clock past it."""
        self._now = max(t, self.now())
        return self._now

    def advance(self, seconds: float) -> float:
        return self.advance_to(self.now() + seconds)

    def quiet(self, action: Callable[[], object]) -> Callable[[], object]:
        def run() -> object:
            self.now()  # charge what ran before
            try:
                return action()
            finally:
                self._mark = time.process_time()

        return run


class World:
    """The emulated cluster around the provisioner: arrivals, kube-scheduler, kubelets."""

    def __init__(self, clock: ChargedClock, types: Sequence[InstanceType], boot_seconds: float) -> None:
        self.clock = clock
        self.timeline = Timeline(clock)
        self.cluster = FeedingCluster(self.timeline, clock)
        self.store = InMemoryStateStore()
        self.types = {t.name: t for t in types}
        self.boot_seconds = boot_seconds
        self.free: dict[str, Resources] = {}  # node -> room left
        self.registered_at: dict[str, float] = {}  # claim -> when its Node registered
        self.bound_at: dict[str, float] = {}  # pod -> when bound, for pods that were pending
        self.never_pending: set[str] = set()  # pods bound on arrival

    def arrive(self, pods: Sequence[Pod]) -> None:
        for pod in pods:
            node = self._room_for(pod)
            if node is None:
                self.cluster.add_pod(pod)
            else:
                self.cluster.add_pod(dataclasses.replace(pod, unschedulable=False))
                self._bind(pod.key, node, pod.requests, pending=False)

    def launched(self, instance: Instance) -> None:
        """The fake cloud's on_launch: the node registers `boot_seconds` later."""
        self.timeline.at(instance.launched_at + self.boot_seconds, self.clock.quiet(partial(self._register, instance)))

    def _register(self, instance: Instance) -> None:
        kind = self.types[instance.instance_type]
        name = f"ip-{instance.instance_id}"
        labels = {
            wk.HOSTNAME: name,
            wk.INSTANCE_TYPE: instance.instance_type,
            wk.ZONE: instance.zone,
            wk.CAPACITY_TYPE: instance.capacity_type,
            wk.ARCH: kind.arch,
            wk.NODEPOOL: instance.nodepool,
            wk.NW_NODEPOOL: instance.nodepool,
            wk.NW_NODECLAIM: instance.nodeclaim,
        }
        node = Node(
            name=name,
            labels=labels,
            capacity=kind.capacity,
            allocatable=kind.allocatable,
            provider_id=f"aws:///{instance.zone}/{instance.instance_id}",
            ready=True,
        )
        self.cluster.add_node(node)
        self.free[name] = kind.allocatable
        self.registered_at[instance.nodeclaim] = self.clock.now()
        claim = next((c for c in self.store.claims() if c.name == instance.nodeclaim), None)
        held = set(claim.pods) if claim is not None else set()
        pending = sorted(
            (p for p in self.cluster.pods() if not p.node_name),
            key=lambda p: (p.key not in held, p.created_at, p.key),
        )
        for pod in pending:  # kube-scheduler retries unschedulable pods when a node is added
            target = name if pod.requests.fits_in(self.free[name]) else self._room_for(pod)
            if target is not None:
                self._bind(pod.key, target, pod.requests, pending=True)

    def _room_for(self, pod: Pod) -> str | None:
        return next((node for node, room in self.free.items() if pod.requests.fits_in(room)), None)

    def _bind(self, key: str, node: str, requests: Resources, *, pending: bool) -> None:
        self.cluster.bind(key, node)
        self.free[node] = self.free[node] - requests
        if pending:
            self.bound_at[key] = self.clock.now()
        else:
            self.never_pending.add(key)


class FeedingCluster(InMemoryCluster):
    """The in-memory cluster, bringing the world up to date before each snapshot: arrivals that
    happened while the provisioner computed are visible as soon as it looks again.
    """

    def __init__(self, timeline: Timeline, clock: ChargedClock) -> None:
        super().__init__(clock)
        self._timeline = timeline

    def snapshot(self) -> ClusterSnapshot:
        self._timeline.run_due()
        return super().snapshot()


class IssuedFleets(FakeCloudProvider):
    """The fake cloud, recording when each CreateFleet was issued and taking `seconds` to answer."""

    def __init__(self, clock: ChargedClock, world: World, seconds: float) -> None:
        super().__init__(clock, on_launch=world.launched)
        self._charged = clock
        self.seconds = seconds
        self.issued: list[tuple[float, tuple[str, ...]]] = []

    def launch(self, request: LaunchRequest) -> Instance:
        self.issued.append((self._charged.now(), request.claim.pods))
        instance = super().launch(request)
        if self.seconds:
            self._charged.advance(self.seconds)
        return instance


class MeteredProvisioner(Provisioner):
    """The real provisioner, timing the CPU of each pass."""

    def __init__(self, *components: Any, **ports: Any) -> None:
        super().__init__(*components, **ports)
        self.pass_cpu: list[float] = []

    def provision(self, snapshot: ClusterSnapshot) -> PassReport:
        started = time.process_time()
        try:
            return super().provision(snapshot)
        finally:
            self.pass_cpu.append(time.process_time() - started)


# --- one pattern ----------------------------------------------------------------------------------


@dataclass
class Settings:
    """How the world and the schedule behave (see the module docstring)."""

    rate: float = 60.0
    timeout: float = 90.0
    boot_seconds: float = 40.0
    fleet_seconds: float = 0.0
    cpu_scale: float = 1.0
    options: dict[str, float] = field(default_factory=dict)
    # True: the loop waits for the pending pods to change (as the watch-fed adapter wakes it);
    # False: it polls once a second, as before the adapter watched.
    wake_on_change: bool = True


@dataclass
class Result:
    """What one pattern measured."""

    pattern: str
    pods: int
    waits: Waits
    bound: int
    unserved: int
    phantom: int
    invocations: int
    passes: int
    fleets: int
    hourly_cost: float
    pass_cpu_median: float
    pass_cpu_max: float
    coverage: float
    wall_seconds: float

    def as_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["waits"] = dataclasses.asdict(self.waits)
        return out


def next_start(tick: int, end: float, rate: float) -> tuple[int, float]:
    """The next invocation after one that ran until `end` and was started by tick `tick`:
    (its tick, its start), as Lambda retries a throttled scheduled event.
    """
    while True:
        tick += 1
        for offset in LAMBDA_RETRY_OFFSETS:
            if offset > rate:  # older than its maximum event age: dropped
                break
            if tick * rate + offset >= end:
                return tick, tick * rate + offset


def _pods(pattern: Pattern, at: float, count: int, first: int) -> list[Pod]:
    out = []
    for i in range(first, first + count):
        cpu, memory = pattern.shapes[i % len(pattern.shapes)]
        out.append(
            Pod(
                namespace="default",
                name=f"{pattern.name}-{i}",
                uid=f"uid-{i}",
                labels={"app": pattern.name},
                requests=Resources.of(cpu=cpu, memory=memory, pods=1),
                owner_kind="ReplicaSet",
                unschedulable=True,
                created_at=at,
            )
        )
    return out


def run_pattern(pattern: Pattern, types: Sequence[InstanceType], settings: Settings) -> Result:
    """Run the pattern through as many invocations as it takes; measure every pod's wait."""
    wall = time.perf_counter()
    clock = ChargedClock(START, settings.cpu_scale)
    world = World(clock, types, settings.boot_seconds)
    cloud = IssuedFleets(clock, world, settings.fleet_seconds)
    observer = RecordingObserver()
    provisioner = build_provisioner(
        kind=MeteredProvisioner,
        cluster=world.cluster,
        cloud=cloud,
        store=world.store,
        clock=clock,
        config=StaticConfiguration((default_pool(),)),
        catalog=FixedCatalog(tuple(types)),
        observer=observer,
        options=ProvisionerOptions(**settings.options),  # type: ignore[arg-type]
        sleep=world.timeline.sleep,
        wait=world.timeline.sleep if settings.wake_on_change else None,
    )
    assert isinstance(provisioner, MeteredProvisioner)
    first = 0
    for at, count in pattern.arrivals:
        world.timeline.at(START + at, clock.quiet(partial(world.arrive, _pods(pattern, START + at, count, first))))
        first += count
    horizon = START + max(at for at, _ in pattern.arrivals) + DRAIN_SECONDS
    tick, start, covered, invocations, passes = 0, START, 0.0, 0, 0
    while start < horizon:
        world.timeline.sleep(max(0.0, start - clock.now()))
        report = provisioner.run(clock.now() + settings.timeout, invocation=f"invocation-{invocations}")
        end = clock.now()
        covered += end - start
        invocations += 1
        passes += report.passes
        tick, relative = next_start(tick, end - START, settings.rate)
        start = START + relative
    world.timeline.sleep(max(0.0, horizon - clock.now()))

    # When capacity was committed to each pod: CreateFleet issued, a real nomination, or a binding.
    commitments: list[tuple[str, float]] = [(key, at) for at, pods in cloud.issued for key in pods]
    phantom = 0
    for decision in observer.of("nominate"):
        nominated = capacity_committed([decision])
        registered = world.registered_at.get(str(decision.get("nodeclaim")), float("inf"))
        if any(registered <= at for at in nominated.values()):
            phantom += len(nominated)
        else:
            commitments += nominated.items()
    commitments += world.bound_at.items()
    committed: dict[str, float] = {}
    for key, at in commitments:
        committed[key] = min(at, committed.get(key, at))
    measured = [p for p in world.cluster.pods() if p.key not in world.never_pending]
    waits = [committed[p.key] - p.created_at for p in measured if p.key in committed]
    return Result(
        pattern=pattern.name,
        pods=pattern.pods,
        waits=Waits.of(waits),
        bound=len(world.never_pending),
        unserved=len(measured) - len(waits),
        phantom=phantom,
        invocations=invocations,
        passes=passes,
        fleets=len(cloud.issued),
        hourly_cost=sum(i.price for i in cloud.launched),
        pass_cpu_median=statistics.median(provisioner.pass_cpu) if provisioner.pass_cpu else 0.0,
        pass_cpu_max=max(provisioner.pass_cpu, default=0.0),
        coverage=covered / max(1.0, clock.now() - START),
        wall_seconds=time.perf_counter() - wall,
    )


# --- the command ----------------------------------------------------------------------------------


def _option(text: str) -> tuple[str, float]:
    name, sep, value = text.partition("=")
    known = {f.name for f in dataclasses.fields(ProvisionerOptions)}
    if not sep or name not in known:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE with NAME one of {', '.join(sorted(known))}")
    return name, float(value)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench provisioner_latency", description=__doc__.split("\n")[0])
    p.add_argument("--pattern", action="append", help="run only this pattern (repeatable)")
    p.add_argument("--quick", action="store_true", help="fewer repetitions and 2-minute streams")
    p.add_argument("--rate", type=float, default=60.0, help="schedule period, seconds (infra: 1 minute)")
    p.add_argument("--timeout", type=float, default=68.0, help="Lambda timeout, seconds (infra: 68)")
    p.add_argument("--boot-seconds", type=float, default=40.0, help="CreateFleet to Ready node")
    p.add_argument("--fleet-seconds", type=float, default=0.0, help="CreateFleet response time")
    p.add_argument("--cpu-scale", type=float, default=1.0, help="virtual seconds per CPU second (0: free)")
    p.add_argument("--option", type=_option, action="append", default=[], help="ProvisionerOptions NAME=VALUE")
    p.add_argument("--poll", action="store_true", help="poll once a second instead of waking on change")
    p.add_argument("--json", help="also write the results to this file")
    return p


def _row(r: Result) -> str:
    w = r.waits
    ok = w.count and w.median <= GOAL_MEDIAN and w.p99 <= GOAL_P99 and not r.unserved
    return (
        f"{r.pattern:12s} {r.pods:6d} {w.count:6d} {r.bound:5d} {r.unserved:5d} {r.phantom:5d} "
        f"{w.median:7.2f} {w.p99:7.2f} {w.max:7.2f}  {r.passes:5d} {r.fleets:6d} {r.hourly_cost:8.2f} "
        f"{r.pass_cpu_median:7.3f} {r.pass_cpu_max:7.3f} {r.coverage:6.0%}  {'ok' if ok else 'MISSED'}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    settings = Settings(
        rate=args.rate,
        timeout=args.timeout,
        boot_seconds=args.boot_seconds,
        fleet_seconds=args.fleet_seconds,
        cpu_scale=args.cpu_scale,
        options=dict(args.option),
        wake_on_change=not args.poll,
    )
    chosen = patterns(args.quick)
    names = args.pattern or list(chosen)
    unknown = [n for n in names if n not in chosen]
    if unknown:
        print(f"unknown pattern(s) {', '.join(unknown)}; known: {', '.join(chosen)}", file=sys.stderr)
        return 2
    info = machine()
    types = benchmark_types()
    options = ProvisionerOptions(**settings.options)  # type: ignore[arg-type]
    print(f"machine: {info['cpu']}, {info['cores']} cores, Python {info['python']} ({info['platform']})")
    print(
        f"schedule every {settings.rate:g} s, timeout {settings.timeout:g} s, margin {options.deadline_margin:g} s; "
        f"poll {options.poll:g} s, batch idle {options.batch_idle:g} s / max {options.batch_max:g} s"
        + "".join(f", {k}={v:g}" for k, v in settings.options.items())
    )
    print(
        f"{len(types)} instance types; node ready {settings.boot_seconds:g} s after CreateFleet; CreateFleet answers "
        f"in {settings.fleet_seconds:g} s; CPU charged x{settings.cpu_scale:g}"
    )
    print(f"goal: median <= {GOAL_MEDIAN:g} s, p99 <= {GOAL_P99:g} s from pending to CreateFleet")
    print()
    print(
        f"{'pattern':12s} {'pods':>6s} {'waited':>6s} {'bound':>5s} {'unsrv':>5s} {'phant':>5s} "
        f"{'median':>7s} {'p99':>7s} {'max':>7s}  {'passes':>5s} {'fleets':>6s} {'$/h':>8s} "
        f"{'cpu/pass':>7s} {'cpu max':>7s} {'cover':>6s}"
    )
    results = []
    for name in names:
        result = run_pattern(chosen[name], types, settings)
        results.append(result)
        print(_row(result), flush=True)
    print()
    print(
        "waited: pods that were pending (bound: placed on a node with room at once, not measured); "
        "median/p99/max: seconds from pending to CreateFleet (or nomination onto a launched node, or "
        "binding); unsrv: never served; phant: pods nominated onto a claim whose node had registered; "
        "fleets: CreateFleet calls; $/h: price of the instances launched; "
        "cpu/pass: CPU seconds of one provisioning pass (median, max); cover: share of time an "
        "invocation was running."
    )
    if args.json:
        document = {
            "machine": info,
            "settings": dataclasses.asdict(settings),
            "goal": {"median": GOAL_MEDIAN, "p99": GOAL_P99},
            "results": [r.as_dict() for r in results],
        }
        Path(args.json).write_text(json.dumps(document, indent=2) + "\n")
    missed = [r for r in results if r.waits.median > GOAL_MEDIAN or r.waits.p99 > GOAL_P99 or r.unserved]
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
