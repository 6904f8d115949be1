"""Standby capacity, acted on: launch, stop, start, replace and refill standby instances.

Role: `StandbyCapacity`, the component of `Provisioner` (`nodewright.controllers.provisioning`)
that carries out `nodewright.engine.standby`'s decisions for the CapacityBuffers whose strategy is
`nodewright.io/standby-capacity` (`nodewright.model.standby`; `docs/standby.md`):

* `keep()` (after each pass, and every `static_poll` while there is standby to keep):
  1. a standby instance whose Node is Ready (startup taints gone) is *warm*: its Node is cordoned
     with the standby taint, the instance stopped (StopInstances), then its claim recorded
     `standby` (a crash between the two stops it again: StopInstances is a no-op on a stopped one);
  2. a stopped one that is stale (`engine.standby.stale_reason`: NodePool gone, drifted, a new
     AMI, expired) or surplus (`refill` found it holds no chunk; in a zone-balanced NodePool,
     taken from its fullest zones) is terminated (claim `deleting` first; the housekeeping deletes
     the claim and the Node once EC2 confirms it gone);
  3. each buffer's chunks that no standby node holds are solved onto new on-demand claims and
     launched through the `Launcher` (limits, claim records, capacity errors), marked with the
     standby label and taint so the Node joins with nothing scheduled on it. A buffer waits while
     one of its instances is still launching.
* `start_for(snapshot, pending)` (at the start of each pass): the stopped nodes `engine.standby.match`
  picks for the pending pods are started: claim `starting` holding those pods (intent first), then
  StartInstances, then the Node uncordoned and the standby taint and label removed, so
  kube-scheduler binds the pods as soon as the kubelet reports Ready. A capacity error blocks the
  offering (as a CreateFleet error does), terminates the instance and leaves its pods to the same
  pass, which launches for them. Returns every pod a `starting` claim holds: the pass leaves those
  out. The housekeeping marks a `starting` claim initialized once its Node is Ready.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from nodewright.controllers.launching import Launcher
from nodewright.controllers.provisionoptions import PassReport, ProvisionerOptions
from nodewright.engine.scheduling import SchedulingResult, solve
from nodewright.engine.scheduling.inputs import nodes_by_claim
from nodewright.engine.standby import (
    chunk_buffer,
    chunk_pods,
    match,
    refill,
    stale_reason,
    standby_buffers,
)
from nodewright.engine.zonebalance import ZoneLoads, balance_result
from nodewright.model.node import Node
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodepool import NodePool
from nodewright.model.pod import Pod
from nodewright.model.snapshot import ClusterSnapshot
from nodewright.model.standby import (
    STANDBY_LABEL,
    STANDBY_TAINT,
    STANDBY_TAINT_KEY,
    STARTING,
    STOPPED,
    buffer_key,
)
from nodewright.ports import (
    Clock,
    CloudProvider,
    Cluster,
    Configuration,
    ImageIds,
    InsufficientCapacity,
    LaunchError,
    LaunchRecords,
    Observer,
)

WARMING = ("launched", "registered", "initialized")


class StandbyCapacity:
    """Standby instances kept, started and replaced (module docstring), through `launcher` and `cloud`."""

    def __init__(
        self,
        launcher: Launcher,
        *,
        cluster: Cluster,
        cloud: CloudProvider,
        store: LaunchRecords,
        clock: Clock,
        config: Configuration,
        observer: Observer,
        options: ProvisionerOptions = ProvisionerOptions(),  # noqa: B008 (frozen: a shared default is safe)
        images: ImageIds | None = None,
    ) -> None:
        self.launcher = launcher
        self.cluster = cluster
        self.cloud = cloud
        self.store = store
        self.clock = clock
        self.config = config
        self.observer = observer
        self.options = options
        # The AMI ids each EC2NodeClass resolves to now (by name): a stopped instance booted from
        # another is replaced. Empty: not known, so never a reason.
        self.images = images
        # Whether the last `keep()` found standby buffers or instances: the provisioner's loop
        # checks again every `static_poll` only then.
        self.configured = False
        self._resumed = False  # `starting` claims resumed once per warm container (a crash's leftovers)
        self._problems: dict[str, str] = {}

    # -- keeping the standby -------------------------------------------------------------------

    def keep(self) -> PassReport:
        """Stop the warm, replace the stale and surplus, launch what each buffer lacks."""
        report = PassReport()
        buffers, templates = self.config.buffers()
        wanted = standby_buffers(buffers)
        if not wanted and not self.configured and self._resumed:
            return report  # none asked for, none left the last time this container looked
        claims = self.store.claims()
        mine = [c for c in claims if STANDBY_LABEL in c.labels and c.state != "deleting"]
        self.configured = bool(wanted or mine or any(c.state in (STOPPED, STARTING) for c in claims))
        if not self.configured:
            self._resumed = True
            return report
        snapshot = self.cluster.snapshot()
        nodepools, nodeclasses = self.config.load()
        nodes = nodes_by_claim(snapshot.nodes)
        if not self._resumed:
            self._resume(claims, nodes)
            self._resumed = True
        mine = [self._stop_if_warm(c, nodes.get(c.name) or nodes.get(c.provider_id)) for c in mine]
        pools = {p.name: p for p in nodepools}
        images = self.images() if self.images is not None else {}
        now = self.clock.now()
        keep: list[NodeClaim] = []
        gone: list[Node] = []  # the Nodes of the instances terminated by this call
        for claim in mine:
            node = nodes.get(claim.name) or nodes.get(claim.provider_id)
            why = None
            if claim.state == STOPPED:
                pool = pools.get(claim.nodepool)
                why = "its Node object is gone" if node is None else stale_reason(node, claim, pool, images, now)
            if why is None and claim.labels[STANDBY_LABEL] not in {buffer_key(b.namespace, b.name) for b in wanted}:
                why = "its CapacityBuffer no longer asks for standby capacity"
            if why is not None:
                self._terminate(claim, why)
                if node is not None:
                    gone.append(node)
            else:
                keep.append(claim)
        virtual = chunk_pods(wanted, templates, snapshot.pods)
        problems = dict(virtual.problems)
        zones: ZoneLoads | None = None  # zone-balanced NodePools' loads, built at the first surplus there
        for buffer in wanted:
            key = buffer_key(buffer.namespace, buffer.name)
            theirs = [c for c in keep if c.labels[STANDBY_LABEL] == key]
            launching = [c for c in theirs if c.state in ("pending", "launched") and not self._node(c, nodes)]
            if launching:
                continue  # refilled once they have joined: their room is not known before
            standby_nodes = [n for c in theirs if (n := self._node(c, nodes)) is not None]
            chunks = [p for p in virtual.pods if chunk_buffer(p) == key]
            found = refill(chunks, standby_nodes, snapshot.pods, daemonsets=snapshot.daemonsets, now=now)
            if found.surplus and any(
                (pool := pools.get(n.nodepool)) is not None and pool.zone_balance is not None for n in standby_nodes
            ):
                # Which nodes are surplus, again, with the zones counted: taken from the fullest.
                if zones is None:
                    zones = self._zone_loads(snapshot, nodepools, nodeclasses, gone)
                found = refill(
                    chunks, standby_nodes, snapshot.pods, daemonsets=snapshot.daemonsets, now=now, zones=zones
                )
            by_node = {n.name: c for c in theirs if (n := self._node(c, nodes)) is not None}
            for name in found.surplus:
                self._terminate(by_node[name], f"surplus: CapacityBuffer {buffer.namespace}/{buffer.name} needs less")
            if found.unplaced:
                why = self._launch(key, found.unplaced, snapshot, nodepools, nodeclasses, report)
                if why:
                    problems[f"{buffer.namespace}/{buffer.name}"] = why
        if problems != self._problems:
            for buffer_name, why in sorted(problems.items()):
                if self._problems.get(buffer_name) != why:
                    self.observer.decision("standby-short", buffer=buffer_name, reason=why)
            self._problems = problems
        return report

    def _zone_loads(
        self,
        snapshot: ClusterSnapshot,
        nodepools: Sequence[NodePool],
        nodeclasses: Mapping[str, EC2NodeClass],
        gone: Sequence[Node],
    ) -> ZoneLoads:
        """The zone-balanced NodePools' loads as a pass counts them (serving nodes and standby
        ones apart, with their claims in flight), without the nodes of instances terminated
        already (`gone`).
        """
        inp = self.launcher.scheduling_input(
            snapshot,
            pending=(),
            nodepools=nodepools,
            nodeclasses=nodeclasses,
            claims=self.store.claims(),
            now=self.clock.now(),
        )
        zones = ZoneLoads.for_provisioning(inp)
        zones.remove(gone)
        return zones

    def _node(self, claim: NodeClaim, nodes: Mapping[str, Node]) -> Node | None:
        return nodes.get(claim.name) or nodes.get(claim.provider_id)

    def _stop_if_warm(self, claim: NodeClaim, node: Node | None) -> NodeClaim:
        """Stop a standby instance whose Node is Ready with its startup taints gone (module docstring)."""
        if claim.state not in WARMING or node is None or not node.ready:
            return claim
        startup = {(t.key, t.effect) for t in claim.startup_taints}
        if any((t.key, t.effect) in startup for t in node.taints):
            return claim
        self.cluster.cordon(node.name, STANDBY_TAINT)
        self.cloud.stop([claim.instance_id])
        now = self.clock.now()
        stopped = claim.with_changes(
            state=STOPPED,
            node_name=node.name,
            registered_at=claim.registered_at or now,
            initialized_at=claim.initialized_at or now,
        )
        self.store.save_claim(stopped)
        self.observer.metric("StandbyStopped", 1, nodepool=claim.nodepool)
        self.observer.decision(
            "standby-stop",
            nodeclaim=claim.name,
            node=node.name,
            instance_id=claim.instance_id,
            buffer=claim.labels[STANDBY_LABEL],
            warm_seconds=round(now - claim.launched_at, 3),
        )
        return stopped

    def _terminate(self, claim: NodeClaim, why: str) -> None:
        self.store.save_claim(claim.with_changes(state="deleting", reason=why))
        if claim.instance_id:
            self.cloud.terminate([claim.instance_id])
        self.observer.decision(
            "standby-replace", nodeclaim=claim.name, instance_id=claim.instance_id, state=claim.state, reason=why
        )

    def _launch(  # noqa: PLR0917 (one call site: the pass's state, in its order)
        self,
        key: str,
        chunks: Sequence[Pod],
        snapshot: ClusterSnapshot,
        nodepools: Sequence[NodePool],
        nodeclasses: Mapping[str, EC2NodeClass],
        report: PassReport,
    ) -> str:
        """Solve `chunks` onto new claims only (no node or claim in flight takes them) and launch
        them as standby instances of buffer `key`; why some chunk fits nowhere, or ''.
        """

        def mark(claim: NodeClaim) -> NodeClaim:
            return claim.with_changes(
                labels={**claim.labels, STANDBY_LABEL: key},
                taints=(*(t for t in claim.taints if t.key != STANDBY_TAINT_KEY), STANDBY_TAINT),
            )

        why = ""
        for _ in range(self.options.max_replans + 1):
            inp = self.launcher.scheduling_input(
                snapshot,
                pending=chunks,
                nodepools=nodepools,
                nodeclasses=nodeclasses,
                claims=self.store.claims(),
                now=self.clock.now(),
            )
            # Limits and blocked offerings as for any launch; placement on new claims alone.
            result = solve(replace(inp, nodes=(), bound_pods=(), inflight=()), cache=self.launcher.solver_cache)
            # A zone-balanced NodePool keeps its standby instances even across its zones, counted
            # apart from its serving nodes (`engine.zonebalance.group`), its claims in flight included.
            result = balance_result(inp, result, standby=True)
            if result.unschedulable:
                why = f"a chunk fits no NodePool's on-demand offerings: {sorted(result.unschedulable.values())[0]}"
            planned = tuple(replace(c, pods=()) for c in result.claims)
            if planned:
                self.observer.decision("standby-scale-up", buffer=key, claims=len(planned), chunks=len(chunks))
            if not planned or not self.launcher.launch_all(
                SchedulingResult(claims=planned),
                nodepools,
                nodeclasses,
                inp,
                report,
                reason="standby capacity",
                mark=mark,
            ):
                break
        return why

    # -- starting for pending pods -------------------------------------------------------------

    def start_for(self, snapshot: ClusterSnapshot, pending: Sequence[Pod]) -> frozenset[str]:
        """Start the stopped nodes the pending pods fit (module docstring); every pod a `starting`
        claim holds, which the pass leaves out.
        """
        if not self.configured:
            return frozenset()
        claims = self.store.claims()
        held = {p for c in claims if c.state == STARTING for p in c.pods}
        stopped = {c.node_name: c for c in claims if c.state == STOPPED and c.node_name}
        if not stopped:
            return frozenset(held)
        nodes = [n for n in snapshot.nodes if n.name in stopped]
        running = [n for n in snapshot.nodes if n.name not in stopped and STANDBY_LABEL not in n.labels]
        waiting = [p for p in pending if p.key not in held]
        zones = None
        if waiting and len(nodes) > 1:
            # Of equal stopped nodes, those in the zones with the fewest serving nodes start first:
            # counted (a scheduling input built) only when a stopped node's NodePool is balanced.
            nodepools, nodeclasses = self.config.load()
            theirs = {n.nodepool for n in nodes}
            if any(p.zone_balance is not None and p.name in theirs for p in nodepools):
                zones = self._zone_loads(snapshot, nodepools, nodeclasses, ())
        chosen = match(
            waiting,
            running,
            nodes,
            [p for p in snapshot.pods if p.node_name],
            daemonsets=snapshot.daemonsets,
            now=self.clock.now(),
            cache=self.launcher.solver_cache,
            zones=zones,
        )
        for name, pods in chosen.items():
            if self._start(stopped[name], name, pods):
                held.update(pods)
        return frozenset(held)

    def _start(self, claim: NodeClaim, node: str, pods: tuple[str, ...]) -> bool:
        """Start one stopped instance for `pods`; False when EC2 would not (the pods go to the pass)."""
        now = self.clock.now()
        started = claim.with_changes(
            state=STARTING,
            pods=pods,
            labels={k: v for k, v in claim.labels.items() if k != STANDBY_LABEL},
            taints=tuple(t for t in claim.taints if t.key != STANDBY_TAINT_KEY),
            registered_at=now,  # when the start began: the housekeeping's timeout counts from it
        )
        self.store.save_claim(started)  # intent first: a crash leaves a `starting` claim to resume
        offering = (claim.capacity_type, claim.instance_type, claim.zone)
        try:
            self.cloud.start(claim.instance_id, offering)
        except InsufficientCapacity as error:
            self.store.block_offerings(error.offerings, now + self.options.capacity_error_ttl)
            self.observer.metric("StandbyStartFailures", 1, reason="InsufficientCapacity")
            self._terminate(started, f"StartInstances: {error.reason}; launching instead")
            return False
        except LaunchError as error:
            self.observer.metric("StandbyStartFailures", 1, reason="LaunchError")
            self._terminate(started, f"StartInstances failed: {error}; launching instead")
            return False
        self._open(node)
        self.observer.metric("StandbyStarted", 1, nodepool=claim.nodepool)
        self.observer.decision(
            "standby-start",
            nodeclaim=claim.name,
            node=node,
            instance_id=claim.instance_id,
            buffer=claim.labels.get(STANDBY_LABEL, ""),
            pods=list(pods),
            at=now,
        )
        return True

    def _open(self, node: str) -> None:
        """The started node takes pods once Ready: no cordon, no standby taint, no standby label."""
        self.cluster.uncordon(node, STANDBY_TAINT_KEY)
        self.cluster.label_node(node, {STANDBY_LABEL: None})

    def _resume(self, claims: Sequence[NodeClaim], nodes: Mapping[str, Node]) -> None:
        """Finish starts a crash interrupted: StartInstances again (a no-op once running) and the
        Node opened, for `starting` claims whose Node is not Ready yet.
        """
        for claim in claims:
            node = self._node(claim, nodes)
            if claim.state != STARTING or node is None or node.ready:
                continue
            try:
                self.cloud.start(claim.instance_id, (claim.capacity_type, claim.instance_type, claim.zone))
            except (InsufficientCapacity, LaunchError) as error:
                self._terminate(claim, f"StartInstances failed on resume: {error}")
                continue
            self._open(node.name)
