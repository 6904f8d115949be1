"""Crash anywhere, the consolidator: killed at every effect point of its commands, and at every pair.

What runs: the real `Consolidator` (with the real provisioner as its launcher, so the replacement's
claim record and CreateFleet are the consolidator's own effects) over the in-memory cluster, cloud
and state store, on a virtual clock. The consolidator is invoked on its deployed schedule (every
`CONSOLIDATOR_RATE_SECONDS`, `CONSOLIDATOR_OFFSET_SECONDS` after the provisioner's tick, each with
the deployed timeout as its deadline); the provisioner runs every minute (housekeeping, then a
pass), a kubelet registers each launched instance `BOOT` seconds after its launch, and a first-fit
kube-scheduler binds pending pods; evicted pods come back Pending (their ReplicaSet).

The case (`--case`):

* `replace` (default): an on-demand m5.2xlarge serving `PODS` small pods under a strict
  PodDisruptionBudget (one pod down at a time) is replaced by a cheaper node: the command is
  recorded, validated, its replacement's name recorded and launched, the node tainted, the
  replacement waited for, the node drained pod by pod, its instance terminated, its Node and claim
  deleted. An empty m5.xlarge beside it is removed by an emptiness command (taint, terminate,
  delete, no launch).
* `delete`: two half-used m5.2xlarge nodes whose pods fit on one (a delete command, no launch).

An effect point is each write the invocation makes through a port: a Kubernetes write (cordon,
uncordon, eviction, Event, Node delete), a state-table write (command record, claim record, lease),
an EC2 write (CreateFleet, terminate). At a point the invocation dies either before the write
(`kill`) or just after it, the answer lost (`lost`: the write happened, the response did not
arrive). A killed invocation does nothing more (not even its `finally`: its lease stays held until
it expires), and the next one starts in a fresh container (no warm state).

Checked after `SETTLE` seconds: no pod was on a node when it was deleted (`lost`), no second of
PDB violation, no duplicate instance for a claim, no orphan (a live instance without a claim, a
claim without a live instance, a Node without an instance), every pod bound, no node left
cordoned or carrying the consolidation taint, no command record left, and the cluster consolidated
as far as the run without crashes (the same hourly price: the command finished after all).

Run: `python -m bench.crash_consolidator` (every single point of the `replace` case; the figures go
in the README), `--case delete`, `--pairs N` (also every pair whose second point is a multiple of
N; 1 for every pair).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from bench.harness.cluster_actors import Kubelet, pdb, running_node, schedule_first_fit
from bench.harness.crash import KILL, LOST, Point, singles
from nodewright.config.timings import (
    CONSOLIDATOR_OFFSET_SECONDS,
    CONSOLIDATOR_RATE_SECONDS,
    CONSOLIDATOR_TIMEOUT_SECONDS,
)
from nodewright.controllers.assembly import build_provisioner
from nodewright.controllers.disruption import TAINT, Consolidator
from nodewright.controllers.observe import RecordingObserver
from nodewright.controllers.provisioning import Provisioner
from nodewright.controllers.provisionoptions import ProvisionerOptions, StaticConfiguration
from nodewright.inmemory.catalog import FixedCatalog
from nodewright.inmemory.clock import VirtualClock
from nodewright.inmemory.cloud import FakeCloudProvider
from nodewright.inmemory.cluster import InMemoryCluster
from nodewright.inmemory.state import InMemoryStateStore
from nodewright.model import labels as wk
from nodewright.model.instancetype import InstanceType, Offering
from nodewright.model.nodepool import NodePool
from nodewright.model.pod import Pod
from nodewright.model.requirements import Requirement, Requirements
from nodewright.model.resources import Resources

START = 1_800_000_000.0
BOOT = 35.0
PODS = 4
SETTLE = 1800.0
ZONE = "us-east-1a"
CASES = ("replace", "delete")

# The writes of each port the consolidator holds (reads are not effects).
WRITES: dict[str, frozenset[str]] = {
    "cluster": frozenset({"cordon", "uncordon", "evict", "record", "delete_node", "label_node", "delete_pod"}),
    "store": frozenset(
        {
            "save_command",
            "delete_command",
            "create_claim",
            "save_claim",
            "delete_claim",
            "block_offerings",
            "acquire_lease",
            "release_lease",
        }
    ),
    "cloud": frozenset({"launch", "terminate"}),
}


class Killed(BaseException):
    """The invocation dies here (a killed Lambda: no handler of the code under test may catch it)."""


@dataclass
class Invocation:
    """The effect points of every consolidator invocation of a run: counts the writes, kills the
    invocation at the planned ones, and, once killed, fails every further call the dead invocation
    would make (its `finally` blocks included) until the next invocation starts.
    """

    plan: dict[int, str]
    count: int = 0
    names: list[str] = field(default_factory=list)
    dead: bool = False
    # The writes up to the end of the last invocation that did more than take and release its
    # lease and record Events: the effect points of the run's commands (a quiet minute's lease and
    # its "not disrupted because..." Events are not steps of a command).
    effects: int = 0
    _started: int = 0

    def start(self) -> None:
        """A new invocation (a fresh one after a kill: the dead one's calls all failed)."""
        self.dead = False
        self._started = self.count

    def end(self) -> None:
        """The invocation returned or died: count its writes as effect points if it acted."""
        if any(not _quiet(name) for name in self.names[self._started :]):
            self.effects = self.count

    def wrap(self, port: str, target: Any) -> Any:
        return _Port(self, port, target)

    def write(self, name: str, method: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        self.count += 1
        self.names.append(name)
        mode = self.plan.get(self.count)
        if mode == KILL:
            self.dead = True
            raise Killed(f"killed before write {self.count} ({name})")
        result = method(*args, **kwargs)
        if mode == LOST:
            self.dead = True
            raise Killed(f"answer of write {self.count} ({name}) lost")
        return result


def _quiet(write: str) -> bool:
    return write.endswith("_lease") or write == "cluster.record"


class _Port:
    """One port as the invocation sees it: writes are effect points; nothing answers a dead one."""

    def __init__(self, invocation: Invocation, port: str, target: Any) -> None:
        self._invocation, self._port, self._target = invocation, port, target

    def __getattr__(self, name: str) -> Any:
        invocation = self._invocation
        if invocation.dead:
            raise Killed(f"{self._port}.{name} after the invocation died")
        attr = getattr(self._target, name)
        if not callable(attr):
            return attr
        label = f"{self._port}.{name}"
        if name in WRITES[self._port]:
            return lambda *a, **k: invocation.write(label, attr, a, k)

        def read(*a: Any, **k: Any) -> Any:
            if invocation.dead:
                raise Killed(f"{label} after the invocation died")
            return attr(*a, **k)

        return read


@dataclass
class Outcome:
    """What one run left: the checks of the module docstring (all zero or empty when it converged)."""

    lost: int
    pdb_violation_seconds: int
    duplicates: int
    orphans: list[str]
    pending: int
    cordoned: list[str]
    commands: int
    price: float
    writes: int
    effects: int
    crashes: int
    names: list[str] = field(default_factory=list, repr=False)

    def converged(self, price: float) -> bool:
        """Nothing lost or left behind, and the cluster as cheap as `price` (the run without crashes)."""
        left = self.lost or self.pdb_violation_seconds or self.duplicates or self.pending or self.commands
        return not left and not self.orphans and not self.cordoned and self.price <= price + 1e-9


class ConsolidatorCrashWorld:
    """One run of `case` with the consolidator's invocations killed at `plan` (ordinal -> mode)."""

    def __init__(self, plan: dict[int, str], case: str = "replace") -> None:
        self.clock = VirtualClock(START)
        self.cluster = InMemoryCluster(self.clock, recreate_owned_pods=True)
        self.cloud = FakeCloudProvider(self.clock)
        self.kubelet = Kubelet(self.cluster, self.cloud, self.clock, TYPES, boot=BOOT)
        self.store = InMemoryStateStore()
        self.observer = RecordingObserver()
        self.invocation = Invocation(dict(plan))
        self.pools = (NodePool(name="default", requirements=Requirements([])),)
        self.crashes = 0
        self.violations = 0
        self.pdb = pdb("web", "web", PODS - 1)
        self.provisioner = self._provisioner(self.cluster, self.cloud, self.store)
        self.consolidator: Consolidator | None = None  # the warm container, if any
        if case == "replace":
            self._node("big", "m5.2xlarge", pods=PODS)
            self._node("idle", "m5.xlarge", pods=0)
        else:
            self._node("a", "m5.2xlarge", pods=PODS // 2)
            self._node("b", "m5.2xlarge", pods=PODS - PODS // 2)
        self.cluster.add_pdb(self.pdb)

    def run(self) -> Outcome:
        while self.clock.now() < START + SETTLE:
            if int(self.clock.now() - START) % CONSOLIDATOR_RATE_SECONDS == CONSOLIDATOR_OFFSET_SECONDS:
                self._consolidate()
            self._tick()
        return self._outcome()

    # -- the actors ---------------------------------------------------------------------------

    def _consolidate(self) -> None:
        """One scheduled invocation: the warm container's consolidator, or a fresh one after a kill."""
        self.invocation.start()
        if self.consolidator is None:
            replacing = self._provisioner(
                self.invocation.wrap("cluster", self.cluster),
                self.invocation.wrap("cloud", self.cloud),
                self.invocation.wrap("store", self.store),
            )
            store = self.invocation.wrap("store", self.store)
            self.consolidator = Consolidator(
                cluster=self.invocation.wrap("cluster", self.cluster),
                cloud=self.invocation.wrap("cloud", self.cloud),
                claim_records=store,
                command_records=store,
                leases=store,
                offering_blocks=store,
                clock=self.clock,
                config=StaticConfiguration(self.pools),
                catalog=FixedCatalog(TYPES),
                observer=self.observer,
                launcher=replacing.launcher,
                mirror=replacing.mirror,
                sleep=self._sleep,
            )
        try:
            self.consolidator.run_for(CONSOLIDATOR_TIMEOUT_SECONDS)
        except Killed:
            self.crashes += 1
            self.consolidator = None  # the container died with the invocation
        finally:
            self.invocation.end()

    def _sleep(self, seconds: float) -> None:
        """The consolidator waits (validation, replacement readiness, drain retries): the world moves."""
        for _ in range(max(1, round(seconds))):
            self._tick()

    def _tick(self) -> None:
        """One second of the world: the provisioner's minute, the kubelet, kube-scheduler, the PDB."""
        if int(self.clock.now() - START) % 60 == 0:
            self.provisioner.housekeeping.reconcile(self.cluster.snapshot())
            self.provisioner.provision(self.cluster.snapshot())
        self.kubelet.register_booted()
        schedule_first_fit(self.cluster)
        healthy = sum(1 for p in self.cluster.pods() if p.labels.get("app") == "web" and p.node_name and not p.deleting)
        if healthy < PODS - 1:
            self.violations += 1
        self.clock.advance(1.0)

    def _provisioner(self, cluster: Any, cloud: Any, store: Any) -> Provisioner:
        return build_provisioner(
            cluster=cluster,
            cloud=cloud,
            store=store,
            clock=self.clock,
            config=StaticConfiguration(self.pools),
            catalog=FixedCatalog(TYPES),
            observer=self.observer,
            options=ProvisionerOptions(),
            sleep=lambda _: None,
        )

    # -- setup and checks ---------------------------------------------------------------------

    def _node(self, name: str, instance_type: str, *, pods: int) -> None:
        running_node(
            self.cluster,
            self.cloud,
            self.store,
            TYPES,
            name=name,
            instance_type=instance_type,
            zone=ZONE,
            launched_at=START - 3600,
        )
        for i in range(pods):
            p = self.cluster.add_pod(_pod(f"web-{name}-{i}"))
            self.cluster.bind(p, name)

    def _outcome(self) -> Outcome:
        live = [i for i in self.cloud.instances() if i.live]
        claims = self.store.claims()
        by_claim: dict[str, int] = {}
        for instance in live:
            by_claim[instance.nodeclaim] = by_claim.get(instance.nodeclaim, 0) + 1
        claimed = {c.instance_id for c in claims}
        live_ids = {i.instance_id for i in live}
        orphans = [f"instance {i.instance_id}" for i in live if i.instance_id not in claimed]
        orphans += [f"claim {c.name}" for c in claims if c.instance_id and c.instance_id not in live_ids]
        orphans += [f"claim {c.name} (no instance)" for c in claims if not c.instance_id]
        orphans += [f"node {n.name}" for n in self.cluster.nodes() if n.instance_id not in live_ids]
        return Outcome(
            lost=len(self.cluster.lost_pods()),
            pdb_violation_seconds=self.violations,
            duplicates=sum(n - 1 for n in by_claim.values() if n > 1),
            orphans=orphans,
            pending=sum(1 for p in self.cluster.pods() if not p.node_name and not p.daemon),
            cordoned=[n.name for n in self.cluster.nodes() if n.unschedulable or TAINT in n.taints],
            commands=len(self.store.commands()),
            price=round(sum(i.price for i in live), 6),
            writes=self.invocation.count,
            effects=self.invocation.effects,
            crashes=self.crashes,
            names=list(self.invocation.names),
        )


def run(plan: dict[int, str], case: str = "replace") -> Outcome:
    """One run of `case` with the consolidator killed at `plan`'s writes."""
    return ConsolidatorCrashWorld(plan, case).run()


def pairs(
    clean_effects: int, case: str = "replace", firsts: Iterable[int] | None = None
) -> Iterable[tuple[Point, Point]]:
    """Every pair: a first crash point (at `firsts`' ordinals, default all), then every point of
    the run that first crash leaves.
    """
    chosen = None if firsts is None else set(firsts)
    for (first,) in singles(clean_effects):
        if chosen is not None and first.ordinal not in chosen:
            continue
        after = run({first.ordinal: first.mode}, case).effects
        for n in range(first.ordinal + 1, after + 1):
            for mode in (KILL, LOST):
                yield first, Point(n, mode)


def main(argv: list[str] | None = None) -> int:
    """Run every single crash point and every pair; 1 when a run did not converge."""
    parser = argparse.ArgumentParser(prog="python -m bench.crash_consolidator", description=__doc__.split("\n")[0])
    parser.add_argument("--case", choices=CASES, default="replace")
    parser.add_argument(
        "--pairs", type=int, default=0, metavar="N", help="also every pair whose second point is a multiple of N"
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    clean = run({}, args.case)
    goal = clean.price
    print(
        f"consolidator, case {args.case}, no crash: {clean.effects} effect points, "
        f"${goal:.4f}/h after, converged={clean.converged(goal)}"
    )
    print(f"  {', '.join(clean.names[: clean.effects])}")
    cases: list[tuple[Point, ...]] = list(singles(clean.effects))
    if args.pairs:
        cases += [pair for pair in pairs(clean.effects, args.case) if pair[1].ordinal % args.pairs == 0]
    failures: dict[int, list[str]] = {1: [], 2: []}
    totals = {1: 0, 2: 0}
    lost = {1: 0, 2: 0}
    for case in cases:
        outcome = run({p.ordinal: p.mode for p in case}, args.case)
        totals[len(case)] += 1
        lost[len(case)] += bool(outcome.lost)
        if not outcome.converged(goal):
            failures[len(case)].append(f"{','.join(map(str, case))}: {outcome}")
    for size, name in ((1, "single crashes"), (2, "pairs")):
        if totals[size]:
            print(f"{name}: {totals[size]} runs, {lost[size]} losing pods, {len(failures[size])} not converged")
            for line in failures[size][:10]:
                print(f"  {line}")
    print(f"wall {time.perf_counter() - started:.1f} s")
    return 1 if failures[1] or failures[2] else 0


def _instance_type(name: str, cpu: str, memory: str, price: float) -> InstanceType:
    family, _, size = name.partition(".")
    requirements = Requirements(
        [
            Requirement.new(wk.INSTANCE_TYPE, "In", [name]),
            Requirement.new(wk.ARCH, "In", ["amd64"]),
            Requirement.new(wk.OS, "In", ["linux"]),
            Requirement.new(wk.INSTANCE_FAMILY, "In", [family]),
            Requirement.new(wk.INSTANCE_CATEGORY, "In", [family[0]]),
            Requirement.new(wk.INSTANCE_SIZE, "In", [size]),
            Requirement.new(wk.ZONE, "In", [ZONE]),
            Requirement.new(wk.CAPACITY_TYPE, "In", ["on-demand"]),
        ]
    )
    capacity = Resources.of(cpu=cpu, memory=memory, pods=58)
    return InstanceType(name, requirements, capacity, Resources(), (Offering(ZONE, "on-demand", price),))


# On-demand only: what consolidation replaces is then a matter of price, not of interruption risk.
TYPES: tuple[InstanceType, ...] = (
    _instance_type("m5.large", "2", "8Gi", 0.096),
    _instance_type("m5.xlarge", "4", "16Gi", 0.192),
    _instance_type("m5.2xlarge", "8", "32Gi", 0.384),
)


def _pod(name: str) -> Pod:
    return Pod(
        namespace="default",
        name=name,
        labels={"app": "web"},
        requests=Resources.of(cpu="250m", memory="512Mi", pods=1),
        owner_kind="ReplicaSet",
        phase="Running",
    )


if __name__ == "__main__":
    raise SystemExit(main())
