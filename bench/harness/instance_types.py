"""The benchmarks' instance types and NodePool: the scheduling benchmark's fixed inputs, shared.

Role: every benchmark that plans on "the benchmark's 400 types" (`bench.scheduling`,
`bench.pathological`, `bench.consolidation`, `bench.provisioner_latency`) takes them from here, so
that they all measure the same catalog. The choice of types is explained in `bench/scheduling.py`'s
docstring (Karpenter's getting-started categories c, m and r, generation > 2, current generation,
no GPUs, accelerators or bare metal; 400 spaced evenly over the price-sorted list).
"""

from __future__ import annotations

import os
import platform
from collections.abc import Sequence
from pathlib import Path

from nodewright.adapters.offline_catalog import load_catalog, load_snapshot, read_prices_csv
from nodewright.engine.scheduling import PoolCapacity, SchedulingInput
from nodewright.engine.scheduling.inputs import provisioning_input
from nodewright.model import labels as wk
from nodewright.model.instancetype import InstanceType
from nodewright.model.nodepool import NodePool
from nodewright.model.pod import Pod
from nodewright.model.requirements import Requirement, Requirements
from nodewright.model.snapshot import ClusterSnapshot

KARPENTER_TYPE_COUNT = 400
CATEGORIES = ("c", "m", "r")


def benchmark_types(
    prices_csv: str | None = None, *, all_types: bool = False, count: int = KARPENTER_TYPE_COUNT
) -> list[InstanceType]:
    """The benchmark's instance types (see module doc), sorted by price then name."""
    prices = read_prices_csv(prices_csv) if prices_csv else None
    specs = {s.name: s for s in load_snapshot().specs}
    eligible = []
    for it in load_catalog(prices=prices):
        spec = specs[it.name]
        if not spec.current_generation or spec.gpu_count or spec.accelerator_count or spec.bare_metal:
            continue
        generation = it.label(wk.INSTANCE_GENERATION) or "0"
        if it.label(wk.INSTANCE_CATEGORY) in CATEGORIES and generation.isdigit() and int(generation) > 2:
            eligible.append(it)
    eligible.sort(key=lambda it: (_price(it), it.name))
    if all_types or len(eligible) <= count:
        return eligible
    last = len(eligible) - 1
    return [eligible[round(i * last / (count - 1))] for i in range(count)]


def _price(it: InstanceType) -> float:
    offer = it.cheapest_offering()
    return offer.price if offer is not None else float("inf")


def default_pool(*, on_demand_only: bool = False) -> NodePool:
    """NodePool "default": any instance type, spot and on-demand (or on-demand only)."""
    capacity = ["on-demand"] if on_demand_only else ["spot", "on-demand"]
    return NodePool("default", requirements=Requirements([Requirement.new(wk.CAPACITY_TYPE, "In", capacity)]))


def scheduling_input(pods: Sequence[Pod], types: Sequence[InstanceType], pool: NodePool) -> SchedulingInput:
    """One pass's input: the pods, one pool, no existing nodes."""
    return provisioning_input(ClusterSnapshot(), pending=pods, pools=(PoolCapacity(pool, tuple(types)),))


def pool_prices(types: Sequence[InstanceType], pool: NodePool) -> dict[str, float]:
    """Each type's cheapest offering the pool's capacity-type requirement allows ($/h)."""
    ct = pool.requirements.get(wk.CAPACITY_TYPE)
    out: dict[str, float] = {}
    for it in types:
        offers = [o.price for o in it.offerings if o.available and (ct is None or ct.has(o.capacity_type))]
        if offers:
            out[it.name] = min(offers)
    return out


def machine() -> dict[str, str]:
    """CPU model, cores and Python version of this machine."""
    model = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": model,
        "cores": str(os.cpu_count() or 0),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
