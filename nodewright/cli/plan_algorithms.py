"""`nodewright plan --algorithm` and `--compare`: the same plan by Nodewright, Karpenter, Auto Mode.

Role: "what would Karpenter launch for these pods, and what would it cost me?" One input (the
`SchedulingInput` `plan` builds from the files), planned by:

* `nodewright`: the engine's `solve`, as the provisioner runs it;
* `karpenter`: the Karpenter v1.14 reference scheduler (`nodewright.reference.karpenter`), each
  claim then launched as Karpenter's launch sends it (`launch.py`: reserved > spot > on-demand,
  spot dearer than on-demand dropped, the 60 cheapest types; priced at the cheapest offering of
  that request, what on-demand `lowest-price` pays and a lower bound for spot);
* `automode`: the same with Auto Mode's NodePools (`nodewright.reference.automode.nodepools`)
  and its management fee per node (`fee_per_hour`).

`plan_report` gives `plan`'s JSON shape for one algorithm, plus `algorithm`, `fee_per_hour` and
`autoscaler_per_hour` (what hosting the autoscaler costs: Karpenter's two m5.large on-demand
nodes, as `nodewright.simulator.report.bill` prices them; Nodewright's own cost is a monthly Lambda and
DynamoDB figure the simulator measures (README), not per plan, so 0 here; Auto Mode's is its fee).
`compare_plans` gives the three reports and a side-by-side summary.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from rich.console import Console
from rich.table import Table

from nodewright.engine.scheduling import PoolCapacity, SchedulingInput, SchedulingResult, solve
from nodewright.reference import automode
from nodewright.reference.karpenter.launch import launch
from nodewright.reference.karpenter.scheduler import schedule

ALGORITHMS = ("nodewright", "karpenter", "automode")
HOST_TYPE = "m5.large"  # nodewright.simulator.report.bill: Karpenter's controller nodes
HOST_NODES = 2

ToReport = Callable[..., dict[str, Any]]


def run(algorithm: str, inp: SchedulingInput) -> tuple[SchedulingResult, float]:
    """Plan `inp` with `algorithm`; the result and the seconds it took."""
    started = time.perf_counter()
    if algorithm == "nodewright":
        return solve(inp), time.perf_counter() - started
    if algorithm == "automode":
        pools = automode.nodepools(pc.nodepool for pc in inp.pools)
        inp = replace(
            inp, pools=tuple(PoolCapacity(p, pc.instance_types) for p, pc in zip(pools, inp.pools, strict=True))
        )
    result = schedule(inp)
    claims = []
    for claim in result.claims:
        request = launch(claim, inp.blocked)
        if request is None:
            claims.append(claim)
            continue
        # What the launch sends, cheapest first: the plan is priced with its first type and offering.
        by_name = {t.name: t for t in claim.options}
        options = tuple(by_name[name] for name in request.types)
        claims.append(replace(claim, options=options, offering=request.offering))
    return replace(result, claims=tuple(claims)), time.perf_counter() - started


def plan_report(algorithm: str, inp: SchedulingInput, to_report: ToReport, *, estimated: bool) -> dict[str, Any]:
    """`plan`'s JSON for `algorithm` (see the module docstring)."""
    result, seconds = run(algorithm, inp)
    report = to_report(result, seconds, estimated=estimated)
    fee = 0.0
    if algorithm == "automode":
        fee = sum(
            automode.fee_per_hour(c.instance_type.name, _on_demand(c.instance_type.offerings, c.offering.zone))
            for c in result.claims
        )
    host = 0.0
    if algorithm == "karpenter":
        host = HOST_NODES * _host_price(inp)
    notices = {"notices": report.pop("notices")} if "notices" in report else {}
    return {
        **notices,  # what the input lacked stays the first thing said
        "algorithm": algorithm,
        **report,
        "fee_per_hour": round(fee, 6),
        "autoscaler_per_hour": round(host, 6),
    }


