"""`SolverCache`: what `solve()` remembers between calls, in one object the caller owns. Pure.

A provisioner invocation solves again after every capacity error, and one consolidation pass asks
the solver dozens of questions about the same NodePools, nodes and bound pods. What those solves
derive from the same immutable objects is derived once and kept here:

* `prepared`: each NodePool's view of the catalog (`prepare.PreparedPool`), the most recently
  used, compared by value; the answers each one remembers (options, targets) go with it, and
  pools alike but for their name share the prepared types (`typeview.TypeViews`);
* `pod_facts` / `node_facts`: what the solver reads of a bound pod or a node, by object identity;
* `bound_runs`: runs of consecutive bound pods on one node, added up once (`existing.py`);
* `catalog_peaks`: the most allocatable of the pools' catalogs (`state.Pass.catalog_peak`), by the
  resource names and the catalogs' identity: a consolidation pass's solves share their pools.

Every entry is a pure function of its key, and entries found by `id()` hold their object, so an id
cannot be reused while it is remembered: a solve with a warm cache returns exactly what it returns
with a fresh one (tests/engine/scheduling/test_solver_cache.py checks it). Each memo is bounded;
the ones found by identity also forget what the last two passes did not use (`age`, called by the
owner at each pass: `generations.Generational`), so pod churn cannot fill a warm container.

Who owns one: the provisioner and the consolidator keep one per warm container (their controller
object); `solve()` without one makes a fresh one for the call, so `plan`, tests and the strategies
of one call still share the preparation. Nothing in the engine holds one between calls.
"""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nodewright.engine.scheduling.generations import Generational
from nodewright.engine.scheduling.prepare import PreparedPool, vec
from nodewright.engine.scheduling.typeview import TypeViews
from nodewright.model import labels as wk
from nodewright.model.instancetype import OfferingKey
from nodewright.model.node import Node
from nodewright.model.nodepool import NodePool
from nodewright.model.pod import Pod
from nodewright.model.requirements import Requirement, Requirements
from nodewright.model.taints import Taint
from nodewright.model.workloads import DaemonSet

# Taints the node lifecycle puts on nodes for a moment; pods are placed as if they were not there.
_IGNORED_NODE_TAINTS = frozenset(
    {
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
        "node.cloudprovider.kubernetes.io/uninitialized",
    }
)


class SolverCache:
    """The memos `solve()` may reuse across calls (see the module docstring). Limits bound each.

    For one thread of work at a time, as a Lambda container runs one invocation at a time: each
    owner (a controller, the simulated kube-scheduler) keeps its own, so nothing needs a lock.
    """

    def __init__(
        self,
        *,
        prepared: int = 4096,
        pod_facts: int = 100_000,
        node_facts: int = 20_000,
        bound_runs: int = 50_000,
    ) -> None:
        self.prepared = PreparedPools(prepared)
        self.pod_facts = PodFacts(pod_facts)
        self.node_facts = NodeFacts(node_facts)
        self.bound_runs = BoundRuns(self.pod_facts, bound_runs)
        self.catalog_peaks = CatalogPeaks()

    def age(self) -> None:
        """Start a new generation of the memos found by identity: call once per pass (a
        provisioning pass, a disruption pass); what neither this pass nor the one before used is
        forgotten (`generations.py`).
        """
        self.pod_facts.age()
        self.node_facts.age()
        self.bound_runs.age()


class CatalogPeaks:
    """`Pass.catalog_peak` by the pass's resource names and its pools' catalogs, compared by
    identity (each entry holds its catalogs, so their ids stay theirs). The last few only: the
    pools of one consolidation pass or provisioning invocation are the same objects throughout.
    """

    LIMIT = 8

    def __init__(self) -> None:
        self._entries: OrderedDict[tuple[Any, ...], tuple[list[Sequence[Any]], tuple[int, ...]]] = OrderedDict()

    def get(self, names: tuple[str, ...], catalogs: list[Sequence[Any]]) -> tuple[int, ...] | None:
        """The peak remembered for these names and these very catalogs, or None."""
        hit = self._entries.get((names, *map(id, catalogs)))
        if hit is None or not all(map(operator.is_, hit[0], catalogs)):
            return None
        return hit[1]

    def put(self, names: tuple[str, ...], catalogs: list[Sequence[Any]], peak: tuple[int, ...]) -> None:
        """Remember `peak` for these names and catalogs."""
        self._entries[(names, *map(id, catalogs))] = (catalogs, peak)
        while len(self._entries) > self.LIMIT:
            self._entries.popitem(last=False)


