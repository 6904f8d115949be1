"""The consolidation benchmark: one disruption pass over a 1,000-node cluster, timed and measured.

Role: check the issue's bound ("a consolidation pass over a 1,000-node cluster takes <= 20 s and
<= 512 MB") on a cluster built the same way every run:

* instance types: the scheduling benchmark's 400 (bundled us-east-1 catalog, categories c/m/r,
  generation > 2, no GPUs or metal; `bench.harness.instance_types.benchmark_types`);
* three NodePools: `general` (spot and on-demand), `on-demand` (on-demand only) and `memory`
  (category r); every pod selects its NodePool with a `karpenter.sh/nodepool` node selector;
* 1,000 nodes (a third per NodePool), each of an instance type with 4 to 16 vCPUs drawn from its
  NodePool's types, spot on half of `general`'s, in one of three zones, launched 2 to 30 hours ago;
* about ten pods per node from the microservice shapes (`bench.harness.workloads.MICROSERVICES`), filled to
  a utilization drawn between 20% and 95% of the node's cpu, so some nodes are nearly empty and
  some full; the services spread over zones keep their spread constraints; one PDB per service
  (maxUnavailable 10%); one small DaemonSet with a pod on every node;
* default budgets (10% of each NodePool's nodes), consolidateAfter 0, many-to-many on.

It prints the wall seconds of `compute_commands` (best of `--repeats`), the process's peak RSS
(`resource.getrusage`, which includes the catalog and the cluster itself), the peak of Python
allocations during the pass (`tracemalloc`, one extra run), the command and the solver calls.

    .venv/bin/python -m bench.consolidation [--nodes 1000] [--repeats 1] [--no-many-to-many]
"""

from __future__ import annotations

import argparse
import gc
import random
import resource
import sys
import time
import tracemalloc
from collections.abc import Sequence

from bench.harness.instance_types import benchmark_types
from bench.harness.workloads import MICROSERVICES, SPREAD_SERVICES
from nodewright.engine.disruption import (
    DisruptionCache,
    DisruptionInput,
    DisruptionOptions,
    DisruptionResult,
    compute_commands,
)
from nodewright.engine.scheduling import PoolCapacity
from nodewright.model import labels as wk
from nodewright.model.instancetype import InstanceType
from nodewright.model.node import Node
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.nodepool import NodePool, template_hash
from nodewright.model.pod import Pod, SpreadConstraint
from nodewright.model.requirements import Requirement, Requirements
from nodewright.model.resources import CPU, Resources
from nodewright.model.selectors import LabelSelector
from nodewright.model.snapshot import ClusterSnapshot
from nodewright.model.workloads import DaemonSet, PodDisruptionBudget

NOW = 1_750_000_000.0
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
HOUR = 3600.0
PODS_PER_NODE_MAX = 20


def pools() -> tuple[NodePool, ...]:
    """The three NodePools (see the module docstring)."""
    return (
        NodePool(
            "general",
            requirements=Requirements([Requirement.new(wk.CAPACITY_TYPE, "In", ["spot", "on-demand"])]),
        ),
        NodePool(
            "on-demand",
            requirements=Requirements([Requirement.new(wk.CAPACITY_TYPE, "In", ["on-demand"])]),
        ),
        NodePool(
            "memory",
            requirements=Requirements(
                [
                    Requirement.new(wk.CAPACITY_TYPE, "In", ["spot", "on-demand"]),
                    Requirement.new(wk.INSTANCE_CATEGORY, "In", ["r"]),
                ]
            ),
        ),
    )


def _offering_price(it: InstanceType, capacity_type: str, zone: str) -> float | None:
    prices = [o.price for o in it.offerings if o.capacity_type == capacity_type and o.zone == zone]
    return min(prices) if prices else None


