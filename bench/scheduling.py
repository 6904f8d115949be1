"""The scheduling benchmark: Nodewright's `solve()` against Karpenter's algorithm and an LP bound.

Role: for each workload and size, build one `SchedulingInput` (one NodePool "default" allowing spot
and on-demand, the benchmark's instance types), then time `nodewright.engine.scheduling.solve`
and the Karpenter reference (`nodewright.reference.karpenter.scheduler.schedule`) on it, validate both plans
(`bench.reference.validate`), compute the LP lower bound (`bench.reference.lower_bound`) and print one table.

Instance types: the bundled us-east-1 catalog (`nodewright.adapters.offline_catalog`), restricted
the way Karpenter's getting-started NodePool is (categories c, m and r, generation > 2), current
generation only, no GPUs or accelerators, no bare metal: 831 types. Karpenter's benchmark uses 400
types, so by default 400 are taken evenly spaced over that list sorted by price (rank
round(i * (n - 1) / 399)), which keeps the whole range of sizes (large to 96xlarge) instead of
only the cheapest small ones; `--all-types` uses all 831. Without the category filter the catalog
holds u7i/x8g-style memory giants whose price is far from linear, and any "one claim keeps
growing" algorithm then lands on them (a 32 TB node for 500 small pods).

Prices: the catalog's per-family on-demand estimates, or `--prices CSV` (instance_type,usd_per_hour).
Spot offerings are priced by the catalog at a flat 0.35 x on-demand, so with spot allowed every
claim is priced at spot and every ratio below (cost vs bound, cost vs Karpenter) is exactly what
it would be at on-demand prices; `--on-demand` restricts the pool to on-demand if absolute
on-demand $/h are wanted.

Timing: wall-clock of one call on an already-built input, best of 3 (Nodewright always; the
Karpenter reference best of 3 up to 5,000 pods and a single run above, since it takes seconds),
and Nodewright's CPU seconds (the process's, best of the same runs: what a loaded machine does not
inflate as much). Nodewright's runs share one `SolverCache`, as a provisioner's warm container
does: the first run prepares the catalog, the best of 3 is a warm solve; `--repeats 1` times the
cold solve alone.

Large plans against small ones: the LP bound is loose for zone rules, so a ratio to it says more
compared across sizes of one workload than on its own. For every case of at least LARGE_PODS pods,
the "vs 1k-5k" column gives its ratio against the mean ratio of the same workload's cases of
1,000-5,000 pods in the same run (the full run has diverse at 1,000 and 5,000), and "yes" when it is
at most SIZE_TOLERANCE (1%) above it.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from bench.harness.instance_types import benchmark_types, default_pool, machine, pool_prices, scheduling_input
from bench.harness.workloads import WORKLOADS
from bench.reference import validate
from bench.reference.lower_bound import aggregate_bound, lower_bound
from nodewright.engine.scheduling import SchedulingInput, SchedulingResult, SolverCache, solve
from nodewright.model.instancetype import InstanceType
from nodewright.model.nodepool import NodePool
from nodewright.reference.karpenter.scheduler import schedule as karpenter_schedule

FULL_CASES: tuple[tuple[str, int], ...] = (
    ("diverse", 100),
    ("diverse", 1_000),
    ("diverse", 5_000),
    ("diverse", 10_000),
    ("diverse", 20_000),
    ("uniform", 2_000),
    ("batch", 1_000),
    ("microservice", 3_000),
    ("mixed-shape", 2_000),
)
QUICK_CASES: tuple[tuple[str, int], ...] = (
    ("diverse", 100),
    ("diverse", 1_000),
    ("uniform", 500),
    ("batch", 200),
    ("microservice", 500),
    ("mixed-shape", 400),
)
# Above this many pods the Karpenter reference runs once: it takes seconds per run in Python.
KARPENTER_REPEAT_LIMIT = 5_000
REPEATS = 3
# Cases of at least LARGE_PODS pods are compared with the same workload's cases of SMALL_PODS.
LARGE_PODS = 10_000
SMALL_PODS = (1_000, 5_000)
SIZE_TOLERANCE = 0.01


@dataclass(frozen=True, slots=True)
class Row:
    """One measured case (what the table prints and `--json` writes)."""

    workload: str
    pods: int
    seconds: float
    cpu_seconds: float
    pods_per_second: float
    nodes: int
    cost: float
    unschedulable: int
    bound: float
    aggregate_bound: float
    ratio: float
    karpenter_seconds: float
    karpenter_runs: int
    karpenter_nodes: int
    karpenter_cost: float
    karpenter_unschedulable: int
    cost_vs_karpenter: float


@dataclass(frozen=True, slots=True)
class SizeDrift:
    """A large case's ratio to the LP bound against the same workload's at 1,000-5,000 pods."""

    workload: str
    pods: int
    ratio: float
    small_ratio: float  # the mean over the small cases
    small_pods: tuple[int, ...]
    drift: float  # ratio / small_ratio - 1
    within: bool  # drift <= SIZE_TOLERANCE


def size_drift(rows: Sequence[Row]) -> dict[tuple[str, int], SizeDrift]:
    """For each case of at least LARGE_PODS pods whose workload has cases of SMALL_PODS pods in
    `rows`: how its ratio to the bound compares with theirs (see the module docstring).
    """
    out: dict[tuple[str, int], SizeDrift] = {}
    low, high = SMALL_PODS
    for r in rows:
        if r.pods < LARGE_PODS or r.ratio != r.ratio:  # NaN: no bound
            continue
        small = [s for s in rows if s.workload == r.workload and low <= s.pods <= high and s.ratio == s.ratio]
        if not small:
            continue
        reference = sum(s.ratio for s in small) / len(small)
        drift = r.ratio / reference - 1
        out[(r.workload, r.pods)] = SizeDrift(
            r.workload, r.pods, r.ratio, reference, tuple(s.pods for s in small), drift, drift <= SIZE_TOLERANCE
        )
    return out


def timed(
    run: Callable[[SchedulingInput], SchedulingResult], inp: SchedulingInput, repeats: int
) -> tuple[float, float, SchedulingResult]:
    """Best wall-clock seconds and best CPU seconds of `repeats` runs, and the last result."""
    best = cpu = float("inf")
    result = SchedulingResult()
    for _ in range(repeats):
        gc.collect()
        start, start_cpu = time.perf_counter(), time.process_time()
        result = run(inp)
        best = min(best, time.perf_counter() - start)
        cpu = min(cpu, time.process_time() - start_cpu)
    return best, cpu, result


def measure(
    workload: str,
    count: int,
    types: Sequence[InstanceType],
    pool: NodePool,
    *,
    repeats: int = REPEATS,
    karpenter: bool = True,
) -> Row:
    """Run one case: both schedulers, validation of both plans, and the LP bound."""
    pods = WORKLOADS[workload](count)
    inp = scheduling_input(pods, types, pool)
    cache = SolverCache()
    seconds, cpu_seconds, result = timed(lambda i: solve(i, cache=cache), inp, repeats)
    validate.check(result, pods, label=f"nodewright {workload} {count}")
    k_runs = 0
    k_seconds, k_result = float("nan"), SchedulingResult()
    if karpenter:
        k_runs = repeats if count <= KARPENTER_REPEAT_LIMIT else 1
        k_seconds, _, k_result = timed(karpenter_schedule, inp, k_runs)
        validate.check(k_result, pods, label=f"karpenter {workload} {count}")
    prices = pool_prices(types, pool)
    bound = lower_bound(pods, types, prices).cost
    aggregate = aggregate_bound(pods, types, prices).cost
    cost = result.price_per_hour
    k_cost = k_result.price_per_hour
    return Row(
        workload=workload,
        pods=count,
        seconds=seconds,
        cpu_seconds=cpu_seconds,
        pods_per_second=count / seconds if seconds else float("inf"),
        nodes=len(result.claims),
        cost=cost,
        unschedulable=len(result.unschedulable),
        bound=bound,
        aggregate_bound=aggregate,
        ratio=cost / bound if bound else float("nan"),
        karpenter_seconds=k_seconds,
        karpenter_runs=k_runs,
        karpenter_nodes=len(k_result.claims),
        karpenter_cost=k_cost,
        karpenter_unschedulable=len(k_result.unschedulable),
        cost_vs_karpenter=cost / k_cost - 1 if karpenter and k_cost else float("nan"),
    )


def table(rows: Sequence[Row], title: str) -> Table:
    """The results as a rich table."""
    t = Table(title=title, title_justify="left")
    drift = size_drift(rows)
    for name in (
        "workload",
        "pods",
        "solve s",
        "CPU s",
        "pods/s",
        "nodes",
        "$/h",
        "LP bound",
        "ratio",
        "vs 1k-5k",
        "unsched",
        "Karpenter s",
        "K nodes",
        "K $/h",
        "K unsched",
        "cost vs Karpenter",
    ):
        t.add_column(name, justify="left" if name == "workload" else "right")
    for r in rows:
        runs = " (1 run)" if r.karpenter_runs == 1 and r.pods > KARPENTER_REPEAT_LIMIT else ""
        d = drift.get((r.workload, r.pods))
        t.add_row(
            r.workload,
            f"{r.pods:,}",
            f"{r.seconds:.3f}",
            f"{r.cpu_seconds:.3f}",
            f"{r.pods_per_second:,.0f}",
            f"{r.nodes:,}",
            f"{r.cost:,.2f}",
            f"{r.bound:,.2f}",
            f"{r.ratio:.3f}",
            "-" if d is None else f"{d.drift:+.1%} ({'yes' if d.within else 'no'})",
            f"{r.unschedulable:,}",
            "-" if r.karpenter_runs == 0 else f"{r.karpenter_seconds:.2f}{runs}",
            "-" if r.karpenter_runs == 0 else f"{r.karpenter_nodes:,}",
            "-" if r.karpenter_runs == 0 else f"{r.karpenter_cost:,.2f}",
            "-" if r.karpenter_runs == 0 else f"{r.karpenter_unschedulable:,}",
            "-" if r.karpenter_runs == 0 else f"{r.cost_vs_karpenter:+.1%}",
        )
    return t


def parser() -> argparse.ArgumentParser:
    """Options of `python -m bench scheduling`."""
    p = argparse.ArgumentParser(prog="python -m bench scheduling", description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="small sizes only (about 10 s)")
    p.add_argument("--json", metavar="FILE", help="also write the results as JSON to FILE")
    p.add_argument("--prices", metavar="CSV", help="on-demand prices (instance_type,usd_per_hour) instead of estimates")
    p.add_argument("--all-types", action="store_true", help="all 831 eligible types instead of 400")
    p.add_argument("--on-demand", action="store_true", help="restrict the NodePool to on-demand")
    p.add_argument("--no-karpenter", action="store_true", help="skip the Karpenter reference")
    p.add_argument("--repeats", type=int, default=REPEATS, metavar="N", help=f"best of N runs (default {REPEATS})")
    p.add_argument(
        "--case",
        action="append",
        metavar="WORKLOAD:PODS",
        help="run only these cases (repeatable), e.g. --case diverse:10000",
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the scheduling benchmark; print the table; return 0 (or 1 when a plan is invalid)."""
    args = parser().parse_args(argv)
    console = Console(width=200)
    info = machine()
    types = benchmark_types(args.prices, all_types=args.all_types)
    pool = default_pool(on_demand_only=args.on_demand)
    cases = QUICK_CASES if args.quick else FULL_CASES
    if args.case:
        cases = tuple((w, int(n)) for w, _, n in (c.partition(":") for c in args.case))
    console.print(
        f"machine: {info['cpu']}, {info['cores']} cores, Python {info['python']} ({info['platform']})\n"
        f"catalog: {len(types)} instance types (us-east-1, {'--prices' if args.prices else 'estimated'} prices), "
        f"NodePool default: {'on-demand' if args.on_demand else 'spot + on-demand'}; "
        f"timings best of {args.repeats} (Karpenter reference: 1 run above {KARPENTER_REPEAT_LIMIT:,} pods)"
    )
    rows: list[Row] = []
    try:
        for workload, count in cases:
            row = measure(workload, count, types, pool, repeats=args.repeats, karpenter=not args.no_karpenter)
            rows.append(row)
            console.print(
                f"  {workload} {count:,}: {row.seconds:.3f} s ({row.cpu_seconds:.3f} CPU s), "
                f"{row.nodes} nodes, ${row.cost:.2f}/h "
                f"(bound {row.bound:.2f}); Karpenter {row.karpenter_seconds:.2f} s, ${row.karpenter_cost:.2f}/h",
                highlight=False,
            )
    except validate.InvalidPlan as error:
        console.print(f"[red]invalid plan[/red]: {error}")
        return 1
    console.print(table(rows, "Scheduling: Nodewright solve() vs Karpenter's pod-by-pod algorithm"))
    if args.json:
        document = {
            "machine": info,
            "instance_types": len(types),
            "prices": args.prices or "estimated",
            "capacity_types": ["on-demand"] if args.on_demand else ["spot", "on-demand"],
            "repeats": args.repeats,
            "rows": [asdict(r) for r in rows],
            "size_drift": [asdict(d) for d in size_drift(rows).values()],
        }
        Path(args.json).write_text(json.dumps(document, indent=2) + "\n")
        console.print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