@dataclass(frozen=True, slots=True)
class Run:
    """Consecutive bound pods on one node (`pods`; empty for one pod that is terminal or on no
    node), what they request (`used`, over some resource names) and, for topology, (key, first
    pod, count) per key in order of first appearance, as `existing.BoundPods` counts them.
    """

    pods: tuple[Pod, ...]
    names: tuple[str, ...]
    used: tuple[int, ...]
    alike: tuple[tuple[tuple[object, ...], Pod, int], ...]


NO_RUN = Run((), (), (), ())


class BoundRuns:
    """The runs `existing.BoundPods` adds up, remembered across solves by their first pod.

    Each consolidation question passes the solver the few hundred bound pods a topology
    constraint counts, node after node, and the next question passes mostly the same nodes' pods
    again: the same pod objects in the same order (the simulator of a pass hands out one tuple per
    node, and the cluster hands out unchanged pods from pass to pass). So a run of pods on one node
    is added up once, and is reused wherever the same pods follow each other again: the sums of a
    run are the sums of its pods, so `existing.BoundPods` gets exactly what it would pod by pod.
    Valid because a run's facts are a pure function of its (immutable) pods and the names; an
    entry is found by its first pod's id and used only when the pods that follow are the very
    objects it holds, so no id can be reused while it is remembered. Bounded: everything is
    forgotten when `limit` runs are remembered; a few runs are kept per first pod.
    """

    PER_POD = 4

    def __init__(self, pod_facts: PodFacts, limit: int = 50_000) -> None:
        self.pod_facts = pod_facts
        self.limit = limit
        self._runs: Generational[int, list[Run]] = Generational(limit)

    def get(self, pods: Sequence[Pod], start: int, names: tuple[str, ...]) -> Run:
        """A run of pods on one node starting at `pods[start]`: the latest remembered one that the
        pods there repeat, else the whole run there; `NO_RUN` when that pod is not counted.
        """
        first = pods[start]
        if first.terminal or not first.node_name:
            return NO_RUN
        for run in self._runs.get(id(first)) or ():
            n = len(run.pods)
            if (
                run.pods[0] is first
                and run.names == names
                and len(pods) - start >= n
                and all(map(operator.is_, run.pods, pods[start : start + n]))
            ):
                return run
        return self._remember(self._add_up(pods, start, names))

    def _add_up(self, pods: Sequence[Pod], start: int, names: tuple[str, ...]) -> Run:
        """The run of counted pods on one node from `pods[start]`, added up pod by pod."""
        node = pods[start].node_name
        end = start
        used = [0] * len(names)
        alike: dict[tuple[object, ...], list[Any]] = {}
        pod_facts = self.pod_facts
        while end < len(pods):
            pod = pods[end]
            if pod.node_name != node or pod.terminal:
                break
            requests, key = pod_facts.get(pod, names)
            for i, v in enumerate(requests):
                used[i] += v
            seen = alike.get(key)
            if seen is None:
                alike[key] = [pod, 1]
            else:
                seen[1] += 1
            end += 1
        return Run(tuple(pods[start:end]), names, tuple(used), tuple((key, p, n) for key, (p, n) in alike.items()))

    def _remember(self, run: Run) -> Run:
        """Keep `run` first among its first pod's runs (forgetting all when full); return it."""
        key = id(run.pods[0])
        known = self._runs.get(key)
        if known is None:
            known = []
            self._runs.put(key, known)
        known.insert(0, run)
        del known[self.PER_POD :]
        return run

    def age(self) -> None:
        """Start a new generation (`SolverCache.age`)."""
        self._runs.age()


