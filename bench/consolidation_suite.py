"""The consolidation suite: generated scenarios (and the shipped ones) under each autoscaler.

Role: the bill against the real alternatives, on days nobody tuned. Each seed's scenario is drawn
by `nodewright.simulator.scenario.generate` and run, as `nodewright simulate` runs it (the simulator's
`run_scenario`, real handlers on moto and the in-memory cluster), once per mode
(`nodewright.controllers.algorithms`): `nodewright`; `karpenter`, the Karpenter v1.14 reference
(its scheduler, batching and disruption); `automode`, EKS Auto Mode (the reference with its
NodePool defaults and fee); and, on request, `many-to-one` (Nodewright without many-to-many, an
ablation) and `off` (no consolidation). The shipped examples/scenarios/*.yaml run the same way, at
their own length (`--scenario FILE`, repeatable: those files instead).

    .venv/bin/python -m bench.consolidation_suite --full --modes nodewright,karpenter,automode
        [--seeds 10] [--first 1] [--hours 2] [--scale 1] [--jobs 2] [--json FILE]
        [--no-shipped | --scenario FILE...] [--faults] [--spot-to-spot on|off]

Full-length days (`--full`, 12-24 h) are the judge; `--hours` is for quick checks. The bill of a
run (summary.json's `bill`, `nodewright.simulator.report.bill`): compute $, Auto Mode's fee $, and the
autoscaler's own cost (Nodewright's `self_cost` prorated; Karpenter's controller on two m5.large
on-demand nodes; nothing for Auto Mode). The bill table gives, per seed and mode and in total,
those, the pods moved by consolidation, the pods lost and pending -> bound p50/p99; the ratios
are Nodewright's total bill over Karpenter's and over Auto Mode's.

Shortening: `--hours H` (default 2) compresses each drawn 12-24 h day to H hours (every time of the
day's story scales by H / drawn hours: curves, bursts, interruptions, capacity errors; the
controllers' timings such as consolidateAfter do not), and `--scale S` multiplies every replica
count. `--faults` also draws faults into each generated scenario (off by default: the suite
measures consolidation; the generated day is the same with and without). `--spot-to-spot off` runs
Nodewright with the deploy key `spotToSpotConsolidation` false (Karpenter's default; the
references decide spot-to-spot by their own rules whatever it says). Runs go to a process
pool of `--jobs` workers, the longest (nodewright mode) first.

Per run it takes from the run's summary: cost, pods lost, PDB / do-not-disrupt / limit
violations, the longest wait of a pod displaced by consolidation and by an interruption, the
consolidator's pass CPU seconds (p99 and max of its invocations' own thread CPU), the consolidator
ticks that found the lease busy, pods moved by consolidation, warning -> drained (max), pods still
pending at the end, handler errors, wall and CPU seconds, the provisioner's plans checked against
kube-scheduler's filters and the planned pods it would not bind (`bench.harness.binding_audit`; a goal:
0); with faults, how many were injected and
the fault audit's claims with a duplicate instance and orphan instances or claims. Per scenario it
prints the cost ratio nodewright / karpenter and which goals fall short; in total the ratio's
median and maximum, the sums and the worst figures, and wall time per mode. `--json FILE` writes
every row and the totals; each row says the commit of the code that ran it.

`--reuse FILE` (repeatable) takes the rows of an earlier `--json` file for the runs it holds
instead of running them again, so the modes of a long suite can run at different times (say the
references while the machine is busy, then `nodewright` after a change to it). Its settings
(hours, scale, faults, features, spot-to-spot) must be this run's; a reused row keeps its commit
and names its file (`reused_from`), and the output lists every commit the table rests on.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from nodewright.simulator.scenario.generate_features import parse_features

MODES = ("nodewright", "karpenter", "automode", "many-to-one", "off")
DEFAULT_MODES = ("nodewright", "karpenter", "automode")
SHIPPED = Path(__file__).resolve().parents[1] / "examples" / "scenarios"
BILL_KEYS = ("compute_usd", "fee_usd", "autoscaler_usd", "total_usd")
# Issue 15's goals, as the suite checks them.
RATIO_MAX = 1.00
RATIO_MEDIAN_MAX = 0.95
DISPLACED_MAX_SECONDS = 120.0
DRAIN_MAX_SECONDS = 60.0
PASS_CPU_MAX_SECONDS = 30.0
WALL_RATIO_MAX = 2.0


@dataclass(frozen=True, slots=True)
class Task:
    """One run: a generated seed (with its compression) or a shipped file, in one mode."""

    label: str
    mode: str
    seed: int | None = None
    path: str | None = None
    hours: float | None = None
    scale: float = 1.0
    faults: bool = False
    spot_to_spot: bool = True
    features: tuple[str, ...] = ()


def run(task: Task) -> dict[str, Any]:
    """Run one task in this process and return its row (the figures the module docstring lists)."""
    from nodewright.simulator.runner import run_scenario
    from nodewright.simulator.scenario import load_scenario
    from nodewright.simulator.scenario.generate import generate, load

    if task.seed is not None:
        document = generate(task.seed, hours=task.hours, scale=task.scale, faults=task.faults, features=task.features)
        scenario = load(document, f"<generated seed {task.seed}>")
    else:
        scenario = load_scenario(task.path or "")
    from bench.harness.binding_audit import audit_plans
    from bench.harness.feature_checks import FeatureWatch, shortfalls

    watch = FeatureWatch(scenario) if task.features else None
    with audit_plans() as audit:
        chosen = replace(scenario, consolidation=task.mode, spot_to_spot_consolidation=task.spot_to_spot)
        result = run_scenario(chosen, None, plots=False, on_built=None if watch is None else watch.attach)
        summary = result.summary
    row = {"scenario": task.label, "mode": task.mode, **figures(summary), **audit.figures()}
    if watch is not None:
        row["features"] = watch.figures(result.world, summary)
        row["feature_shortfalls"] = shortfalls(row["features"])
    return row


def figures(summary: dict[str, Any]) -> dict[str, Any]:
    """The suite's figures from one run's summary.json."""
    displaced = summary["displaced_pending_seconds"]
    interruption = summary["interruption"]
    passes = summary.get("invocation_cpu_seconds", {}).get("consolidator", {})
    faults = summary.get("faults") or {}  # absent from runs of a simulator without fault injection
    audit = faults.get("audit") or {}
    bill = summary.get("bill") or {}
    pending = summary.get("pending_seconds") or {}
    return {
        "cost_usd": summary["cost_usd"],
        "compute_usd": bill.get("compute_usd", summary["cost_usd"]),
        "fee_usd": bill.get("fee_usd", 0.0),
        "autoscaler_usd": bill.get("autoscaler_usd", 0.0),
        "total_usd": bill.get("total_usd", summary["cost_usd"]),
        "pending_p50": pending.get("p50", 0.0),
        "pending_p99": pending.get("p99", 0.0),
        "pods_lost": summary["pods_lost"],
        # Pods a budget held on an interrupted node until it went (counted apart from the lost).
        "pods_held_by_pdb": summary.get("pods_held_by_pdb_at_interruption", 0),
        "pdb_violations": summary["pdb_violations"],
        "do_not_disrupt_violations": summary["do_not_disrupt_violations"],
        "limit_violations": summary["limit_violations"],
        "displaced_pending_max": displaced["other"]["max"],
        "interrupted_pending_max": displaced["interruption"]["max"],
        "pass_cpu_p99": passes.get("p99", 0.0),
        "pass_cpu_max": passes.get("max", 0.0),
        "consolidator_ticks": summary["invocations"].get("consolidator", 0),
        "lease_busy_ticks": summary["invocations_lease_busy"].get("consolidator", 0),
        "pods_moved": summary["consolidation_moves"]["pods_moved"],
        "interrupted_instances": interruption["instances"],
        "warning_to_drained_max": interruption["drain_seconds_max"],
        "reclaimed_with_pods": interruption["reclaimed_with_pods"],
        "pods_pending_at_end": summary["pods_pending_at_end"],
        "nodes_launched": summary["nodes_launched"],
        "handler_errors": summary["handler_errors"],
        "faults_injected": faults.get("injected", 0),
        "duplicate_instances": len(audit.get("duplicate_instances") or ()),
        "orphans": len(audit.get("orphan_instances") or ()) + len(audit.get("orphan_claims") or ()),
        "wall_seconds": summary["wall_seconds"],
        "cpu_seconds": summary["cpu_seconds"],
    }


def tasks(
    seeds: Sequence[int],
    modes: Sequence[str],
    *,
    hours: float | None,
    scale: float,
    files: Sequence[Path] = (),
    faults: bool = False,
    spot_to_spot: bool = True,
    features: tuple[str, ...] = (),
) -> list[Task]:
    """Every run, nodewright mode first (the longest), so the pool ends with the short ones."""
    out: list[Task] = []
    for mode in modes:
        out.extend(
            Task(
                f"seed {seed}",
                mode,
                seed=seed,
                hours=hours,
                scale=scale,
                faults=faults,
                spot_to_spot=spot_to_spot,
                features=features,
            )
            for seed in seeds
        )
        out.extend(Task(path.stem, mode, path=str(path), spot_to_spot=spot_to_spot) for path in files)
    return out


def shortfalls(by_mode: dict[str, dict[str, Any]]) -> list[str]:
    """Which of issue 15's goals one scenario misses (its rows by mode)."""
    out: list[str] = []
    nodewright, karpenter = by_mode.get("nodewright"), by_mode.get("karpenter")
    ratio = _ratio(by_mode)
    if ratio is not None and ratio > RATIO_MAX:
        out.append(f"cost {ratio:.3f}x karpenter")
    for mode, row in sorted(by_mode.items()):
        for key, what in (
            ("pods_lost", "pods lost"),
            ("pdb_violations", "PDB violations"),
            ("do_not_disrupt_violations", "do-not-disrupt violations"),
            ("limit_violations", "limit violations"),
            ("handler_errors", "handler errors"),
            ("duplicate_instances", "claims with a duplicate instance"),
            ("orphans", "orphan instances or claims 15 min after the last fault"),
            ("planned_unbindable", "planned pods kube-scheduler would not bind"),
        ):
            if row.get(key):
                out.append(f"{mode}: {row[key]} {what}")
    if nodewright is not None:  # the references ignore Nodewright's own capabilities
        out.extend(nodewright.get("feature_shortfalls", ()))
    if nodewright is not None:
        if nodewright["displaced_pending_max"] > DISPLACED_MAX_SECONDS:
            out.append(f"displaced pod pending {nodewright['displaced_pending_max']:.0f} s")
        drained = nodewright["warning_to_drained_max"]
        if drained is not None and drained > DRAIN_MAX_SECONDS:
            out.append(f"warning -> drained {drained:.0f} s")
        if nodewright["pass_cpu_p99"] > PASS_CPU_MAX_SECONDS:
            out.append(f"pass p99 {nodewright['pass_cpu_p99']:.1f} s CPU")
        if karpenter is not None and nodewright["cpu_seconds"] > WALL_RATIO_MAX * karpenter["cpu_seconds"]:
            out.append(f"simulates {nodewright['cpu_seconds'] / max(karpenter['cpu_seconds'], 0.01):.1f}x slower")
    return out


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per scenario (ratio and shortfalls) and in total (see the module docstring)."""
    scenarios: dict[str, dict[str, dict[str, Any]]] = {}
    for row in rows:
        scenarios.setdefault(row["scenario"], {})[row["mode"]] = row
    per: list[dict[str, Any]] = []
    for name, by_mode in scenarios.items():
        off = by_mode.get("off")
        per.append(
            {
                "scenario": name,
                "ratio": _ratio(by_mode),
                "ratio_automode": _divide(by_mode.get("nodewright"), by_mode.get("automode")),
                "nodewright_vs_off": _divide(by_mode.get("nodewright"), off),
                "karpenter_vs_off": _divide(by_mode.get("karpenter"), off),
                "short": shortfalls(by_mode),
            }
        )
    ratios = [p["ratio"] for p in per if p["ratio"] is not None]
    automode = [p["ratio_automode"] for p in per if p["ratio_automode"] is not None]
    generated = [p["ratio"] for p in per if p["ratio"] is not None and p["scenario"].startswith("seed ")]
    nodewright = [r for r in rows if r["mode"] == "nodewright"]
    totals: dict[str, Any] = {
        "scenarios": len(per),
        "ratio_median": round(statistics.median(ratios), 4) if ratios else None,
        "ratio_max": round(max(ratios), 4) if ratios else None,
        "ratio_median_generated": round(statistics.median(generated), 4) if generated else None,
        "scenarios_over_karpenter": sum(1 for r in ratios if r > RATIO_MAX),
        "ratio_automode_median": round(statistics.median(automode), 4) if automode else None,
        "ratio_automode_max": round(max(automode), 4) if automode else None,
        "bill_by_mode": _bills(rows),
        "scenarios_short": sum(1 for p in per if p["short"]),
        "wall_seconds_by_mode": {m: round(sum(r["wall_seconds"] for r in rows if r["mode"] == m), 1) for m in MODES},
        "cpu_seconds_by_mode": {m: round(sum(r["cpu_seconds"] for r in rows if r["mode"] == m), 1) for m in MODES},
    }
    for key in (
        "pods_lost",
        "pods_held_by_pdb",
        "pdb_violations",
        "do_not_disrupt_violations",
        "limit_violations",
        "handler_errors",
        "faults_injected",
        "duplicate_instances",
        "orphans",
        "plans_checked",
        "planned_unbindable",
    ):
        totals[key] = sum(r.get(key, 0) for r in rows)
    totals["pods_moved_nodewright"] = sum(r["pods_moved"] for r in nodewright)
    totals["displaced_pending_max"] = max((r["displaced_pending_max"] for r in nodewright), default=0.0)
    totals["pass_cpu_p99_max"] = max((r["pass_cpu_p99"] for r in nodewright), default=0.0)
    totals["lease_busy_ticks_nodewright"] = sum(r["lease_busy_ticks"] for r in nodewright)
    drains = [r["warning_to_drained_max"] for r in nodewright if r["warning_to_drained_max"] is not None]
    totals["warning_to_drained_max"] = max(drains, default=None)
    if totals["ratio_median_generated"] is not None and totals["ratio_median_generated"] > RATIO_MEDIAN_MAX:
        totals["short"] = [f"median ratio {totals['ratio_median_generated']:.3f} > {RATIO_MEDIAN_MAX}"]
    return {"scenarios": per, "totals": totals}


def table(rows: Sequence[dict[str, Any]], result: dict[str, Any]) -> str:
    """The goals table: one line per scenario (nodewright mode's figures; compute $ per mode; the
    total bills' ratio nodewright / karpenter).
    """
    by = {(r["scenario"], r["mode"]): r for r in rows}
    lines = [
        "| scenario | nw $ | karp $ | auto $ | nw/karp | lost (nw/karp/auto) | PDB+dnd+limit viol. | displaced max s "
        "| pass CPU p99 s | lease busy | pods moved | warning->drained s | wall s (nw/karp/auto) | short |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for per in result["scenarios"]:
        name = per["scenario"]
        rows_of = {m: by.get((name, m)) for m in DEFAULT_MODES}
        nw = rows_of["nodewright"] or {}
        violations = sum(
            r[k]
            for r in rows_of.values()
            if r
            for k in ("pdb_violations", "do_not_disrupt_violations", "limit_violations")
        )
        drained = nw.get("warning_to_drained_max")
        lines.append(
            "| "
            + " | ".join(
                [
                    name,
                    *(_money(rows_of[m]) for m in DEFAULT_MODES),
                    "-" if per["ratio"] is None else f"{per['ratio']:.3f}",
                    "/".join(_field(rows_of[m], "pods_lost", "{}") for m in DEFAULT_MODES),
                    str(violations),
                    f"{nw.get('displaced_pending_max', 0):.0f}",
                    f"{nw.get('pass_cpu_p99', 0):.2f}",
                    f"{nw.get('lease_busy_ticks', 0)}/{nw.get('consolidator_ticks', 0)}",
                    str(nw.get("pods_moved", "-")),
                    "-" if drained is None else f"{drained:.0f}",
                    "/".join(_field(rows_of[m], "wall_seconds", "{:.0f}") for m in DEFAULT_MODES),
                    "; ".join(per["short"]) or "-",
                ]
            )
            + " |"
        )
    return "\n".join(lines)


def _bills(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per mode, over every scenario: the bill's parts summed, pods moved and lost summed, and the
    worst pending -> bound p50 and p99.
    """
    out: dict[str, dict[str, float]] = {}
    for mode in MODES:
        mine = [r for r in rows if r["mode"] == mode]
        if not mine:
            continue
        out[mode] = {
            **{key: round(sum(r[key] for r in mine), 4) for key in BILL_KEYS},
            "pods_moved": sum(r["pods_moved"] for r in mine),
            "pods_lost": sum(r["pods_lost"] for r in mine),
            "pending_p50_max": max(r["pending_p50"] for r in mine),
            "pending_p99_max": max(r["pending_p99"] for r in mine),
        }
    return out


def bill_table(rows: Sequence[dict[str, Any]], result: dict[str, Any]) -> str:
    """The bill table: per scenario and mode, then per mode in total (see the module docstring)."""
    lines = [
        "| scenario | mode | compute $ | fee $ | autoscaler $ | total $ | x Karpenter | pods moved | pods lost "
        "| pending->bound p50 / p99 s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    by = {(r["scenario"], r["mode"]): r for r in rows}
    for per in result["scenarios"]:
        name = per["scenario"]
        karpenter = by.get((name, "karpenter"))
        for mode in MODES:
            row = by.get((name, mode))
            if row is None:
                continue
            versus = _divide(row, karpenter)
            lines.append(
                f"| {name} | {mode} | {row['compute_usd']:.2f} | {row['fee_usd']:.2f} | {row['autoscaler_usd']:.2f} "
                f"| {row['total_usd']:.2f} | {'-' if versus is None else f'{versus:.3f}'} | {row['pods_moved']} "
                f"| {row['pods_lost']} | {row['pending_p50']:.0f} / {row['pending_p99']:.0f} |"
            )
    bills = result["totals"]["bill_by_mode"]
    karpenter_total = bills.get("karpenter", {}).get("total_usd")
    for mode, bill in bills.items():
        versus = bill["total_usd"] / karpenter_total if karpenter_total else None
        lines.append(
            f"| **total** | {mode} | {bill['compute_usd']:.2f} | {bill['fee_usd']:.2f} | {bill['autoscaler_usd']:.2f} "
            f"| {bill['total_usd']:.2f} | {'-' if versus is None else f'{versus:.3f}'} | {bill['pods_moved']:.0f} "
            f"| {bill['pods_lost']:.0f} | {bill['pending_p50_max']:.0f} / {bill['pending_p99_max']:.0f} (worst) |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.consolidation_suite", description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=6, help="how many generated seeds (default 6)")
    parser.add_argument("--first", type=int, default=1, help="the first seed (default 1)")
    parser.add_argument("--hours", type=float, default=2.0, help="compress each drawn day to H hours (default 2)")
    parser.add_argument("--full", action="store_true", help="run the drawn days at their full 12-24 h")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every replica count (default 1)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument(
        "--modes",
        default=",".join(DEFAULT_MODES),
        help=f"comma-separated, of {', '.join(MODES)} (default: the first 3)",
    )
    parser.add_argument("--faults", action="store_true", help="also draw faults into the generated scenarios")
    parser.add_argument(
        "--features",
        default="",
        metavar="LIST",
        help="also draw these into the generated scenarios (standby, dra, zone-balance, late-daemonset; or all)",
    )
    parser.add_argument(
        "--spot-to-spot",
        choices=("on", "off"),
        default="on",
        help="the deploy key spotToSpotConsolidation (default on, as deployed; references keep their own)",
    )
    parser.add_argument("--no-shipped", action="store_true", help="skip examples/scenarios/*.yaml")
    parser.add_argument(
        "--scenario", type=Path, action="append", default=[], help="run this file instead of the shipped ones"
    )
    parser.add_argument("--json", type=Path, help="write every row and the totals here")
    parser.add_argument(
        "--reuse",
        type=Path,
        action="append",
        default=[],
        metavar="FILE",
        help="take the runs an earlier --json FILE holds (same settings) instead of running them",
    )
    args = parser.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    unknown = sorted(set(modes) - set(MODES))
    if unknown or args.seeds < 0 or args.jobs < 1:
        parser.error(f"--modes takes {', '.join(MODES)}; --seeds >= 0; --jobs >= 1 (got {args})")
    try:
        features = parse_features(args.features)
    except ValueError as error:
        parser.error(f"--features: {error}")
    seeds = range(args.first, args.first + args.seeds)
    todo = tasks(
        seeds,
        modes,
        hours=None if args.full else args.hours,
        scale=args.scale,
        files=[] if args.no_shipped else args.scenario or sorted(SHIPPED.glob("*.yaml")),
        faults=args.faults,
        spot_to_spot=args.spot_to_spot == "on",
        features=features,
    )
    try:
        rows = reused(args.reuse, _settings(args, modes, seeds), todo)
    except ValueError as error:
        parser.error(f"--reuse: {error}")
    done_before = {(r["scenario"], r["mode"]) for r in rows}
    commit = code_commit()
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(run, task): task for task in todo if (task.label, task.mode) not in done_before}
        for future in as_completed(futures):
            task = futures[future]
            try:
                row = future.result()
            except Exception as error:  # one broken run is a finding, not the suite's end
                print(f"{task.label} {task.mode}: FAILED {type(error).__name__}: {error}", file=sys.stderr)
                continue
            rows.append({**row, "commit": commit})
            print(
                f"[{len(rows)}/{len(todo)} {time.perf_counter() - started:.0f} s] {task.label} {task.mode}: "
                f"${row['cost_usd']:.2f}, lost {row['pods_lost']}, wall {row['wall_seconds']:.0f} s",
                file=sys.stderr,
                flush=True,
            )
            if args.json is not None:  # as it goes, so a suite cut short keeps what it measured
                _report(args, todo, rows, started, modes, seeds, done=False)
    result = _report(args, todo, rows, started, modes, seeds, done=True)
    print(table(rows, result))
    print()
    print(bill_table(rows, result))
    print(f"code: {', '.join(result['commits'])}")
    print(json.dumps(result["totals"], indent=2))
    return 1 if len(rows) < len(todo) else 0


def _report(
    args: argparse.Namespace,
    todo: Sequence[Task],
    rows: list[dict[str, Any]],
    started: float,
    modes: Sequence[str],
    seeds: Sequence[int],
    *,
    done: bool,
) -> dict[str, Any]:
    """Sort the rows, summarise them and, with --json, write the file (`complete` says if all ran)."""
    order = {task.label: index for index, task in enumerate(todo)}
    rows.sort(key=lambda r: (order[r["scenario"]], MODES.index(r["mode"])))
    result = summarise(rows)
    result["totals"]["suite_wall_seconds"] = round(time.perf_counter() - started, 1)
    result["settings"] = _settings(args, modes, seeds)
    result["commits"] = sorted({str(r.get("commit", "unknown")) for r in rows})
    result["complete"] = done and len(rows) == len(todo)
    if args.json is not None:
        args.json.write_text(json.dumps({**result, "rows": rows}, indent=2) + "\n", encoding="utf-8")
    return result


# The settings a reused row must share with the run that reuses it (the rest say what ran, not how).
SAME_SETTINGS = ("hours", "scale", "faults", "features", "spot_to_spot")


def _settings(args: argparse.Namespace, modes: Sequence[str], seeds: Sequence[int]) -> dict[str, Any]:
    return {
        "seeds": list(seeds),
        "hours": None if args.full else args.hours,
        "scale": args.scale,
        "jobs": args.jobs,
        "modes": list(modes),
        "files": [] if args.no_shipped else [str(p) for p in args.scenario] or "shipped",
        "faults": args.faults,
        "features": list(parse_features(args.features)),
        "spot_to_spot": args.spot_to_spot == "on",
        "cpus": os.cpu_count(),
    }


def reused(files: Sequence[Path], settings: dict[str, Any], todo: Sequence[Task]) -> list[dict[str, Any]]:
    """The rows of earlier `--json` files that are runs of `todo`, each naming its file; a file
    that cannot be read or whose settings differ from `settings` raises ValueError naming it and
    the setting. A run found in two files is taken from the first.
    """
    wanted = {(t.label, t.mode) for t in todo}
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for path in files:
        try:
            earlier = json.loads(path.read_text(encoding="utf-8"))
            theirs = earlier["settings"]
            rows = earlier["rows"]
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise ValueError(f"{path}: not a suite --json file ({type(error).__name__}: {error})") from error
        for key in SAME_SETTINGS:
            if theirs.get(key, settings[key]) != settings[key]:
                raise ValueError(f"{path}: its {key} is {theirs.get(key)!r}, this run's is {settings[key]!r}")
        for row in rows:
            run_key = (row.get("scenario"), row.get("mode"))
            if run_key in wanted and run_key not in out:
                out[run_key] = {**row, "reused_from": str(path)}
    return list(out.values())


def code_commit() -> str:
    """The git commit of the code this suite runs (with `+changes` when the tree differs), or
    "unknown" outside a git checkout."""
    here = Path(__file__).resolve().parents[1]
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=here, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=here,
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{head}+changes" if dirty else head


def _ratio(by_mode: dict[str, dict[str, Any]]) -> float | None:
    return _divide(by_mode.get("nodewright"), by_mode.get("karpenter"))


def _divide(top: dict[str, Any] | None, bottom: dict[str, Any] | None) -> float | None:
    """The ratio of two runs' total bills (compute + fee + autoscaler; compute alone in rows
    without a bill)."""
    if top is None or bottom is None or not _total(bottom):
        return None
    return round(_total(top) / _total(bottom), 4)


def _total(row: dict[str, Any]) -> float:
    return float(row.get("total_usd", row["cost_usd"]))


def _money(row: dict[str, Any] | None) -> str:
    return _field(row, "cost_usd", "{:.2f}")


def _field(row: dict[str, Any] | None, key: str, form: str) -> str:
    return "-" if row is None else form.format(row[key])


if __name__ == "__main__":
    sys.exit(main())
