"""Existing capacity: the nodes and in-flight claims pods can go to before any new claim. Pure.

Nodes become bins with their allocatable less what their bound pods request; in-flight claims
(launched or launching for an earlier pass) become bins with their target type's room less what
they hold. Every bound pod is counted for topology where it is (or will be, for a claim in flight),
as kube-scheduler will count it. Cordoned and deleting nodes, and nodes that stopped being Ready
after they came up (`Node.failed`: broken, not starting), take no pods but still count.

`BoundPods` adds the bound pods up by node once per `solve()` call (every strategy of the call
reads the same), run by run through the caller's `SolverCache.bound_runs`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nodewright.engine.scheduling.cache import SolverCache
from nodewright.engine.scheduling.state import Bin, Pass
from nodewright.engine.scheduling.topology import Group, spread_group, term_group
from nodewright.model import labels as wk
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.pod import Pod
from nodewright.model.requirements import Requirement, Requirements


def add_existing(p: Pass) -> None:
    """Add the existing nodes and in-flight claims to the pass as bins, and count their pods."""
    bound = p.bound.get(p.inp.bound_pods, p.names)
    used, bound_by_node = bound.used, bound.pods
    keys = {g.key for g in p.tracked}
    p.bound_ports = any(pod.host_ports for pod in p.inp.bound_pods)
    for node in sorted(p.inp.nodes, key=lambda n: n.name):
        cap, node_reqs, taints = p.cache.node_facts.get(node, p.names)
        load = used.get(node.name, [0] * len(cap))
        domains = {k: (node.name if k == wk.HOSTNAME else node.labels.get(k)) for k in keys}
        for pod, count in bound.alike.get(node.name, ()):
            p.topology.record(pod, domains, count)
        if node.unschedulable or node.deleting or node.failed:
            continue
        for pod in bound_by_node.get(node.name, ()) if p.bound_ports else ():
            if pod.host_ports:
                p.ports.take(node.name, None, pod.host_ports)
        p.existing.append(
            Bin(
                node.name,
                "node",
                node_reqs,
                taints,
                [c - u for c, u in zip(cap, load, strict=True)],
                labels=node.labels,
            )
        )
    pools = {pool.name: pool for pool in (*p.pools, *p.static_pools)}
    # Not by name: a claim's name ends in a random suffix, and the same input must plan the same.
    for claim in sorted(p.inp.inflight, key=NodeClaim.launch_order):
        pool = pools.get(claim.nodepool)
        t = pool.by_name.get(claim.instance_type) if pool else None
        name = claim.node_name or claim.name
        if pool is None or t is None:
            # No room to offer (its NodePool or type is gone), but its pods still land there.
            where = {wk.HOSTNAME: name, wk.ZONE: claim.zone or None, wk.CAPACITY_TYPE: claim.capacity_type or None}
            for pod in bound_by_node.get(name, ()):
                p.topology.record(pod, where)
            continue
        load = used.get(name, [0] * len(p.names))
        # A launched claim is where it launched: its zone, capacity type and type are known.
        launched = {
            wk.ZONE: claim.zone,
            wk.CAPACITY_TYPE: claim.capacity_type,
            wk.INSTANCE_TYPE: claim.instance_type,
        }
        b = Bin(
            name,
            "inflight",
            claim.requirements.intersection(Requirements.from_labels(claim.labels)).intersection(
                Requirements([Requirement.new(k, "In", [v]) for k, v in launched.items() if v])
            ),
            claim.taints,
            [c - u for c, u in zip(t.cap, load, strict=True)],
            pool=pool,
            target=t,
        )
        p.existing.append(b)
        for pod in bound_by_node.get(name, ()) if p.bound_ports else ():
            if pod.host_ports:
                p.ports.take(name, pool, pod.host_ports)
        # The pods a claim in flight holds count where it will be, as kube-scheduler will count
        # them once it binds them; without this a re-plan after a capacity error spread pods
        # as if the claims launched a moment ago were empty.
        domains = {k: b.domain(k) for k in keys}
        for pod in bound_by_node.get(name, ()):
            p.topology.record(pod, domains)


def topology_groups(p: Pass) -> list[Group]:
    """The topology groups the pass must count: the pending classes' and bound pods' constraints."""
    groups: list[Group] = []
    for cls in p.classes:
        pod = cls.sample
        groups += [spread_group(s, pod.namespace) for s in pod.spread]
        groups += [
            term_group(t)
            for t in (*pod.affinity, *pod.preferred_affinity, *pod.anti_affinity, *pod.preferred_anti_affinity)
        ]
    for pod in p.inp.bound_pods:
        groups += [term_group(t) for t in pod.anti_affinity]
    return groups


@dataclass(frozen=True, slots=True)
class Bound:
    """The bound pods by node (`pods`, in input order), what they request there (`used`, a vector
    over the solver's resource names), and for topology each node's pods as (pod, count): pods
    topology counts alike (same namespace, labels and required anti-affinity) once, with how many
    there are, in order of first appearance. Shared by the strategies: never changed.
    """

    used: Mapping[str, list[int]]
    pods: Mapping[str, list[Pod]]
    alike: Mapping[str, list[tuple[Pod, int]]]


class BoundPods:
    """Work that every strategy of one `solve()` call would repeat on the same input, done once.

    Lives for one call, so it can only ever see one input; keyed by what else it depends on.
    """

    def __init__(self, cache: SolverCache) -> None:
        self._runs = cache.bound_runs
        self._bound: dict[tuple[str, ...], Bound] = {}

    def get(self, bound_pods: Sequence[Pod], names: tuple[str, ...]) -> Bound:
        """`bound_pods` (the input's) by node (see `Bound`), for these resource names."""
        hit = self._bound.get(names)
        if hit is not None:
            return hit
        used: dict[str, list[int]] = {}
        pods: dict[str, list[Pod]] = {}
        alike: dict[str, dict[tuple[object, ...], list[Any]]] = {}
        # Run by run (see `cache.BoundRuns`): adding up a run's sums is adding up its pods one by one.
        start, end = 0, len(bound_pods)
        while start < end:
            run = self._runs.get(bound_pods, start, names)
            start += len(run.pods) or 1
            if not run.pods:  # a terminal or unbound pod: nowhere to count it
                continue
            node = run.pods[0].node_name
            pods.setdefault(node, []).extend(run.pods)
            acc = used.setdefault(node, [0] * len(names))
            for i, v in enumerate(run.used):
                acc[i] += v
            runs = alike.setdefault(node, {})
            for key, pod, count in run.alike:
                seen = runs.get(key)
                if seen is None:
                    runs[key] = [pod, count]
                else:
                    seen[1] += count
        hit = Bound(
            used,
            pods,
            {node: [(pod, n) for pod, n in runs.values()] for node, runs in alike.items()},
        )
        self._bound[names] = hit
        return hit
