"""Benchmark workloads: deterministic, seeded generators of pending pods.

Role: give the scheduling benchmark the same inputs on every run. Every generator takes a pod
count (and a seed where randomness is involved) and returns a list of `nodewright.model.pod.Pod`,
pending and unschedulable, in the default namespace, named `<workload>-<index>`.

* `diverse`: Karpenter's own benchmark workload (kubernetes-sigs/karpenter,
  pkg/controllers/provisioning/scheduling/scheduling_benchmark_test.go, `makeDiversePods`, the
  current five-way version): count/5 each of generic pods, zone topology spread, hostname
  topology spread, zone pod self-affinity, hostname pod anti-affinity, and the remainder generic.
  The draws (label values a..g, CPU from {100m,250m,500m,1000m,1500m}, memory from
  {100,256,512,1024,2048,4096}Mi) are made in the same order as the Go code, but from Python's
  `random.Random(seed)` rather than Go's `math/rand` (seed 42), so the sequence differs while
  the distribution is the same. The label key `my-affininity` keeps upstream's spelling.
* `uniform`: identical 1 cpu / 2Gi pods in four deployments (the easiest packing case).
* `batch`: two large jobs, 4 cpu / 16Gi and 2 cpu / 4Gi workers.
* `microservice`: a dozen services with assorted small requests and replica counts; a third of
  them spread over zones (maxSkew 1, DoNotSchedule).
* `mixed_shape`: cpu-heavy 4 cpu / 1Gi pods next to memory-heavy 0.5 cpu / 8Gi pods, where
  putting both shapes on one general-purpose node beats a compute node plus a memory node.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence

from nodewright.model import labels as wk
from nodewright.model.pod import AffinityTerm, Pod, SpreadConstraint
from nodewright.model.resources import Resources
from nodewright.model.selectors import LabelSelector

NAMESPACE = "default"
LABEL_VALUES = ("a", "b", "c", "d", "e", "f", "g")
CPU_CHOICES = ("100m", "250m", "500m", "1000m", "1500m")
MEMORY_CHOICES = ("100Mi", "256Mi", "512Mi", "1024Mi", "2048Mi", "4096Mi")
# Upstream's spelling (a typo there); kept so manifests read the same as Karpenter's benchmark.
AFFINITY_LABEL = "my-affininity"
SPREAD_LABEL = "my-label"


def _pod(
    name: str,
    cpu: str,
    memory: str,
    labels: Mapping[str, str],
    *,
    spread: tuple[SpreadConstraint, ...] = (),
    affinity: tuple[AffinityTerm, ...] = (),
    anti_affinity: tuple[AffinityTerm, ...] = (),
    owner: str = "",
) -> Pod:
    return Pod(
        namespace=NAMESPACE,
        name=name,
        uid=name,
        labels=dict(labels),
        requests=Resources.of(cpu=cpu, memory=memory, pods=1),
        spread=spread,
        affinity=affinity,
        anti_affinity=anti_affinity,
        owner_kind="ReplicaSet" if owner else "",
        owner_name=owner,
        unschedulable=True,
    )


def _selector(labels: Mapping[str, str]) -> LabelSelector:
    return LabelSelector(tuple(sorted(labels.items())))


def _term(labels: Mapping[str, str], key: str) -> AffinityTerm:
    return AffinityTerm(_selector(labels), key, frozenset((NAMESPACE,)))


def _spread(labels: Mapping[str, str], key: str, max_skew: int = 1) -> SpreadConstraint:
    return SpreadConstraint(max_skew, key, "DoNotSchedule", _selector(labels))


# -- Karpenter's diverse workload -------------------------------------------------------------------


class _Draws:
    """The random helpers of the Go benchmark, drawing from one seeded generator."""

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)

    def value(self) -> str:
        return self._rng.choice(LABEL_VALUES)

    def cpu(self) -> str:
        return self._rng.choice(CPU_CHOICES)

    def memory(self) -> str:
        return self._rng.choice(MEMORY_CHOICES)


def diverse(count: int, seed: int = 42) -> list[Pod]:
    """Karpenter's `makeDiversePods(count)`: five kinds of pods in equal parts (see module doc)."""
    draws = _Draws(seed)
    pods: list[Pod] = []
    part = count // 5

    def name() -> str:
        return f"diverse-{len(pods)}"

    def generic(n: int) -> None:
        for _ in range(n):
            labels = {SPREAD_LABEL: draws.value()}
            pods.append(_pod(name(), draws.cpu(), draws.memory(), labels))

    def spread(n: int, key: str) -> None:
        for _ in range(n):
            # Label and selector are independent draws, as upstream: most pods do not select themselves.
            labels = {SPREAD_LABEL: draws.value()}
            selector = {SPREAD_LABEL: draws.value()}
            constraint = _spread(selector, key)
            pods.append(_pod(name(), draws.cpu(), draws.memory(), labels, spread=(constraint,)))

    def self_affinity(n: int, key: str) -> None:
        for _ in range(n):
            # Self-affinity: upstream draws the label once and selects it, so every pod can schedule.
            labels = {AFFINITY_LABEL: draws.value()}
            pods.append(_pod(name(), draws.cpu(), draws.memory(), labels, affinity=(_term(labels, key),)))

    def anti_affinity(n: int, key: str) -> None:
        labels = {"app": "nginx"}
        for _ in range(n):
            pods.append(_pod(name(), draws.cpu(), draws.memory(), labels, anti_affinity=(_term(labels, key),)))

    generic(part)
    spread(part, wk.ZONE)
    spread(part, wk.HOSTNAME)
    self_affinity(part, wk.ZONE)
    anti_affinity(part, wk.HOSTNAME)
    generic(count - len(pods))
    return pods