def compare_plans(inp: SchedulingInput, to_report: ToReport, *, estimated: bool) -> dict[str, Any]:
    """The three plans and, per algorithm, nodes, compute, fee, autoscaler and total $/h."""
    reports = {name: plan_report(name, inp, to_report, estimated=estimated) for name in ALGORITHMS}
    summary = {
        name: {
            "nodes": len(r["nodeclaims"]),
            "compute_per_hour": r["total_price_per_hour"],
            "fee_per_hour": r["fee_per_hour"],
            "autoscaler_per_hour": r["autoscaler_per_hour"],
            "total_per_hour": round(r["total_price_per_hour"] + r["fee_per_hour"] + r["autoscaler_per_hour"], 6),
            "unschedulable": len(r["unschedulable"]),
            "seconds": r["solve_seconds"],
        }
        for name, r in reports.items()
    }
    return {"compare": summary, "plans": reports}


def print_compare(result: dict[str, Any]) -> None:
    """The side-by-side table of `compare_plans`."""
    console = Console()
    console = Console(width=max(console.width, 110))
    summary = result["compare"]
    for notice in result["plans"]["nodewright"].get("notices", ()):
        console.print(notice, style="yellow")
    table = Table(title="The same pods, three autoscalers", title_justify="left")
    table.add_column("")
    for name in ALGORITHMS:
        table.add_column(name, justify="right")
    rows: Sequence[tuple[str, str, str]] = (
        ("new nodes", "nodes", "{}"),
        ("compute $/h", "compute_per_hour", "{:.4f}"),
        ("Auto Mode fee $/h", "fee_per_hour", "{:.4f}"),
        ("autoscaler hosting $/h", "autoscaler_per_hour", "{:.4f}"),
        ("total $/h", "total_per_hour", "{:.4f}"),
        ("pods not placed", "unschedulable", "{}"),
        ("planned in s", "seconds", "{:.3f}"),
    )
    for label, key, form in rows:
        table.add_row(label, *(form.format(summary[name][key]) for name in ALGORITHMS))
    console.print(table)
    base = summary["nodewright"]["total_per_hour"]
    for name in ALGORITHMS[1:]:
        other = summary[name]["total_per_hour"]
        if other > 0:
            console.print(f"nodewright / {name}: {base / other:.3f}")
    if result["plans"]["nodewright"]["prices_estimated"]:
        console.print("(estimated prices: pass --prices FILE for real ones)")


@dataclass(frozen=True, slots=True)
class Printer:
    """How `plan` shapes and prints a plan: its JSON (`to_report`), its table, or JSON on stdout."""

    to_report: ToReport
    print_table: Callable[[dict[str, Any]], None]
    json_output: bool


def plan_with(scheduling: SchedulingInput, algorithm: str, printer: Printer, *, compare: bool, estimated: bool) -> None:
    """`plan --algorithm` / `--compare`: plan, then print a table or one JSON document on stdout."""
    if compare:
        both = compare_plans(scheduling, printer.to_report, estimated=estimated)
        if printer.json_output:
            sys.stdout.write(json.dumps(both, indent=2) + "\n")
        else:
            print_compare(both)
        return
    report = plan_report(algorithm, scheduling, printer.to_report, estimated=estimated)
    if printer.json_output:
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
        return
    printer.print_table(report)
    if report["fee_per_hour"]:
        Console().print(f"Auto Mode fee: ${report['fee_per_hour']:.4f}/h on top")
    if report["autoscaler_per_hour"]:
        Console().print(f"Karpenter's controller nodes: ${report['autoscaler_per_hour']:.4f}/h on top")


def _on_demand(offerings: Sequence[Any], zone: str) -> float:
    prices = [o.price for o in offerings if o.capacity_type == "on-demand" and o.zone == zone]
    prices = prices or [o.price for o in offerings if o.capacity_type == "on-demand"]
    return min(prices, default=0.0)


def _host_price(inp: SchedulingInput) -> float:
    for pc in inp.pools:
        for it in pc.instance_types:
            if it.name == HOST_TYPE:
                return _on_demand(it.offerings, "")
    return 0.0
