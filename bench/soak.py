"""Soak: a warm provisioner container's memory under configuration and pod churn.

Role: a Lambda container lives for hours and keeps what its controllers cache. Two caches grew
with what the container had ever seen: `LiveCatalog` kept ~15 MB of instance types per distinct
kubelet configuration (40 configurations: 591 MB of a 1,024 MB function), and the solver cache
kept up to 100,000 pod versions. This benchmark drives both as a provisioner does and reports
the peak RSS of the process, against a bound that fits the default function memory
(`infra/config.py`: 1,024 MB for the provisioner):

1. *Configurations*: the real `LiveCatalog` (specs from the bundled us-east-1 snapshot instead of
   EC2, prices from a fixed `PriceCache`) asked for the types of `--configurations` EC2NodeClasses,
   each with its own kubelet `maxPods`, one after the other.
2. *Pod churn*: `--rounds` passes over `--pods` bound pods on nodes of 29 pods each, every pass
   with new pod objects (as a watch hands out a new version of each pod that changed), plus a
   pending Deployment; the pass solves with one `SolverCache` kept across passes and aged once
   per pass, as `Provisioner.provision` does.

Run: `python -m bench.soak` (defaults: 1,000 configurations, 100 rounds, 10,000 pods; about
2 minutes on 2 cores), or smaller with the flags. tests/bench/test_soak.py runs a small version.
"""

from __future__ import annotations

import argparse
import logging
import resource
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nodewright.adapters.aws.catalog import LiveCatalog
from nodewright.adapters.aws.instance_types import OfferedSpec
from nodewright.adapters.aws.pricing import PriceCache, Prices
from nodewright.adapters.offline_catalog import DEFAULT_ZONES, load_snapshot
from nodewright.engine.scheduling import PoolCapacity, SolverCache, solve
from nodewright.engine.scheduling.inputs import provisioning_input
from nodewright.inmemory.clock import VirtualClock
from nodewright.model import labels as wk
from nodewright.model.node import Node
from nodewright.model.nodeclass import EC2NodeClass, KubeletConfiguration
from nodewright.model.nodepool import NodePool
from nodewright.model.pod import Pod
from nodewright.model.requirements import Requirement, Requirements
from nodewright.model.resources import Resources
from nodewright.model.snapshot import ClusterSnapshot

# The provisioner's default function memory (infra/config.py), and the bound the soak holds to:
# room left for the runtime, boto3 and a pass's own work.
FUNCTION_MB = 1024
BOUND_MB = 768
PODS_PER_NODE = 29


class _NoSpotPrices:
    """An EC2 client whose spot price history cannot be read: the cache keeps its fixed prices."""

    def __getattr__(self, name: str) -> Any:
        raise ConnectionError("no EC2 in the soak")


def peak_rss_mb() -> float:
    """The process's peak resident set so far, in MB: Linux's VmHWM, which belongs to this
    program's memory; getrusage's ru_maxrss (the fallback elsewhere) keeps the peak of the process
    that forked it across the exec, so a soak started from a large process would report that one.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def live_catalog(clock: VirtualClock, max_configurations: int = 16) -> LiveCatalog:
    """The real LiveCatalog over the bundled snapshot's specs, with fixed on-demand prices."""
    snapshot = load_snapshot()
    zones = tuple(DEFAULT_ZONES)
    offered = [OfferedSpec(spec, tuple(z for z in zones if z in snapshot.zones[spec.name])) for spec in snapshot.specs]
    offered = [o for o in offered if o.zones]
    prices = PriceCache(
        "us-east-1",
        pricing=None,
        ec2=_NoSpotPrices(),
        clock=clock,
        initial=Prices(on_demand={o.spec.name: 0.05 * max(o.spec.vcpus, 1) for o in offered}),
    )
    return LiveCatalog(None, prices, clock, zones=zones, fetch=lambda _: offered, max_configurations=max_configurations)


def configurations(count: int, keep: int = 16) -> float:
    """Ask one LiveCatalog (keeping `keep`) for `count` distinct kubelet configurations; return
    the peak RSS (MB).
    """
    clock = VirtualClock(1_800_000_000)
    catalog = live_catalog(clock, keep)
    for i in range(count):
        catalog.instance_types(EC2NodeClass(f"class-{i}", kubelet=KubeletConfiguration(max_pods=10 + i)))
    return peak_rss_mb()