# -- the other workloads ------------------------------------------------------------------------------


def _deployments(
    prefix: str,
    count: int,
    shapes: Sequence[tuple[str, str, str, int]],
    spread_apps: frozenset[str] = frozenset(),
) -> list[Pod]:
    """`count` pods split over deployments (app, cpu, memory, weight) in proportion to weight.

    Apps in `spread_apps` carry a zone spread constraint (maxSkew 1, DoNotSchedule) selecting
    their own pods. Rounding leftovers go to the first deployments, so the total is exact.
    """
    total_weight = sum(w for *_, w in shapes)
    replicas = [count * w // total_weight for *_, w in shapes]
    for i in range(count - sum(replicas)):
        replicas[i % len(replicas)] += 1
    pods: list[Pod] = []
    for (app, cpu, memory, _), n in zip(shapes, replicas, strict=True):
        labels = {"app": app}
        spread = (_spread(labels, wk.ZONE),) if app in spread_apps else ()
        for i in range(n):
            pods.append(_pod(f"{prefix}-{app}-{i}", cpu, memory, labels, spread=spread, owner=app))
    return pods


def uniform(count: int) -> list[Pod]:
    """`count` pods of 1 cpu / 2Gi in four deployments."""
    shapes = [(f"web-{i}", "1", "2Gi", 1) for i in range(4)]
    return _deployments("uniform", count, shapes)


def batch(count: int) -> list[Pod]:
    """Two large jobs: half 4 cpu / 16Gi workers, half 2 cpu / 4Gi workers."""
    return _deployments("batch", count, [("train", "4", "16Gi", 1), ("etl", "2", "4Gi", 1)])


MICROSERVICES: tuple[tuple[str, str, str, int], ...] = (
    ("frontend", "500m", "512Mi", 12),
    ("checkout", "250m", "256Mi", 6),
    ("cart", "200m", "384Mi", 8),
    ("catalog", "1", "1Gi", 10),
    ("search", "2", "4Gi", 6),
    ("recommend", "750m", "1536Mi", 8),
    ("auth", "100m", "128Mi", 4),
    ("payments", "300m", "512Mi", 4),
    ("shipping", "150m", "256Mi", 3),
    ("email", "100m", "192Mi", 2),
    ("ads", "1500m", "3Gi", 5),
    ("cache", "500m", "6Gi", 4),
)
# A third of the services spread across zones, as stateless services often do for resilience.
SPREAD_SERVICES = frozenset({"frontend", "catalog", "search", "cache"})


def microservice(count: int) -> list[Pod]:
    """A dozen services with assorted small requests; four spread over zones (maxSkew 1)."""
    return _deployments("micro", count, MICROSERVICES, SPREAD_SERVICES)


def mixed_shape(count: int) -> list[Pod]:
    """Half cpu-heavy (4 cpu / 1Gi) and half memory-heavy (0.5 cpu / 8Gi) pods."""
    return _deployments("mixed", count, [("encode", "4", "1Gi", 1), ("index", "500m", "8Gi", 1)])


WORKLOADS: Mapping[str, Callable[[int], list[Pod]]] = {
    "diverse": diverse,
    "uniform": uniform,
    "batch": batch,
    "microservice": microservice,
    "mixed-shape": mixed_shape,
}
