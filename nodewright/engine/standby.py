"""Standby capacity: what each standby buffer wants, which stopped node to start, what to replace. Pure.

A CapacityBuffer with `provisioningStrategy: nodewright.io/standby-capacity` keeps its room as
stopped instances instead of running ones (`nodewright.model.standby`; `docs/standby.md`). This
module decides; `nodewright.controllers.standby` acts. Its questions, each a function:

* `chunk_pods`: the buffer's chunks as virtual pods (`engine.buffer`'s rules: `replicas`,
  `percentage`, `limits`), each also asking for on-demand capacity (why: below);
* `refill`: which chunks the buffer's standby nodes (warming or stopped) already hold, seen as if
  running (`as_capacity`), and which of those nodes hold none (surplus: terminated). The chunks
  left over are what the controller solves onto new claims, as a pass would for pending pods.
  In a zone-balanced NodePool (`engine.zonebalance`, which keeps its standby instances even
  across its zones, counted apart from its serving nodes) the surplus is taken from the fullest
  zones: a node holding chunks in a fuller zone trades places with a surplus one in an emptier
  zone when its chunks fit there alone, so a buffer that shrinks does not empty one zone;
* `match`: which stopped nodes to start for pending pods: the pods are placed on the running
  nodes first (kube-scheduler will take those), then what is left on the stopped nodes seen as if
  running, the largest first and, of equal ones, those in the zone of their NodePool with the
  fewest serving nodes (in a zone-balanced NodePool); a stopped node that receives a pod is
  started and holds those pods;
* `stale_reason`: a stopped instance is replaced (terminated; `refill` launches its successor)
  when its NodePool is gone, its template drifted, its EC2NodeClass resolves to another AMI now
  (`engine.disruption.drift`'s template and image rules), or it reached `expireAfter`. Replacing
  a stopped instance evicts nothing, so it is not budgeted and never waits.

Why on-demand only: CreateFleet `instant` makes one-time spot requests, and EC2 cannot stop an
instance of a one-time spot request; a persistent request's stopped instance can be started only
when spot capacity is there again and is interrupted as any spot instance. Either way a stopped
spot instance is no promise of capacity, which is the whole point of a standby.

Why a capacity error on StartInstances falls back to a launch: the stopped instance is pinned to
its type and zone; the controller blocks that offering (as a CreateFleet capacity error does),
terminates the instance, and the pods it was to hold are planned by the same pass, now.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from nodewright.engine.buffer import BufferPods, buffer_pods
from nodewright.engine.disruption.drift import drift_reason
from nodewright.engine.scheduling import SolverCache, Strategy, solve
from nodewright.engine.scheduling.inputs import existing_nodes_input
from nodewright.engine.zonebalance import EPSILON, ZoneLoads
from nodewright.model import labels as wk
from nodewright.model.capacitybuffer import ACTIVE_CAPACITY, CapacityBuffer, PodTemplate
from nodewright.model.expiry import expired
from nodewright.model.node import READY, Node, NodeCondition
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.nodepool import NodePool
from nodewright.model.pod import Pod
from nodewright.model.requirements import Requirements
from nodewright.model.standby import STANDBY_CAPACITY, STANDBY_LABEL, STANDBY_TAINT_KEY, buffer_key
from nodewright.model.workloads import DaemonSet

ON_DEMAND = "on-demand"


@dataclass(frozen=True, slots=True)
class Refill:
    """One buffer's standby against its chunks: chunks no standby node holds (to launch for), and
    standby nodes that hold no chunk (surplus, to terminate), both sorted.
    """

    unplaced: tuple[Pod, ...] = ()
    surplus: tuple[str, ...] = ()


def standby_buffers(buffers: Sequence[CapacityBuffer]) -> tuple[CapacityBuffer, ...]:
    """The buffers that ask for standby capacity, by namespace and name."""
    return tuple(
        sorted((b for b in buffers if b.provisioning_strategy == STANDBY_CAPACITY), key=lambda b: (b.namespace, b.name))
    )


def chunk_pods(buffers: Sequence[CapacityBuffer], templates: Sequence[PodTemplate], pods: Sequence[Pod]) -> BufferPods:
    """The standby buffers' chunks as virtual pods (`engine.buffer`'s rules), on-demand only."""
    active = [replace(b, provisioning_strategy=ACTIVE_CAPACITY) for b in standby_buffers(buffers)]
    found = buffer_pods(active, templates, pods)
    return BufferPods(
        tuple(replace(p, node_selector={**p.node_selector, wk.CAPACITY_TYPE: ON_DEMAND}) for p in found.pods),
        found.problems,
    )


def chunk_buffer(pod: Pod) -> str:
    """The `STANDBY_LABEL` value of the buffer a chunk belongs to."""
    return buffer_key(pod.namespace, pod.owner_name)


def is_standby(node: Node) -> bool:
    """True for the Node of a standby instance (warming, stopped or starting)."""
    return STANDBY_LABEL in node.labels


def as_capacity(node: Node) -> Node:
    """`node` as it will be once started: Ready, schedulable, without the standby taint."""
    return replace(
        node,
        ready=True,
        unschedulable=False,
        taints=tuple(t for t in node.taints if t.key != STANDBY_TAINT_KEY),
        conditions=(*(c for c in node.conditions if c.type != READY), NodeCondition(READY, "True")),
    )


def _place(
    pods: Sequence[Pod],
    nodes: Sequence[Node],
    bound_pods: Sequence[Pod],
    *,
    daemonsets: Sequence[DaemonSet],
    now: float,
    cache: SolverCache | None,
) -> dict[str, tuple[str, ...]]:
    """Where `pods` fit on `nodes` alone (with their share of `bound_pods`), node -> pod keys."""
    names = {n.name for n in nodes}
    result = solve(
        existing_nodes_input(
            pods, nodes, (p for p in bound_pods if p.node_name in names), daemonsets=tuple(daemonsets), now=now
        ),
        Strategy(),
        cache=cache,
    )
    return {node: tuple(sorted(keys)) for node, keys in sorted(result.existing.items()) if keys}


def refill(
    chunks: Sequence[Pod],
    standby: Sequence[Node],
    bound_pods: Sequence[Pod],
    *,
    daemonsets: Sequence[DaemonSet] = (),
    now: float = 0.0,
    cache: SolverCache | None = None,
    zones: ZoneLoads | None = None,
) -> Refill:
    """Place one buffer's `chunks` on its `standby` nodes (as if running, with their `bound_pods`:
    daemon pods); see the module docstring. `zones`: the loads of the zone-balanced NodePools
    (every node and claim in flight, these standby nodes included), when any; the surplus is then
    taken from their fullest zones, and `zones` counts it gone.
    """
    if not standby:
        return Refill(tuple(sorted(chunks, key=lambda p: p.name)), ())
    nodes = tuple(as_capacity(n) for n in standby)
    placed = _place(chunks, nodes, bound_pods, daemonsets=daemonsets, now=now, cache=cache)
    surplus = {n.name for n in nodes} - placed.keys()
    if zones and surplus:
        placed, surplus = _surplus_from_fullest(
            placed, surplus, nodes, chunks, bound_pods, zones, daemonsets=daemonsets, now=now, cache=cache
        )
    held = {key for keys in placed.values() for key in keys}
    return Refill(
        tuple(sorted((p for p in chunks if p.key not in held), key=lambda p: p.name)),
        tuple(sorted(surplus)),
    )


def _surplus_from_fullest(  # noqa: PLR0917 (refill's state, passed on whole)
    placed: dict[str, tuple[str, ...]],
    surplus: set[str],
    nodes: Sequence[Node],
    chunks: Sequence[Pod],
    bound_pods: Sequence[Pod],
    zones: ZoneLoads,
    *,
    daemonsets: Sequence[DaemonSet],
    now: float,
    cache: SolverCache | None,
) -> tuple[dict[str, tuple[str, ...]], set[str]]:
    """`placed` and `surplus` after trading places: a node holding chunks in a fuller zone of a
    zone-balanced NodePool becomes the surplus, and a surplus node of the same NodePool in an
    emptier zone holds its chunks, when they fit it alone. Each trade lowers the sum of the
    squared zone loads (so the loop ends), best trade first; `zones` ends up without the surplus.
    """
    by_name = {n.name: n for n in nodes}
    by_key = {p.key: p for p in chunks}
    placed = dict(placed)
    surplus = set(surplus)
    zones.remove(by_name[name] for name in sorted(surplus))
    refused: set[tuple[str, str]] = set()
    while True:
        trades: list[tuple[float, str, str]] = []
        for holder in sorted(placed):
            node = by_name[holder]
            entry = zones.entry(node)
            if entry is None:
                continue
            full = node.labels.get(wk.ZONE, "")
            for spare in sorted(surplus):
                other = by_name[spare]
                empty = other.labels.get(wk.ZONE, "")
                if other.nodepool != node.nodepool or empty == full or (holder, spare) in refused:
                    continue
                a, b = entry.load.get(full, 0.0), entry.load.get(empty, 0.0)
                out, into = entry.node_weight(node), entry.node_weight(other)
                gain = a * a + b * b - (a - out) ** 2 - (b + into) ** 2
                if gain > EPSILON:
                    trades.append((-gain, holder, spare))
        for _, holder, spare in sorted(trades):
            keys = placed[holder]
            fit = _place(
                [by_key[k] for k in keys],
                (by_name[spare],),
                bound_pods,
                daemonsets=daemonsets,
                now=now,
                cache=cache,
            )
            if len(fit.get(spare, ())) != len(keys):
                refused.add((holder, spare))
                continue
            del placed[holder]
            placed[spare] = fit[spare]
            surplus.discard(spare)
            surplus.add(holder)
            zones.remove((by_name[holder],))
            zones.add(by_name[spare])
            break
        else:
            return dict(sorted(placed.items())), surplus


def match(
    pending: Sequence[Pod],
    running: Sequence[Node],
    stopped: Sequence[Node],
    bound_pods: Sequence[Pod],
    *,
    daemonsets: Sequence[DaemonSet] = (),
    now: float = 0.0,
    cache: SolverCache | None = None,
    zones: ZoneLoads | None = None,
) -> dict[str, tuple[str, ...]]:
    """The stopped nodes to start, each with the pending pods it takes (see the module docstring).

    `running`: the cluster's other nodes (only those that take pods count); `bound_pods`: every
    bound pod (what fills them, and the stopped nodes' daemon pods); `zones`: the zone-balanced
    NodePools' loads, when any (a node started is counted there as serving). Empty when nothing fits.
    """
    if not pending or not stopped:
        return {}
    taking = tuple(n for n in running if n.ready and not n.unschedulable and not n.deleting and not n.failed)
    left: Sequence[Pod] = pending
    if taking:
        taken = {
            key
            for keys in _place(pending, taking, bound_pods, daemonsets=daemonsets, now=now, cache=cache).values()
            for key in keys
        }
        left = [p for p in pending if p.key not in taken]
    if not left:
        return {}
    # One node at a time, largest first, so the pods fill the fewest stopped nodes (each start is
    # billed by the hour); the solver, given them all, would spread the pods in its own node order.
    # Of equal nodes, the one whose zone has the fewest serving nodes: starting it evens them out.
    remaining = list(stopped)
    chosen: dict[str, tuple[str, ...]] = {}
    while left and remaining:
        candidate = min(
            remaining,
            key=lambda n: (
                -n.allocatable.get("cpu"),
                -n.allocatable.get("memory"),
                zones.zone_load(_serving(n)) if zones else 0.0,
                n.name,
            ),
        )
        remaining.remove(candidate)
        placed = _place(left, (as_capacity(candidate),), bound_pods, daemonsets=daemonsets, now=now, cache=cache)
        if keys := placed.get(candidate.name):
            chosen[candidate.name] = keys
            left = [p for p in left if p.key not in set(keys)]
            if zones:
                zones.add(_serving(candidate))
    return dict(sorted(chosen.items()))


def _serving(node: Node) -> Node:
    """A standby node as the zone balance counts it once started (`engine.zonebalance.group`)."""
    return replace(node, labels={k: v for k, v in node.labels.items() if k != STANDBY_LABEL})


def stale_reason(
    node: Node,
    claim: NodeClaim,
    pool: NodePool | None,
    images: Mapping[str, frozenset[str]],
    now: float,
) -> str | None:
    """Why a stopped standby instance must be replaced, or None (see the module docstring)."""
    if pool is None:
        return f"its NodePool {claim.nodepool} no longer exists"
    if expired(pool, claim, now):
        return f"it reached NodePool {pool.name}'s expireAfter"
    # The template and image rules only: a stopped node's labels are those it was launched with.
    drifted = drift_reason(replace(node, labels={}), claim, replace(pool, requirements=Requirements()), images, None)
    if drifted is not None:
        return f"drifted: {drifted}"
    return None