def cluster(
    node_count: int,
    types: Sequence[InstanceType],
    *,
    utilization: tuple[float, float] = (0.2, 0.95),
    seed: int = 7,
) -> tuple[ClusterSnapshot, tuple[NodeClaim, ...], tuple[PoolCapacity, ...]]:
    """The benchmark cluster: nodes, pods, claims and NodePools (see the module docstring)."""
    rng = random.Random(seed)
    nodepools = pools()
    capacities = tuple(PoolCapacity(p, tuple(types)) for p in nodepools)
    daemon = DaemonSet(
        "kube-system",
        "node-agent",
        Pod("kube-system", "node-agent-template", requests=Resources.of(cpu="100m", memory="128Mi", pods=1)),
    )
    nodes: list[Node] = []
    claims: list[NodeClaim] = []
    pods: list[Pod] = []
    mid_sized = [t for t in types if 4000 <= t.capacity[CPU] <= 16000]
    for i in range(node_count):
        nodepool = nodepools[i % len(nodepools)]
        allowed = [t for t in mid_sized if t.requirements.intersects(nodepool.requirements)]
        capacity_type = "spot" if nodepool.name != "on-demand" and rng.random() < 0.5 else "on-demand"
        zone = rng.choice(ZONES)
        it = rng.choice(allowed)
        price = _offering_price(it, capacity_type, zone)
        if price is None:
            capacity_type, price = "on-demand", _offering_price(it, "on-demand", zone) or 0.0
        name = f"node-{i:04d}"
        born = NOW - rng.uniform(2, 30) * HOUR
        labels = {
            **it.requirements.labels(),
            wk.HOSTNAME: name,
            wk.ZONE: zone,
            wk.CAPACITY_TYPE: capacity_type,
            wk.NODEPOOL: nodepool.name,
            wk.NW_NODEPOOL: nodepool.name,
            wk.NW_NODECLAIM: f"{name}-claim",
        }
        nodes.append(
            Node(
                name,
                labels=labels,
                capacity=it.capacity,
                allocatable=it.allocatable,
                ready=True,
                created_at=born,
            )
        )
        claims.append(
            NodeClaim(
                name=f"{name}-claim",
                nodepool=nodepool.name,
                state="initialized",
                instance_type=it.name,
                capacity_type=capacity_type,
                zone=zone,
                price=price,
                node_name=name,
                created_at=born,
                launched_at=born + 5,
                initialized_at=born + 60,
                template_hash=template_hash(nodepool),
            )
        )
        pods.append(
            Pod(
                "kube-system",
                f"node-agent-{i:04d}",
                requests=daemon.template.requests,
                owner_kind="DaemonSet",
                owner_name="node-agent",
                node_name=name,
                phase="Running",
                created_at=born + 30,
            )
        )
        target = it.allocatable[CPU] * rng.uniform(*utilization) - 100
        used = 0
        for j in range(PODS_PER_NODE_MAX):
            app, cpu, memory, _ = rng.choice(MICROSERVICES)
            requests = Resources.of(cpu=cpu, memory=memory, pods=1)
            if used + requests[CPU] > target and j > 0:
                break
            used += requests[CPU]
            labels = {"app": app}
            spread: tuple[SpreadConstraint, ...] = ()
            if app in SPREAD_SERVICES:
                spread = (SpreadConstraint(1, wk.ZONE, "ScheduleAnyway", LabelSelector((("app", app),))),)
            pods.append(
                Pod(
                    "default",
                    f"{name}-{app}-{j}",
                    labels=labels,
                    requests=requests,
                    node_selector={wk.NODEPOOL: nodepool.name},
                    spread=spread,
                    owner_kind="ReplicaSet",
                    owner_name=app,
                    node_name=name,
                    phase="Running",
                    created_at=born + rng.uniform(60, 2 * HOUR),
                )
            )
    pdbs = tuple(
        PodDisruptionBudget("default", app, LabelSelector((("app", app),)), max_unavailable="10%")
        for app, *_ in MICROSERVICES
    )
    snapshot = ClusterSnapshot(nodes=tuple(nodes), pods=tuple(pods), daemonsets=(daemon,), pdbs=pdbs)
    return snapshot, tuple(claims), capacities


def _peak_rss_mb() -> float:
    # ru_maxrss is in kilobytes on Linux (bytes on macOS).
    scale = 1 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 2**20


def parser() -> argparse.ArgumentParser:
    """The command line."""
    p = argparse.ArgumentParser(prog="python -m bench.consolidation", description=__doc__.split("\n\n")[0])
    p.add_argument("--nodes", type=int, default=1000, help="cluster size (default 1000)")
    p.add_argument("--repeats", type=int, default=1, help="timed passes; the best is reported (default 1)")
    p.add_argument(
        "--utilization",
        default="0.2,0.95",
        help="range the nodes' cpu utilization is drawn from (default 0.2,0.95; 0.9,0.95 = nothing to consolidate)",
    )
    p.add_argument(
        "--min-savings",
        type=float,
        default=0.0,
        help="stability guard in $/h; a huge value makes every search run to the end (the worst case)",
    )
    p.add_argument("--no-many-to-many", action="store_true", help="Karpenter-style consolidation only")
    p.add_argument("--no-tracemalloc", action="store_true", help="skip the extra pass measured by tracemalloc")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Build the cluster, run the pass, print the figures; 1 when a bound is exceeded."""
    args = parser().parse_args(argv)
    types = benchmark_types()
    low, _, high = args.utilization.partition(",")
    snapshot, claims, capacities = cluster(args.nodes, types, utilization=(float(low), float(high or low)))
    options = DisruptionOptions(many_to_many=not args.no_many_to_many, min_savings=args.min_savings)
    inp = DisruptionInput(snapshot=snapshot, claims=claims, pools=capacities, now=NOW, options=options)
    print(
        f"cluster: {len(snapshot.nodes)} nodes, {len(snapshot.pods)} pods "
        f"({sum(1 for p in snapshot.pods if p.owner_kind != 'DaemonSet')} movable), "
        f"{len(capacities)} NodePools, {len(types)} instance types, "
        f"${sum(c.price for c in claims):.2f}/h; many-to-many {'on' if options.many_to_many else 'off'}"
    )
    rss_before = _peak_rss_mb()
    best = float("inf")
    result: DisruptionResult | None = None
    cache = DisruptionCache()  # as the consolidator keeps one: repeats after the first run warm
    for _ in range(max(1, args.repeats)):
        gc.collect()
        started = time.perf_counter()
        result = compute_commands(inp, cache)
        best = min(best, time.perf_counter() - started)
    assert result is not None
    rss = _peak_rss_mb()
    traced = 0.0
    if not args.no_tracemalloc:
        gc.collect()
        tracemalloc.start()
        compute_commands(inp)
        traced = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    print(f"pass: {best:.2f} s wall (best of {max(1, args.repeats)}), eligible {result.eligible}")
    print(
        f"memory: peak RSS {rss:.0f} MB (process; {rss_before:.0f} MB before the pass)"
        + (f", peak Python allocations during a pass {traced:.0f} MB (tracemalloc)" if traced else "")
    )
    for command in result.commands:
        print(
            f"command: {command.method}/{command.reason}, {len(command.candidates)} candidate(s) -> "
            f"{len(command.replacements)} replacement(s), saves ${command.savings:.4f}/h"
        )
        print(f"  {command.detail}")
    if not result.commands:
        print("command: none")
    ok = best <= 20.0 and rss <= 512.0
    print(f"bounds (<= 20 s, <= 512 MB): {'met' if ok else 'EXCEEDED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
