"""`nodewright plan`: an offline what-if planner over manifests.

Reads workloads, Nodes, DaemonSets, NodePools and EC2NodeClasses from YAML or JSON files or
directories (what `kubectl get ... -o yaml|json` prints is fine), runs the same `solve()` the
provisioner Lambda runs, and prints the node claims it would launch, where existing nodes would
take pods, and why any pod could not be placed. Warnings (unknown or ignored fields) go to
stderr; `--strict` refuses them. Nothing is contacted: instance types come from the bundled
us-east-1 catalog and prices from `--prices` or the documented per-family estimate.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from nodewright.adapters.offline_catalog import (
    DEFAULT_ZONES,
    PricesFileError,
    load_catalog,
    read_prices_csv,
    zones_for_region,
)
from nodewright.cli import app
from nodewright.cli.failures import exit_code
from nodewright.cli.plan_algorithms import ALGORITHMS, Printer, plan_with
from nodewright.config.documents import EC2NODECLASS, NODEOVERLAY, NODEPOOL
from nodewright.config.files import expand
from nodewright.config.workloads import PlanInput, read_workloads
from nodewright.engine.overlay import apply_overlays
from nodewright.engine.scheduling import PoolCapacity, SchedulingInput, SchedulingResult, solve
from nodewright.engine.scheduling.inputs import provisioning_input
from nodewright.model import labels as wk
from nodewright.model.instancetype import InstanceType
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodeoverlay import NodeOverlay
from nodewright.model.nodepool import NodePool
from nodewright.model.requirements import Requirements
from nodewright.model.resources import CPU, MEMORY, PODS
from nodewright.model.snapshot import ClusterSnapshot

# The NodePool `--default-nodepool` plans with when the input has none (docs: README, "plan"):
# Karpenter's getting-started NodePool: Linux, amd64, on-demand, categories c, m and r of
# generation 3 and later (no burstable types, no arm64 a pod did not ask for).
DEFAULT_NODEPOOL = NodePool(
    name="default",
    requirements=Requirements.parse(
        [
            {"key": wk.OS, "operator": "In", "values": ["linux"]},
            {"key": wk.ARCH, "operator": "In", "values": ["amd64"]},
            {"key": wk.CAPACITY_TYPE, "operator": "In", "values": ["on-demand"]},
            {"key": wk.INSTANCE_CATEGORY, "operator": "In", "values": ["c", "m", "r"]},
            {"key": wk.INSTANCE_GENERATION, "operator": "Gt", "values": ["2"]},
        ]
    ),
)
NO_NODEPOOL = (
    "no NodePool in the input: Nodewright would launch nothing, so every pending pod stays pending; "
    "add your NodePools (-f), or pass --default-nodepool to plan with the default NodePool"
)
DEFAULT_USED = (
    "no NodePool in the input: planned with the default NodePool (--default-nodepool: Linux, amd64, "
    "on-demand, c/m/r generation 3+), not one of yours"
)


@app.command()
def plan(  # noqa: PLR0917 - Typer maps each parameter to an option
    files: Annotated[
        list[Path] | None, typer.Option("-f", "--file", help="YAML or JSON file, or directory (repeatable).")
    ] = None,
    prices: Annotated[
        Path | None, typer.Option("--prices", help="CSV instance_type,usd_per_hour; types absent are not offered.")
    ] = None,
    zones: Annotated[str, typer.Option("--zones", help="Comma-separated zones.")] = ",".join(DEFAULT_ZONES),
    output: Annotated[str, typer.Option("--output", "-o", help="table or json.")] = "table",
    strict: Annotated[
        bool, typer.Option("--strict", help="Treat warnings (unknown or ignored fields) as problems: plan nothing.")
    ] = False,
    cluster: Annotated[
        str | None, typer.Option("--cluster", help="EKS cluster to read (your AWS credentials); changes nothing.")
    ] = None,
    kubeconfig: Annotated[
        str | None, typer.Option("--kubeconfig", help="Read the cluster of this kubeconfig; changes nothing.")
    ] = None,
    context: Annotated[str | None, typer.Option("--context", help="The kubeconfig context to read.")] = None,
    region: Annotated[
        str | None,
        typer.Option("--region", help="AWS region of --cluster; offline: plan in its zones a, b, c (unless --zones)."),
    ] = None,
    default_nodepool: Annotated[
        bool,
        typer.Option("--default-nodepool", help="With no NodePool in the input, plan with the default NodePool."),
    ] = False,
    algorithm: Annotated[
        str, typer.Option("--algorithm", help="Who plans: nodewright, karpenter or automode (the references).")
    ] = "nodewright",
    compare: Annotated[
        bool, typer.Option("--compare", help="Plan with all three and print them side by side.")
    ] = False,
) -> None:
    """Plan the nodes Nodewright would launch for the pending pods in FILES (offline), or read a
    live cluster (--cluster, --kubeconfig/--context) and add what consolidation could save.
    """
    if output not in ("table", "json"):
        _fail(f"--output: {output!r} is not one of table, json")
    if algorithm not in ALGORITHMS:
        _fail(f"--algorithm: {algorithm!r} is not one of {', '.join(ALGORITHMS)}")
    if (cluster or kubeconfig or context) and (compare or algorithm != "nodewright"):
        _fail("--algorithm and --compare plan files (-f); a live cluster is read with Nodewright's planner")
    if cluster or kubeconfig or context:
        _plan_live(
            files or [],
            output=output,
            cluster=cluster,
            kubeconfig=kubeconfig,
            context=context,
            region=region,
            default_nodepool=default_nodepool,
        )
        return
    if not files:
        _fail("give -f FILE (offline plan) or --cluster NAME / --kubeconfig PATH (read a live cluster)")
    paths, missing = expand(files or [])
    texts = []
    for path in paths:
        try:
            texts.append((str(path), path.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError) as error:
            _fail(f"{path}: cannot read: {error}")
    planned = read_workloads(texts)
    if strict:
        planned = planned.strict()
    problems = [*missing, *planned.problems]
    if problems:
        _fail(
            "\n".join([f"{len(problems)} problem(s) in the input; nothing was planned:", *(f"  {p}" for p in problems)])
        )
    for warning in planned.warnings:  # on stderr, so `--output json` stays one JSON document on stdout
        typer.secho(str(warning), err=True, fg=typer.colors.YELLOW)
    try:
        price_list = read_prices_csv(prices) if prices is not None else None
        zone_list = tuple(z.strip() for z in zones.split(",") if z.strip())
        if region and zones == ",".join(DEFAULT_ZONES):
            zone_list = tuple(f"{region}{letter}" for letter in "abc")
        standing = zones_for_region(zone_list)
        scheduling = build_input(planned, price_list, zone_list, default_nodepool=default_nodepool)
    except (PricesFileError, ValueError) as error:
        _fail(str(error))
    notices = nodepool_notices(planned)
    if standing:
        notices.append(
            f"the bundled catalog is us-east-1's: its instance types and estimated prices are assumed offered "
            f"in {', '.join(zone_list)}"
        )
    if compare or algorithm != "nodewright":  # nodewright.cli.plan_algorithms

        def shaped(result: SchedulingResult, seconds: float, *, estimated: bool) -> dict[str, Any]:
            # Every algorithm's report says first what the input lacked, as Nodewright's does.
            report = to_report(result, seconds, estimated=estimated)
            return with_notices(report, notices, default_nodepool=default_nodepool)

        printer = Printer(shaped, _print_table, json_output=output == "json")
        plan_with(scheduling, algorithm, printer, compare=compare, estimated=price_list is None)
        return
    started = time.perf_counter()
    result = solve(scheduling)
    seconds = time.perf_counter() - started
    report = with_notices(
        to_report(result, seconds, estimated=price_list is None),
        notices,
        default_nodepool=default_nodepool,
    )
    if output == "json":
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
    else:
        _print_table(report)


def _plan_live(
    files: list[Path],
    *,
    output: str,
    cluster: str | None,
    kubeconfig: str | None,
    context: str | None,
    region: str | None,
    default_nodepool: bool = False,
) -> None:
    """`plan --cluster/--kubeconfig`: see nodewright.cli.plan_cluster."""
    from nodewright.cli.plan_cluster import LiveReadError, plan_cluster, read_cluster

    files_config = None
    if files:
        paths, missing = expand(files)
        texts = [(str(path), path.read_text(encoding="utf-8")) for path in paths]
        planned = read_workloads(texts)
        problems = [*missing, *planned.problems]
        if problems:
            _fail("\n".join([f"{len(problems)} problem(s) in the NodePool files:", *(f"  {p}" for p in problems)]))
        files_config = planned.config
    try:
        live, aws = read_cluster(cluster=cluster, kubeconfig=kubeconfig, context=context, region=region)
    except LiveReadError as error:
        _fail(str(error), code=exit_code(error))
    report = plan_cluster(live, files_config, aws, default_nodepool=default_nodepool)
    if output == "json":
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
        return
    console = Console()
    console = Console(width=max(console.width, 110))
    _print_notices(console, report)
    facts = report["cluster"]
    console.print(
        f"{facts['source']}: {facts['nodes']} node(s), {facts['pods']} pod(s), {len(report['pending'])} pending "
        f"(without a node; {len(report['on_draining_nodes'])} more on draining nodes, "
        f"{len(report['on_cordoned_nodes'])} running on cordoned nodes); "
        f"NodePools ({facts['nodepools_from']}): {', '.join(facts['nodepools'])}"
    )
    _print_table(report, notices=False)
    repack = report["repack"]
    if repack is None:
        return
    table = Table(title="Re-pack: today's nodes against the cheapest plan of all pods", title_justify="left")
    for column in ("pool", "capacity", "nodes", "$/h now", "fresh nodes", "fresh $/h"):
        table.add_column(column, no_wrap=True)
    for group in repack["by_group"]:
        table.add_row(
            group["nodepool"],
            group["capacity_type"],
            str(group["nodes"]),
            f"{group['current_price_per_hour']:.4f}",
            str(group["fresh_nodes"]),
            f"{group['fresh_price_per_hour']:.4f}",
        )
    console.print(table)
    console.print(
        f"now ${repack['current_price_per_hour']:.4f}/h, fresh plan ${repack['fresh_price_per_hour']:.4f}/h: "
        f"consolidation could save up to ${repack['savings_per_hour']:.4f}/h ({repack['savings_percent']}%)"
    )
    prices = report["prices"]
    console.print(
        f"prices: {prices['source']} ({prices['region']}): on-demand {prices['on_demand']}, spot {prices['spot']}"
        + (f"; live prices failed: {prices['live_prices_failed']}" if "live_prices_failed" in prices else "")
        + (f"; {prices['note']}" if "note" in prices else "")
    )
    if repack["unpriced_nodes"]:
        console.print(f"[yellow]no price for[/yellow] {', '.join(repack['unpriced_nodes'])} (counted as $0)")


def nodepool_notices(planned: PlanInput) -> list[str]:
    """What the report says first about the NodePools it planned with (none in the input)."""
    return [] if planned.config.of_kind(NODEPOOL) else ["no-nodepool"]


def with_notices(report: dict[str, Any], notices: list[str], *, default_nodepool: bool = False) -> dict[str, Any]:
    """`report` with `notices` (sentences) as its first key, when there are any."""
    said = [(DEFAULT_USED if default_nodepool else NO_NODEPOOL) if n == "no-nodepool" else n for n in notices]
    return {"notices": said, **report} if said else report


def build_input(
    planned: PlanInput,
    prices: dict[str, float] | None,
    zones: tuple[str, ...],
    *,
    default_nodepool: bool = False,
) -> SchedulingInput:
    """The scheduling pass `plan` runs: each NodePool with the catalog its EC2NodeClass's kubelet gives,
    priced by the input's NodeOverlays (as the provisioner prices it). With no NodePool in the
    input, none (every pod stays pending, as it would) or, with `default_nodepool`, DEFAULT_NODEPOOL.
    """
    nodepools = [d.model for d in planned.config.of_kind(NODEPOOL) if isinstance(d.model, NodePool)]
    nodeclasses = {d.name: d.model for d in planned.config.of_kind(EC2NODECLASS) if isinstance(d.model, EC2NodeClass)}
    for pool in nodepools:
        if nodeclasses and pool.node_class_ref.name not in nodeclasses:
            raise ValueError(
                f"NodePool/{pool.name}: spec.template.spec.nodeClassRef.name: "
                f"EC2NodeClass {pool.node_class_ref.name!r} is not in the input"
            )
    catalogs: dict[str, list[InstanceType]] = {}
    pools = []
    for pool in nodepools or ([DEFAULT_NODEPOOL] if default_nodepool else []):
        nodeclass = nodeclasses.get(pool.node_class_ref.name)
        kubelet = nodeclass.kubelet if nodeclass is not None else None
        key = repr(kubelet)  # kubelet settings hold dicts: key the cache by their repr
        if key not in catalogs:
            # Zones of a region the bundled catalog does not cover: its own zones stand in for them.
            standing = zones_for_region(zones)
            bundled = tuple(standing) if standing else zones
            catalogs[key] = load_catalog(bundled, prices, kubelet, as_zones=standing or None)
        pools.append(PoolCapacity(pool, tuple(catalogs[key])))
    overlays = [d.model for d in planned.config.of_kind(NODEOVERLAY) if isinstance(d.model, NodeOverlay)]
    overlaid = apply_overlays(pools, overlays)
    for name, why in sorted(overlaid.conflicts.items()):
        # As the provisioner does: a refused overlay is reported and left out, the plan goes on.
        typer.secho(f"NodeOverlay/{name}: not applied: {why}", err=True, fg=typer.colors.YELLOW)
    # The provisioner's input rules; files hold no claims: the nodes are all there is.
    snapshot = ClusterSnapshot(
        nodes=planned.nodes,
        pods=planned.pending + planned.bound,
        daemonsets=planned.daemonsets,
        devices=planned.devices,
    )
    return provisioning_input(snapshot, pending=planned.pending, pools=overlaid.pools)


def to_report(result: SchedulingResult, seconds: float, *, estimated: bool) -> dict[str, Any]:
    """The JSON shape `plan --output json` prints (documented in the README)."""
    claims = []
    for claim in result.claims:
        allocatable = claim.instance_type.allocatable.format()
        requests = claim.requests.format()
        claims.append(
            {
                "nodepool": claim.nodepool,
                "instance_type": claim.instance_type.name,
                "capacity_type": claim.offering.capacity_type,
                "zone": claim.offering.zone,
                "price_per_hour": round(claim.price, 6),
                "instance_type_options": [t.name for t in claim.options],
                "allocatable": {k: allocatable.get(k, 0) for k in (CPU, MEMORY, PODS)},
                "requests": {k: requests.get(k, 0) for k in (CPU, MEMORY, PODS)},
                "pods": sorted(p.key for p in claim.pods),
            }
        )
    return {
        "nodeclaims": claims,
        "existing": {node: sorted(pods) for node, pods in sorted(result.existing.items())},
        "unschedulable": [{"pod": pod, "reason": reason} for pod, reason in sorted(result.unschedulable.items())],
        "total_price_per_hour": round(result.price_per_hour, 6),
        "prices_estimated": estimated,
        "solve_seconds": round(seconds, 4),
    }


def _print_notices(console: Console, report: dict[str, Any]) -> None:
    for notice in report.get("notices", ()):
        console.print(f"NOTE: {notice}", style="bold yellow", markup=False)


def _print_table(report: dict[str, Any], *, notices: bool = True) -> None:
    # Piped output defaults to 80 columns, too narrow for a claim's row; never go below 110.
    console = Console()
    console = Console(width=max(console.width, 110))
    if notices:
        _print_notices(console, report)
    table = Table(title="Node claims", title_justify="left")
    for column in ("pool", "type", "capacity", "zone", "$/h", "pods", "cpu", "memory"):
        table.add_column(column, no_wrap=True)
    for claim in report["nodeclaims"]:
        table.add_row(
            claim["nodepool"],
            claim["instance_type"],
            claim["capacity_type"],
            claim["zone"],
            f"{claim['price_per_hour']:.4f}",
            str(len(claim["pods"])),
            str(claim["requests"]["cpu"]),
            str(claim["requests"]["memory"]),
        )
    console.print(table)
    for node, pods in report["existing"].items():
        console.print(f"existing node [bold]{node}[/bold] takes {len(pods)} pod(s)")
    for item in report["unschedulable"]:
        console.print(f"[red]cannot place[/red] {item['pod']}: {item['reason']}")
    note = " (estimated prices: pass --prices FILE for real ones)" if report["prices_estimated"] else ""
    console.print(
        f"{len(report['nodeclaims'])} node(s), ${report['total_price_per_hour']:.4f}/h{note}; "
        f"solved in {report['solve_seconds'] * 1000:.0f} ms"
    )


def _fail(message: str, code: int = 1) -> None:
    # Plain text, never wrapped: a file path in an error must stay whole for people and scripts.
    # Exit 1: the input is wrong; 2: AWS or the cluster could not be reached or read (cli.failures).
    typer.secho(message, err=True, fg=typer.colors.RED)
    raise typer.Exit(code)
