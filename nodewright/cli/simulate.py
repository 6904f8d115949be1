"""`nodewright simulate`: run a scenario against the real handlers, moto and an in-memory cluster.

Nothing is contacted: AWS is moto in-process, Kubernetes is the in-memory cluster, time is virtual.
A progress bar follows virtual time; at the end a short table and the report's path are printed.
"""

from __future__ import annotations

import platform
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from nodewright.cli import app
from nodewright.model.duration import format_duration
from nodewright.simulator.scenario import ScenarioError, load_scenario


@app.command()
def simulate(
    scenario_file: Annotated[Path, typer.Argument(metavar="SCENARIO.yaml", help="The scenario to run.")],
    report: Annotated[
        Path | None, typer.Option("--report", help="Report directory (default sim-report/<scenario name>).")
    ] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Override the scenario's seed.")] = None,
    profile: Annotated[
        Path | None, typer.Option("--profile", help="Write cProfile statistics of the whole run to this file.")
    ] = None,
) -> None:
    """Simulate Nodewright on a virtual cluster and write a report (summary.json, report.md/html, plots)."""
    from nodewright.simulator.runner import run_scenario

    try:
        scenario = load_scenario(scenario_file)
    except ScenarioError as error:
        typer.secho(str(error), err=True, fg=typer.colors.RED)
        raise typer.Exit(1) from None
    if seed is not None:
        scenario = scenario.with_seed(seed)
    directory = report or Path("sim-report") / scenario.name
    console = Console(stderr=True)
    total = scenario.duration
    with Progress(
        TextColumn(f"[bold]{scenario.name}[/bold]"),
        BarColumn(),
        TextColumn("{task.fields[virtual]} of " + format_duration(total)),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    ) as bar:
        task = bar.add_task("simulate", total=total, virtual="0s")

        def advance(done: float) -> None:
            bar.update(task, completed=done, virtual=format_duration(round(done)))

        result = run_scenario(scenario, directory, progress=advance, profile=profile)
    _print(result.summary, directory)


def _print(summary: dict[str, Any], directory: Path) -> None:
    console = Console()
    table = Table(title=f"Simulation {summary['scenario']}", title_justify="left")
    table.add_column("figure")
    table.add_column("value", justify="right")
    pending = summary["pending_seconds"]
    launch = summary["pending_to_launch_seconds"]
    interruption = summary["interruption"]
    rows = [
        ("pods lost", str(summary["pods_lost"])),
        ("PDB / do-not-disrupt / limit violations", _violations(summary)),
        ("pending -> bound p50/p95/p99", f"{pending['p50']:.1f} / {pending['p95']:.1f} / {pending['p99']:.1f} s"),
        ("pending -> CreateFleet p50/p95/p99", f"{launch['p50']:.1f} / {launch['p95']:.1f} / {launch['p99']:.1f} s"),
        ("nodes launched / terminated", f"{summary['nodes_launched']} / {sum(summary['nodes_terminated'].values())}"),
        ("cost (without consolidation)", f"${summary['cost_usd']:.2f} ({_without(summary)})"),
        ("wall time", f"{summary['wall_seconds']:.1f} s on {platform.machine()} ({platform.python_version()})"),
    ]
    if interruption["instances"]:
        moved = summary["displaced_pending_seconds"]["interruption"]
        rows[3:3] = [
            (
                f"interruptions ({interruption['instances']}): cordon/replace/drain after warning",
                " / ".join(
                    "-" if interruption[k] is None else f"{interruption[k]:.1f} s"
                    for k in ("cordon_seconds_max", "replacement_request_seconds_max", "drain_seconds_max")
                ),
            ),
            (
                f"pods moved by interruptions ({moved['count']}): pending p95/max",
                f"{moved['p95']:.1f} / {moved['max']:.1f} s",
            ),
        ]
    for name, value in rows:
        table.add_row(name, value)
    console.print(table)
    for warning in summary.get("warnings", []):
        console.print(f"[yellow]warning:[/yellow] {warning}")
    if summary.get("handler_errors"):
        console.print(f"[red]{summary['handler_errors']} handler error(s): see the report[/red]")
    console.print(f"report: {directory / 'report.html'} (and report.md, summary.json, *.png)")


def _without(summary: dict[str, Any]) -> str:
    return f"${summary['cost_without_consolidation_usd']:.2f}"


def _violations(summary: dict[str, Any]) -> str:
    return f"{summary['pdb_violations']} / {summary['do_not_disrupt_violations']} / {summary['limit_violations']}"