class PodFacts:
    """What `existing.BoundPods` reads of a bound pod, remembered across solves: its requests as a
    vector over some resource names, and what Topology.record reads of it (namespace, labels,
    required anti-affinity; pods equal in these are recorded alike).

    Consolidation asks dozens of questions per pass about the same few hundred bound pods (those a
    topology constraint counts), and the provisioner passes every bound pod on each invocation;
    the pods are mostly the same objects from one question or pass to the next. Valid because the
    facts are a pure function of the (immutable) pod and the names: pods are remembered by id, and
    each entry holds its pod, so the id cannot be reused by another object while it is remembered.
    Bounded: everything is forgotten when `limit` pods are remembered.
    """

    def __init__(self, limit: int = 100_000) -> None:
        self.limit = limit
        self._facts: Generational[int, tuple[Pod, tuple[str, ...], tuple[int, ...], tuple[object, ...]]] = Generational(
            limit
        )

    def __len__(self) -> int:
        return len(self._facts)

    def age(self) -> None:
        """Start a new generation (`SolverCache.age`)."""
        self._facts.age()

    def get(self, pod: Pod, names: tuple[str, ...]) -> tuple[tuple[int, ...], tuple[object, ...]]:
        """(requests as a vector over `names`, the pod's topology key)."""
        known = self._facts.get(id(pod))
        if known is not None and known[0] is pod and known[1] == names:
            return known[2], known[3]
        requests = vec(pod.requests, names)
        key = (pod.namespace, tuple(sorted(pod.labels.items())), pod.anti_affinity)
        self._facts.put(id(pod), (pod, names, requests, key))
        return requests, key


class NodeFacts:
    """What `existing.add_existing` derives from a node, remembered across solves like `PodFacts` (and
    valid for the same reasons; consolidation hands every solve of a pass the same node objects):
    its allocatable as a vector over some resource names, its labels as requirements, and the
    taints that keep pods off it.
    """

    def __init__(self, limit: int = 20_000) -> None:
        self.limit = limit
        self._facts: Generational[
            int, tuple[Node, tuple[str, ...], tuple[tuple[int, ...], Requirements, tuple[Taint, ...]]]
        ] = Generational(limit)

    def age(self) -> None:
        """Start a new generation (`SolverCache.age`)."""
        self._facts.age()

    def get(self, node: Node, names: tuple[str, ...]) -> tuple[tuple[int, ...], Requirements, tuple[Taint, ...]]:
        """(allocatable over `names`, labels as requirements, taints that count)."""
        known = self._facts.get(id(node))
        if known is not None and known[0] is node and known[1] == names:
            return known[2]
        facts = (
            vec(node.allocatable, names),
            _label_requirements(node.labels),
            tuple(t for t in node.taints if t.key not in _IGNORED_NODE_TAINTS),
        )
        self._facts.put(id(node), (node, names, facts))
        return facts


def _label_requirements(labels: Mapping[str, str]) -> Requirements:
    """A node's labels as requirements, with the reservation labels it lacks as DoesNotExist: a
    node outside a reservation has none (unlike the other well-known labels, absent means absent),
    so a pod requiring a reservation does not land on it.
    """
    reqs = Requirements.from_labels(labels)
    missing = [Requirement.new(key, "DoesNotExist", []) for key in wk.RESERVATION_LABELS if key not in labels]
    return reqs.intersection(Requirements(missing)) if missing else reqs


class PreparedPools:
    """The most recently used `PreparedPool` entries (an LRU of `size`, compared by value), found
    by NodePool name, and the `TypeViews` they share. `size` should hold every NodePool of one
    input (4,096 by default: an entry whose pool shares its view with others is small), or each
    pass prepares the pools again; 0 keeps nothing.

    A cache of pure results: a hit returns exactly what preparing afresh would.
    """

    # Entries kept per NodePool name (versions of one pool: other daemonsets, blocked offerings).
    PER_NAME = 4
    VIEWS = 64

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self._count = 0
        self._by_name: OrderedDict[str, list[PreparedPool]] = OrderedDict()
        self._views = TypeViews(self.VIEWS if size > 0 else 0)

    def __len__(self) -> int:
        """How many entries are kept."""
        return self._count

    def get(
        self,
        nodepool: NodePool,
        daemonsets: Sequence[DaemonSet],
        blocked: frozenset[OfferingKey],
        names: tuple[str, ...],
    ) -> PreparedPool:
        """The entry for these inputs, made when none matches."""
        entries = self._by_name.get(nodepool.name)
        if entries is not None:
            self._by_name.move_to_end(nodepool.name)
            for i, entry in enumerate(entries):
                if entry.matches(nodepool, daemonsets, blocked, names):
                    if i:
                        del entries[i]
                        entries.insert(0, entry)
                    return entry
        entry = PreparedPool(nodepool, daemonsets, blocked, names, self._views)
        if self.size <= 0:
            return entry
        if entries is None:
            entries = self._by_name[nodepool.name] = []
        entries.insert(0, entry)
        self._count += 1
        if len(entries) > self.PER_NAME:
            entries.pop()
            self._count -= 1
        while self._count > self.size:
            _, dropped = self._by_name.popitem(last=False)
            self._count -= len(dropped)
        return entry
