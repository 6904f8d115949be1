"""Zone balance: keep a NodePool's nodes even across its zones without touching workloads. Pure.

A NodePool annotated `nodewright.io/zone-balance: nodes:1` (or `cpu:32`) asks that its most
populated zone hold at most one node (32 vCPUs) more than its least populated one. Karpenter
spreads nodes across zones only when pods carry a topology spread constraint (#7311): without one,
every claim goes to the cheapest zone, and a day of scale-outs and consolidation leaves lopsided
zones (subnet IP exhaustion in one, a larger blast radius when it fails). Here the NodePool decides.

Two decisions, both from the same count (`ZoneLoads`):

* **Provisioning** (`ZoneLoads.pin`): each new claim of a balanced NodePool gets one zone. The
  claims tied to a zone are counted first, then the free ones are pinned in the order the solver
  planned them: among the zones some option of the claim can launch in (an
  available offering its requirements allow, not in the capacity-error cache), those where one
  more node keeps the skew within the bound, the cheapest first (then the least loaded, then the
  name); if no zone keeps it, the least loaded zones. The claim's zone requirement is narrowed to
  that zone and its options to the types offered there, so CreateFleet cannot undo the choice. A
  claim its pods already tie to one zone (`tied`), or one priced on a capacity reservation, keeps
  its zone and is counted there; a zone the solver chose for a preference only (a ScheduleAnyway
  spread) ties nothing. The options only shrink, so NodePool limits still hold.
* **Free pods planned apart** (`balance_result`, `split_solve`): a plan whose pinned claims leave
  a balanced NodePool over its bound, with claims holding both zone-tied and free pods, is planned
  again (with the caller's solver) free pods first, their claims pinned, then the tied pods, which
  fill those claims in their zones before opening their own; taken when it is less over the
  bounds, places as many pods and costs at most SPLIT_PREMIUM more.
* **Disruption** (`ZoneLoads.judge`): a move (delete or replace) out of a balanced NodePool is
  made only when, its replacements pinned as above, the NodePool's skew afterwards is within the
  bound or no larger than before (a NodePool already lopsided, e.g. by pods tied to one zone, may
  still lose nodes from its fuller zones). Emptiness keeps, of the empty nodes the budgets allow,
  those whose deletion keeps the bound, fullest zones first.

What counts: the NodePool's nodes that are not leaving (being deleted, tainted disrupted, or
taken by a running command) and its claims in flight, by zone; by `nodes` each counts one, by `cpu`
its vCPUs. The zones are every zone an offering of the NodePool's types that its requirements allow
is in, so an empty zone counts as 0 (as Karpenter's topology counts domains). With no NodePool
balanced, every function returns its input unchanged.

Serving and standby nodes are held to the bound apart (`group`): the NodePool's nodes that run
pods are one count, its standby instances (`nodewright.model.standby`: launched, then stopped,
started when pods need them) another, each kept within the skew. Counted together, the stopped
nodes evened out whatever the running ones did: on a generated day 24/7/17 running nodes sat
behind 2/20/10 stopped ones (26/27/27 together), and when a late DaemonSet made the whole buffer
stale, the running lopsidedness was all there was. The running nodes are the blast radius the
setting bounds; the standby ones are what comes back in a zone when another fails, so they are
kept even too (and together the NodePool stays within twice the bound). A standby launch goes,
of the zones that keep the standby even, to the one with the fewest serving nodes (`pin`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from nodewright.engine.scheduling.inputs import in_flight
from nodewright.engine.scheduling.types import PlannedClaim, PoolCapacity, SchedulingInput, SchedulingResult
from nodewright.engine.scheduling.usage import charged
from nodewright.model import labels as wk
from nodewright.model.instancetype import InstanceType, Offering, OfferingKey
from nodewright.model.node import Node
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.nodepool import NodePool, ZoneBalance
from nodewright.model.pod import Pod
from nodewright.model.requirements import Requirement, Requirements
from nodewright.model.resources import CPU, Resources
from nodewright.model.standby import STANDBY_LABEL

if TYPE_CHECKING:
    # A name for annotations only: the disruption package imports this module (its consolidation
    # judges moves here), so importing it back at run time would make `import zonebalance` first fail.
    from nodewright.engine.disruption.types import DisruptionInput

EPSILON = 1e-9
# The names `split_solve` gives the claims of its first step when it offers them to the second.
SPLIT_PREFIX = "zone-balance-split-"
# What a two-step plan may cost above the one-step plan, as a fraction of it, for the balance it buys.
SPLIT_PREMIUM = 0.05


# What `group` appends to a NodePool's name for the count of its standby instances.
STANDBY_GROUP = "/standby"


def group(nodepool: str, labels: Mapping[str, str]) -> str:
    """The count a node or claim of `nodepool` with `labels` is in: its NodePool's serving nodes
    (the NodePool's name) or its standby instances (the name and STANDBY_GROUP).
    """
    return nodepool + STANDBY_GROUP if STANDBY_LABEL in labels else nodepool


def skew(load: Mapping[str, float]) -> float:
    """The most loaded zone's count minus the least loaded one's (0 with fewer than two zones)."""
    return max(load.values()) - min(load.values()) if len(load) > 1 else 0.0


def describe(load: Mapping[str, float]) -> str:
    """`a=3 b=1 c=2`: a NodePool's load per zone, for reasons and events."""
    return " ".join(f"{zone}={value:g}" for zone, value in sorted(load.items()))


def pool_zones(pc: PoolCapacity) -> frozenset[str]:
    """The zones NodePool `pc` may launch in: those of the available offerings of its types that
    its requirements allow (zone, capacity type, reservation labels).
    """
    reqs = pc.nodepool.requirements
    return frozenset(o.zone for it in pc.instance_types for o in it.offerings if o.available and o.allowed_by(reqs))


def tied(pod: Pod) -> bool:
    """Whether the pod's own constraints can tie it to a zone: a zone-keyed DoNotSchedule spread,
    a required pod affinity or anti-affinity by zone, or a zone in its node requirements.
    """
    if any(c.required and c.topology_key == wk.ZONE for c in pod.spread):
        return True
    if any(t.topology_key == wk.ZONE for t in (*pod.affinity, *pod.anti_affinity)):
        return True
    return any(wk.ZONE in reqs for reqs in pod.node_requirements())


def claim_zone(claim: NodeClaim) -> str:
    """The zone a claim launched in, or the one its requirements fix ('' when neither)."""
    if claim.zone:
        return claim.zone
    req = claim.requirements.get(wk.ZONE)
    if req is not None and not req.complement and len(req.values) == 1:
        return next(iter(req.values))
    return ""


@dataclass(slots=True)
class PoolLoad:
    """One count of a balanced NodePool (its serving nodes, or its standby ones: `group`): its
    setting, zones and load per zone (mutable: pinning adds to it).
    """

    pool: NodePool
    balance: ZoneBalance
    load: dict[str, float]
    types: Mapping[str, InstanceType]
    standby: bool = False  # the count of its standby instances

    def node_weight(self, node: Node) -> float:
        """What a node counts: 1, or its vCPUs."""
        return 1.0 if self.balance.by == "nodes" else node.capacity[CPU] / 1000

    def type_weight(self, name: str) -> float:
        """What a node of instance type `name` counts: 1, or its vCPUs (0 when the type is unknown)."""
        if self.balance.by == "nodes":
            return 1.0
        it = self.types.get(name)
        return it.capacity[CPU] / 1000 if it is not None else 0.0


@dataclass(slots=True)
class ZoneLoads:
    """The balanced NodePools of one decision, with their load per zone (see the module docstring).
    Built per pass by `build`; `pin` and `judge` work on copies unless told to commit.
    """

    pools: dict[str, PoolLoad] = field(default_factory=dict)
    blocked: frozenset[OfferingKey] = frozenset()

    @classmethod
    def build(
        cls,
        pools: Iterable[PoolCapacity],
        nodes: Iterable[Node],
        inflight: Iterable[NodeClaim],
        *,
        gone: frozenset[str] = frozenset(),
        keep: frozenset[str] = frozenset(),
        blocked: frozenset[OfferingKey] = frozenset(),
    ) -> ZoneLoads:
        """The load of every balanced NodePool in `pools`: its `nodes` (not leaving, not in
        `gone`, except those in `keep`: a command's own candidates while it is re-checked) and
        `inflight` claims, by zone.
        """
        out = cls(blocked=blocked)
        for pc in pools:
            balance = pc.nodepool.zone_balance
            if balance is None or pc.nodepool.replicas is not None:
                continue
            zones = sorted(pool_zones(pc))
            types = {t.name: t for t in pc.instance_types}
            for standby in (False, True):
                name = pc.nodepool.name + STANDBY_GROUP if standby else pc.nodepool.name
                out.pools[name] = PoolLoad(pc.nodepool, balance, dict.fromkeys(zones, 0.0), types, standby)
        if not out.pools:
            return out
        for node in nodes:
            entry = out.entry(node)
            zone = node.labels.get(wk.ZONE, "")
            if entry is None or not zone:
                continue
            if node.name not in keep and (node.leaving or node.name in gone):
                continue
            entry.load[zone] = entry.load.get(zone, 0.0) + entry.node_weight(node)
        for claim in inflight:
            entry = out.pools.get(group(claim.nodepool, claim.labels))
            zone = claim_zone(claim)
            if entry is None or not zone:
                continue
            entry.load[zone] = entry.load.get(zone, 0.0) + entry.type_weight(claim.instance_type)
        return out

    @classmethod
    def for_provisioning(cls, inp: SchedulingInput) -> ZoneLoads:
        """The loads a provisioning pass starts from (its nodes and claims in flight)."""
        return cls.build(inp.pools, inp.nodes, inp.inflight, blocked=inp.blocked)

    @classmethod
    def for_disruption(cls, inp: DisruptionInput, keep: frozenset[str] = frozenset()) -> ZoneLoads:
        """The loads a disruption pass starts from: nodes not leaving nor taken by a running command
        (but those in `keep`), and claims in flight.
        """
        nodes = inp.snapshot.nodes
        return cls.build(
            inp.pools, nodes, in_flight(nodes, inp.claims), gone=inp.in_progress, keep=keep, blocked=inp.blocked
        )

    def __bool__(self) -> bool:
        return bool(self.pools)

    def entry(self, node: Node) -> PoolLoad | None:
        """The count `node` is in (`group`), or None when its NodePool is not balanced."""
        return self.pools.get(group(node.nodepool, node.labels))

    def copy(self) -> ZoneLoads:
        """An independent copy (the loads are mutable)."""
        pools = {name: replace(entry, load=dict(entry.load)) for name, entry in self.pools.items()}
        return ZoneLoads(pools, self.blocked)

    # -- provisioning --------------------------------------------------------------------------

    def pin(self, claims: Sequence[PlannedClaim], *, standby: bool = False) -> tuple[PlannedClaim, ...]:
        """`claims` with each claim of a balanced NodePool pinned to one zone, counted as it goes:
        first the claims tied to their zone (counted where they are), then the free ones, in order,
        so the free claims even out what the tied ones of the same pass leave lopsided. `standby`:
        the claims are standby instances, counted with those (`group`); of the zones that keep the
        standby within its bound, the one with the fewest serving nodes first (a standby node is
        started for pods and serves there: a one-node buffer refilled in the cheapest zone every
        time would add each start to that zone).
        """
        out = list(claims)
        free: list[tuple[int, PoolLoad, Requirements, dict[str, tuple[InstanceType, Offering]]]] = []
        for i, claim in enumerate(claims):
            entry = self.pools.get(claim.nodepool + STANDBY_GROUP if standby else claim.nodepool)
            if entry is None:
                continue
            base = self._base(entry, claim)
            by_zone = self._offers(claim, base)
            if claim.offering.reservation_id or len(by_zone) <= 1:
                zone = claim.offering.zone
                entry.load[zone] = entry.load.get(zone, 0.0) + entry.type_weight(claim.instance_type.name)
            else:
                free.append((i, entry, base, by_zone))
        for i, entry, base, by_zone in free:
            serving = self.pools.get(claims[i].nodepool) if standby else None
            out[i] = self._pin(out[i], entry, base, by_zone, serving.load if serving is not None else {})
        return tuple(out)

    @staticmethod
    def _base(entry: PoolLoad, claim: PlannedClaim) -> Requirements:
        """The requirements the claim's zone may be chosen within. The solver narrows a claim to
        the zone its topology split gave its pods; when none of them is tied to a zone (a zone-keyed
        DoNotSchedule spread, required pod (anti-)affinity by zone, or a zone in its node
        requirements), that narrowing came from a preference (a ScheduleAnyway spread) or the
        order the solver filled zones in, and the NodePool's balance decides instead. Otherwise
        the claim's own requirements.
        """
        if wk.ZONE not in claim.requirements or any(tied(pod) for pod in claim.pods):
            return claim.requirements
        base = Requirements(r for key, r in claim.requirements.items() if key != wk.ZONE)
        pool_zone = entry.pool.requirements.get(wk.ZONE)
        return base.intersection(Requirements([pool_zone])) if pool_zone is not None else base

    def _pin(
        self,
        claim: PlannedClaim,
        entry: PoolLoad,
        base: Requirements,
        by_zone: dict[str, tuple[InstanceType, Offering]],
        first: Mapping[str, float],
    ) -> PlannedClaim:
        """`claim` pinned to a zone of `by_zone` (see `pin`); `first`: a load whose emptier zones
        go first among those that keep `entry` within its bound (empty: none).
        """
        weight = entry.type_weight(claim.instance_type.name)
        load = entry.load
        bound = entry.balance.max_skew + EPSILON
        within = [z for z in by_zone if skew({**load, z: load.get(z, 0.0) + weight}) <= bound]
        if not within:
            least = min(load.get(z, 0.0) for z in by_zone)
            within = [z for z in by_zone if load.get(z, 0.0) <= least + EPSILON]
        zone = min(within, key=lambda z: (first.get(z, 0.0), by_zone[z][1].price, load.get(z, 0.0), z))
        load[zone] = load.get(zone, 0.0) + weight
        options = tuple(it for it in claim.options if self._offering(it, base, zone) is not None)
        offering = by_zone[zone][1]
        pinned = Requirements([Requirement(wk.ZONE, False, frozenset((zone,)))])
        return replace(claim, requirements=base.intersection(pinned), options=options, offering=offering)

    def _offers(self, claim: PlannedClaim, reqs: Requirements) -> dict[str, tuple[InstanceType, Offering]]:
        """Zone -> the first option (in the claim's order) launchable there under `reqs`, with its
        cheapest offering.
        """
        out: dict[str, tuple[InstanceType, Offering]] = {}
        for it in claim.options:
            for o in it.offerings:
                if o.zone in out or not o.available or not o.allowed_by(reqs):
                    continue
                if (o.capacity_type, it.name, o.zone) in self.blocked:
                    continue
                best = self._offering(it, reqs, o.zone)
                if best is not None:
                    out[o.zone] = (it, best)
        return dict(sorted(out.items()))

    def _offering(self, it: InstanceType, reqs: Requirements, zone: str) -> Offering | None:
        found = [
            o
            for o in it.offerings
            if o.zone == zone
            and o.available
            and o.allowed_by(reqs)
            and (o.capacity_type, it.name, o.zone) not in self.blocked
        ]
        return min(found, key=lambda o: (o.price, o.capacity_type)) if found else None

    # -- disruption ----------------------------------------------------------------------------

    def remove(self, nodes: Iterable[Node]) -> None:
        """Take `nodes` out of their NodePools' loads."""
        for node in nodes:
            entry = self.entry(node)
            zone = node.labels.get(wk.ZONE, "")
            if entry is not None and zone in entry.load:
                entry.load[zone] -= entry.node_weight(node)

    def add(self, node: Node) -> None:
        """Count `node` in its NodePool's load again (undoes `remove`)."""
        entry = self.entry(node)
        zone = node.labels.get(wk.ZONE, "")
        if entry is not None and zone:
            entry.load[zone] = entry.load.get(zone, 0.0) + entry.node_weight(node)

    def judge(self, removed: Sequence[Node], claims: Sequence[PlannedClaim]) -> tuple[tuple[PlannedClaim, ...], str]:
        """Removing `removed` and launching `claims`: the claims pinned, and '' when every balanced
        NodePool stays within its bound (or no more lopsided than now), else why not. Leaves
        `self` unchanged.
        """
        if not self.pools:
            return tuple(claims), ""
        pinned, _, reason = self._move(removed, claims)
        return pinned, reason

    def evens(self, removed: Sequence[Node], claims: Sequence[PlannedClaim]) -> tuple[tuple[PlannedClaim, ...], str]:
        """Removing `removed` and launching `claims` to even out the zones (the consolidator's
        re-balancing move): the claims pinned, and '' when a NodePool over its bound comes out
        more even (the sum of its zones' squared loads falls; each such move lowers it, so moves
        cannot cycle) and no balanced NodePool the move touches ends more lopsided than now (as
        `judge`), else why not. Leaves `self` unchanged.
        """
        pinned, after, reason = self._move(removed, claims)
        if reason:
            return pinned, reason
        for name, entry in sorted(after.pools.items()):
            was = self.pools[name].load
            if skew(was) > entry.balance.max_skew + EPSILON and _squares(entry.load) < _squares(was) - EPSILON:
                return pinned, ""
        return pinned, "would not even out the zones of a NodePool over its zone balance"

    def _move(
        self, removed: Sequence[Node], claims: Sequence[PlannedClaim]
    ) -> tuple[tuple[PlannedClaim, ...], ZoneLoads, str]:
        """The claims pinned, the loads after the move, and why it unbalances a NodePool ('' if not)."""
        before = {name: skew(entry.load) for name, entry in self.pools.items()}
        after = self.copy()
        after.remove(removed)
        pinned = after.pin(claims)
        touched = {group(n.nodepool, n.labels) for n in removed} | {c.nodepool for c in claims}
        for name in sorted(touched & set(after.pools)):
            entry = after.pools[name]
            now = skew(entry.load)
            if now > max(entry.balance.max_skew, before[name]) + EPSILON:
                return (
                    pinned,
                    after,
                    (
                        f"would unbalance NodePool {name}'s zones ({describe(entry.load)}: a skew of {now:g} "
                        f"{entry.balance.by}, over its zone balance of {entry.balance.max_skew:g})"
                    ),
                )
        return pinned, after, ""

    def over(self) -> frozenset[str]:
        """The balanced NodePools whose serving nodes' skew is over their bound now (what a
        disruption move can even out; the standby instances are evened out as the buffer refills).
        """
        return frozenset(
            name for name, e in self.pools.items() if not e.standby and skew(e.load) > e.balance.max_skew + EPSILON
        )

    def excess(self, node: Node) -> float:
        """How much more the node's zone holds than its NodePool's least loaded zone (0 for a
        node of a NodePool that is not balanced): the fullest zones' nodes have the most.
        """
        entry = self.entry(node)
        if entry is None or not entry.load:
            return 0.0
        return entry.load.get(node.labels.get(wk.ZONE, ""), 0.0) - min(entry.load.values())

    def in_fullest(self, node: Node) -> bool:
        """Whether the node is in one of its balanced NodePool's fullest zones (and it has two or more)."""
        entry = self.entry(node)
        if entry is None or len(entry.load) < 2:
            return False
        return self.excess(node) >= skew(entry.load) - EPSILON

    def describe_pool(self, name: str) -> str:
        """`a=3 b=1 c=2` for a balanced NodePool ('' for another)."""
        entry = self.pools.get(name)
        return describe(entry.load) if entry is not None else ""

    def deletable(self, nodes: Sequence[Node]) -> tuple[list[int], dict[int, str]]:
        """Of `nodes` (to delete, in order), the indexes whose deletion together keeps every
        balanced NodePool within its bound, taking the fullest zones first; the others with why.
        """
        kept: list[int] = []
        why: dict[int, str] = {}
        taken: list[Node] = []
        order = sorted(range(len(nodes)), key=lambda i: -self.zone_load(nodes[i]))
        for i in order:
            _, reason = self.judge([*taken, nodes[i]], ())
            if reason:
                why[i] = reason
                continue
            taken.append(nodes[i])
            kept.append(i)
        return sorted(kept), why

    def zone_load(self, node: Node) -> float:
        """The load of `node`'s zone in its count (`group`; 0 for a node of a NodePool not balanced)."""
        entry = self.entry(node)
        return entry.load.get(node.labels.get(wk.ZONE, ""), 0.0) if entry is not None else 0.0


def balance_result(
    inp: SchedulingInput,
    result: SchedulingResult,
    resolve: Callable[[SchedulingInput], SchedulingResult] | None = None,
    *,
    standby: bool = False,
) -> SchedulingResult:
    """`result` with the new claims of balanced NodePools pinned to zones (unchanged without any);
    `standby`: they are standby instances, pinned by the count of those (`group`).

    With `resolve` (the caller's solver), a plan that leaves a balanced NodePool over its bound
    because its zone-tied claims also carry free pods is planned again in two steps
    (`split_solve`), and that plan is taken when it leaves the balanced NodePools less over their
    bounds, places as many pods and costs at most SPLIT_PREMIUM more an hour.
    """
    loads = ZoneLoads.for_provisioning(inp)
    if not loads or not result.claims:
        return result
    after = loads.copy()  # the loads once the pinned claims launch
    pinned = replace(result, claims=after.pin(result.claims, standby=standby))
    if resolve is None or not _mixed_and_over(after, pinned.claims):
        return pinned
    split = split_solve(inp, resolve, loads)
    if split is None or _placed(split) < _placed(result):
        return pinned
    after_split = loads.copy()
    split = replace(split, claims=after_split.pin(split.claims))
    if _excess(after_split) >= _excess(after) - EPSILON:
        return pinned
    if split.price_per_hour > pinned.price_per_hour * (1 + SPLIT_PREMIUM) + EPSILON:
        return pinned
    return split


def split_solve(
    inp: SchedulingInput, resolve: Callable[[SchedulingInput], SchedulingResult], loads: ZoneLoads
) -> SchedulingResult | None:
    """Plan `inp` in two steps: its free pods first, their claims pinned to zones by the balance
    (`loads`), then the zone-tied ones (`tied`), which fill what the first step's claims leave in
    their zones before they open claims of their own. In one solve the free pods ride on the
    tied claims of whichever zones the solver filled first, and no claim is left for the balance
    to pin (seed 7 of the feature days: 19/12/7 nodes of one NodePool for 20 minutes, every one
    holding a spread pod). The second step sees the first's pods where it put them (on nodes,
    on claims in flight, on its new claims, offered to it as claims in flight of their planned
    type and pinned zone), and those new claims against the NodePools' limits. None when the
    pass has no pods of one kind.
    """
    first_pods = tuple(p for p in inp.pods if not tied(p))
    rest = tuple(p for p in inp.pods if tied(p))
    if not first_pods or not rest:
        return None
    first = resolve(replace(inp, pods=first_pods))
    first_claims = loads.copy().pin(first.claims)
    by_key = {p.key: p for p in first_pods}
    held = [replace(by_key[k], node_name=name) for name, keys in first.existing.items() for k in keys]
    pools = {pc.nodepool.name: pc.nodepool for pc in inp.pools}
    used = dict(inp.used)
    planned: dict[str, PlannedClaim] = {}
    offered: list[NodeClaim] = []
    for i, made in enumerate(first_claims):
        name = f"{SPLIT_PREFIX}{i}"
        claim = planned[name] = made
        held.extend(replace(p, node_name=name) for p in claim.pods)
        pool = pools.get(claim.nodepool)
        if pool is not None and pool.limits is not None:
            # Charged at its planned type, and held to types no larger on what the limits count:
            # charged at its largest option (as the solver charges a claim), the first step's
            # claims, sized for few pods with room for many types, would use up a limit the
            # second step's pods then could not reach.
            limited = pool.limits
            claim = replace(
                claim,
                options=tuple(
                    it
                    for it in claim.options
                    if it is claim.instance_type
                    or all(it.capacity.get(k, 0) <= claim.instance_type.capacity.get(k, 0) for k in limited)
                ),
            )
            planned[name] = claim
        capacity = Resources()
        for it in claim.options:
            capacity = capacity.maximum(it.capacity)
        used[claim.nodepool] = used.get(claim.nodepool, Resources()) + charged(capacity)
        offered.append(
            NodeClaim(
                name=name,
                nodepool=claim.nodepool,
                requirements=claim.requirements,
                instance_type_options=(claim.instance_type.name,),
                requests=claim.requests,
                pods=tuple(sorted(p.key for p in claim.pods)),
                labels={**claim.requirements.labels(), **(pool.labels if pool is not None else {})},
                taints=pool.taints if pool is not None else (),
                instance_type=claim.instance_type.name,
                capacity_type=claim.offering.capacity_type,
                zone=claim_zone(NodeClaim(name=name, nodepool=claim.nodepool, requirements=claim.requirements)),
                created_at=inp.now,
            )
        )
    second = resolve(
        replace(inp, pods=rest, bound_pods=(*inp.bound_pods, *held), inflight=(*inp.inflight, *offered), used=used)
    )
    rest_by_key = {p.key: p for p in rest}
    claims = [planned[f"{SPLIT_PREFIX}{i}"] for i in range(len(first_claims))]
    existing: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in first.existing.items()}
    for name, keys in second.existing.items():
        grown = planned.get(name)
        if grown is None:
            existing[name] = (*existing.get(name, ()), *keys)
            continue
        added = tuple(rest_by_key[k] for k in keys)
        requests = grown.requests
        for pod in added:
            requests = requests + pod.requests
        # The pods fit its planned type (the room offered); of the other options, those they fit.
        options = tuple(it for it in grown.options if it is grown.instance_type or requests.fits_in(it.allocatable))
        claims[int(name.removeprefix(SPLIT_PREFIX))] = replace(
            grown, pods=(*grown.pods, *added), requests=requests, options=options
        )
    return SchedulingResult(
        claims=(*claims, *second.claims),
        existing=existing,
        unschedulable={**first.unschedulable, **second.unschedulable},
        deferred=tuple(sorted((*first.deferred, *second.deferred))),
    )


def _mixed_and_over(after: ZoneLoads, claims: Sequence[PlannedClaim]) -> bool:
    """Whether, with `after` the loads once the pinned `claims` launch, a balanced NodePool is
    over its bound and one of its claims holds both zone-tied and free pods (what `split_solve`
    can undo).
    """
    over = after.over()
    return any(c.nodepool in over and any(tied(p) for p in c.pods) and not all(tied(p) for p in c.pods) for c in claims)


def _squares(load: Mapping[str, float]) -> float:
    """The sum of the zones' squared loads: lower is more even for the same total."""
    return sum(v * v for v in load.values())


def _excess(after: ZoneLoads) -> float:
    """How far over their bounds the balanced NodePools are with the loads `after`, summed."""
    return sum(max(0.0, skew(e.load) - e.balance.max_skew) for e in after.pools.values())


def _placed(result: SchedulingResult) -> int:
    """How many pods a plan places (on new claims or existing capacity)."""
    return sum(len(c.pods) for c in result.claims) + sum(len(v) for v in result.existing.values())