def _pool() -> NodePool:
    return NodePool("default", requirements=Requirements([Requirement.new(wk.CAPACITY_TYPE, "In", ["on-demand"])]))


def _nodes(count: int) -> tuple[Node, ...]:
    allocatable = Resources.of(cpu="16", memory="64Gi", pods=PODS_PER_NODE + 1)
    return tuple(
        Node(
            name=f"node-{i}",
            labels={wk.HOSTNAME: f"node-{i}", wk.ZONE: DEFAULT_ZONES[i % len(DEFAULT_ZONES)]},
            capacity=allocatable,
            allocatable=allocatable,
            ready=True,
        )
        for i in range(count)
    )


def _bound(count: int, round_: int) -> tuple[Pod, ...]:
    """`count` bound pods, new objects every round (their resourceVersion moved on)."""
    requests = Resources.of(cpu="100m", memory="256Mi", pods=1)
    return tuple(
        Pod(
            namespace=f"team-{i % 20}",
            name=f"app-{i}",
            uid=f"uid-{i}-{round_}",
            labels={"app": f"app-{i % 200}"},
            requests=requests,
            node_name=f"node-{i // PODS_PER_NODE}",
            phase="Running",
        )
        for i in range(count)
    )


def pod_churn(rounds: int, pods: int) -> tuple[float, float, int]:
    """`rounds` passes over `pods` churning bound pods; (peak RSS MB, slowest pass s, memo size)."""
    types = tuple(
        t for t in live_catalog(VirtualClock(1_800_000_000)).instance_types(None) if t.name.startswith(("m5.", "c5."))
    )
    pool = PoolCapacity(_pool(), types)
    nodes = _nodes(-(-pods // PODS_PER_NODE))
    pending = tuple(
        Pod(namespace="web", name=f"web-{i}", labels={"app": "web"}, requests=Resources.of(cpu="250m", pods=1))
        for i in range(50)
    )
    cache = SolverCache()
    slowest = 0.0
    for round_ in range(rounds):
        # The provisioner's question: the pending pods, on nodes whose pods are new objects each round.
        snapshot = ClusterSnapshot(nodes=nodes, pods=(*pending, *_bound(pods, round_)))
        inp = provisioning_input(snapshot, pending=pending, pools=(pool,))
        started = time.perf_counter()
        cache.age()
        solve(inp, cache=cache)
        slowest = max(slowest, time.perf_counter() - started)
    return peak_rss_mb(), slowest, len(cache.pod_facts)


@dataclass(frozen=True, slots=True)
class Figures:
    """What one soak measured."""

    configurations: int
    catalog_peak_mb: float
    rounds: int
    pods: int
    churn_peak_mb: float
    slowest_pass_s: float
    remembered_pods: int

    @property
    def holds(self) -> bool:
        """True when the peak RSS stayed within BOUND_MB."""
        return max(self.catalog_peak_mb, self.churn_peak_mb) <= BOUND_MB


def soak(configurations_: int, rounds: int, pods: int, keep: int = 16) -> Figures:
    """Both parts of the soak, in this process (the peak of the second includes the first)."""
    # The fixed prices' spot refresh fails by design; its warning would repeat for every class.
    logging.getLogger("nodewright.adapters.aws.pricing").setLevel(logging.ERROR)
    catalog_peak = configurations(configurations_, keep)
    churn_peak, slowest, remembered = pod_churn(rounds, pods)
    return Figures(configurations_, catalog_peak, rounds, pods, churn_peak, slowest, remembered)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the soak and print its figures; exit 1 when the bound does not hold."""
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--configurations", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--pods", type=int, default=10_000)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    figures = soak(args.configurations, args.rounds, args.pods)
    print(f"{figures.configurations} kubelet configurations: peak RSS {figures.catalog_peak_mb:.0f} MB")
    print(
        f"{figures.rounds} rounds of churn over {figures.pods} bound pods: peak RSS {figures.churn_peak_mb:.0f} MB, "
        f"slowest pass {figures.slowest_pass_s:.2f} s, {figures.remembered_pods} pod versions remembered"
    )
    verdict = "holds" if figures.holds else "DOES NOT HOLD"
    print(f"bound {BOUND_MB} MB of the {FUNCTION_MB} MB function: {verdict} ({time.perf_counter() - started:.0f} s)")
    return 0 if figures.holds else 1


if __name__ == "__main__":
    sys.exit(main())
