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
from nodewright.simulator.scenario import Scenario, ScenarioError, load_scenario


@app.command()
def simulate(
    scenario_file: Annotated[
        Path | None, typer.Argument(metavar="SCENARIO.yaml", help="The scenario to run (or --generate SEED).")
    ] = None,
    *,
    report: Annotated[
        Path | None, typer.Option("--report", help="Report directory (default sim-report/<scenario name>).")
    ] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Override the scenario's seed.")] = None,
    profile: Annotated[
        Path | None, typer.Option("--profile", help="Write cProfile statistics of the whole run to this file.")
    ] = None,
    generate: Annotated[
        int | None,
        typer.Option("--generate", metavar="SEED", min=0, help="Run the scenario drawn for SEED instead of a file."),
    ] = None,
    hours: Annotated[
        float | None,
        typer.Option("--hours", min=0.01, help="With --generate: compress the drawn day to this many hours."),
    ] = None,
    scale: Annotated[
        float, typer.Option("--scale", min=0.01, help="With --generate: multiply every replica count.")
    ] = 1.0,
    faults: Annotated[
        bool, typer.Option("--faults", help="With --generate: also draw faults (API errors, throttling, crashes).")
    ] = False,
    features: Annotated[
        str,
        typer.Option(
            "--features",
            metavar="LIST",
            help="With --generate: also draw these: standby, dra, zone-balance, late-daemonset (or all).",
        ),
    ] = "",
    write: Annotated[
        Path | None,
        typer.Option("--write", metavar="FILE", help="With --generate: write the drawn scenario's YAML and stop."),
    ] = None,
    serve: Annotated[
        bool,
        typer.Option(
            "--serve", help="Serve the simulated cluster to kubectl during the run and after it (Ctrl-C ends)."
        ),
    ] = False,
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="With --serve: the port (0: any free one).")
    ] = 0,
    kubeconfig: Annotated[
        Path | None,
        typer.Option("--kubeconfig", help="With --serve: where to write the kubeconfig (default <report>/kubeconfig)."),
    ] = None,
    speed: Annotated[
        float | None,
        typer.Option("--speed", min=0.001, help="With --serve: virtual seconds per real second (default 10)."),
    ] = None,
) -> None:
    """Simulate Nodewright on a virtual cluster and write a report (summary.json, report.md/html, plots)."""
    from nodewright.simulator.runner import run_scenario

    scenario = _scenario(scenario_file, generate, write, hours=hours, scale=scale, faults=faults, features=features)
    if scenario is None:
        return
    if seed is not None:
        scenario = scenario.with_seed(seed)
    directory = report or Path("sim-report") / scenario.name
    if not serve and (port or kubeconfig is not None or speed is not None):
        typer.secho("--port, --kubeconfig and --speed go with --serve", err=True, fg=typer.colors.RED)
        raise typer.Exit(2)
    served = None
    if serve:
        from nodewright.simulator.serve import ServedCluster

        served = ServedCluster(port=port, kubeconfig=kubeconfig or directory / "kubeconfig", speed=speed or 10.0)
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
            if served is not None:
                served.pace(done)

        def started(world: Any) -> None:
            if served is not None:
                served.start(world)
                console.print(f"serving the simulated cluster: export KUBECONFIG={served.kubeconfig}")

        try:
            result = run_scenario(
                scenario, directory, progress=advance, profile=profile, on_built=started if served else None
            )
        finally:
            if served is not None:
                served.finished()
    _print(result.summary, directory)
    if served is not None:
        _serve_until_interrupted(served, console)


def _serve_until_interrupted(served: Any, console: Console) -> None:
    """After the run: the cluster stays served (as it ended) until Ctrl-C or SIGTERM."""
    import signal
    import time

    def interrupted(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupted)
    console.print(f"the run is over; still serving (KUBECONFIG={served.kubeconfig}). Ctrl-C to stop.")
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        served.close()


def _scenario(
    scenario_file: Path | None,
    generate: int | None,
    write: Path | None,
    *,
    hours: float | None,
    scale: float,
    faults: bool,
    features: str = "",
) -> Scenario | None:
    """The scenario to run: the file, or the one drawn for the seed; None when it was only written."""
    if (scenario_file is None) == (generate is None):
        typer.secho("give either SCENARIO.yaml or --generate SEED", err=True, fg=typer.colors.RED)
        raise typer.Exit(2)
    if generate is None and (hours is not None or scale != 1.0 or faults or features or write is not None):
        typer.secho(
            "--hours, --scale, --faults, --features and --write go with --generate SEED", err=True, fg=typer.colors.RED
        )
        raise typer.Exit(2)
    from nodewright.simulator.scenario.generate_features import parse_features

    try:
        chosen = parse_features(features)
    except ValueError as error:
        typer.secho(f"--features: {error}", err=True, fg=typer.colors.RED)
        raise typer.Exit(2) from None
    try:
        if scenario_file is not None:
            return load_scenario(scenario_file)
        from nodewright.simulator.scenario.generate import generate as draw
        from nodewright.simulator.scenario.generate import load, to_yaml

        document = draw(generate or 0, hours=hours, scale=scale, faults=faults, features=chosen)
        if write is None:
            return load(document)
        write.write_text(to_yaml(document), encoding="utf-8")
        load_scenario(write)  # what was written must load back
    except ScenarioError as error:
        typer.secho(str(error), err=True, fg=typer.colors.RED)
        raise typer.Exit(1) from None
    typer.echo(f"wrote {write}: run it with `nodewright simulate {write}`")
    return None


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
    held = summary.get("pods_held_by_pdb_at_interruption", 0)
    if held:  # apart from the lost: a budget refused every eviction until AWS took the instance
        rows.insert(1, ("pods a PDB held until the reclaim", str(held)))
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
