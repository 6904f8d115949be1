"""The report of a run: summary.json, report.md, report.html (self-contained) and PNG plots.

The Markdown and HTML versions are rendered from the same list of blocks (headings, paragraphs,
tables, images, lists, preformatted text), so they always say the same thing. Plots use
matplotlib's Agg backend, imported in `plots.draw` only, so the simulator runs without a
display.

Files: this one writes the report (`write_report`) and builds its content (the run, faults,
decisions, fidelity, method); `explain.py` the explanations of pods and nodes and the
status at the end; `render.py` the blocks and their Markdown and HTML; `plots.py`
the PNG plots.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nodewright.model.duration import format_duration
from nodewright.simulator.report import metrics

if TYPE_CHECKING:
    from nodewright.simulator.world import World
from nodewright.simulator.report.explain import (
    EVICTED,
    EXPLAINED,
    NODES_EXPLAINED,
    node_explanations,
    pod_explanations,
    status_at_end,
)
from nodewright.simulator.report.plots import (
    COLORS,
    PLOTS,
    draw,
)
from nodewright.simulator.report.render import (
    Block,
    as_number,
    format_counts,
    format_iso,
    format_moves,
    format_relative,
    format_seconds,
    format_usd,
    to_html,
    to_markdown,
)

__all__ = [
    "COLORS",
    "EVICTED",
    "EXPLAINED",
    "NODES_EXPLAINED",
    "PLOTS",
    "Block",
    "draw",
    "to_html",
    "to_markdown",
]


def write_report(world: World, summary: dict[str, Any], directory: Path, *, plots: bool = True) -> list[Path]:
    """Write every file of the report into `directory`; returns their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    files = []
    path = directory / "summary.json"
    path.write_text(json.dumps(summary, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    files.append(path)
    images: list[Path] = []
    if plots:
        images = draw(world, directory)
        files += images
    blocks = build(world, summary, [p.name for p in images])
    md = directory / "report.md"
    md.write_text(to_markdown(blocks), encoding="utf-8")
    page = directory / "report.html"
    page.write_text(to_html(blocks, directory, world.scenario.name), encoding="utf-8")
    return [*files, md, page]


def build(world: World, summary: dict[str, Any], images: Sequence[str]) -> list[Block]:
    """The report's blocks."""
    scenario = world.scenario
    recorder = world.recorder
    end = world.end
    blocks = [Block("h1", f"Simulation: {scenario.name}")]
    if scenario.description:
        blocks.append(Block("p", scenario.description))
    pending = summary["pending_seconds"]
    launch = summary["pending_to_launch_seconds"]
    interruption = summary["interruption"]
    saved = summary["cost_without_consolidation_usd"] - summary["cost_usd"]
    fidelity = summary["fidelity"]
    figures = [
        ("pods lost", str(summary["pods_lost"])),
        ("pods a PDB held on an interrupted node until it went", str(summary["pods_held_by_pdb_at_interruption"])),
        ("PDB violations", str(summary["pdb_violations"])),
        ("do-not-disrupt violations", str(summary["do_not_disrupt_violations"])),
        ("NodePool limit violations", str(summary["limit_violations"])),
        (
            "pending -> bound (p50 / p95 / p99)",
            f"{pending['p50']:.1f} / {pending['p95']:.1f} / {pending['p99']:.1f} s over {pending['count']} pods",
        ),
        ("pods still pending at the end", f"{summary['pods_pending_at_end']} of {summary['pods_created']} created"),
        (
            "pending -> CreateFleet (p50 / p95 / p99)",
            f"{launch['p50']:.1f} / {launch['p95']:.1f} / {launch['p99']:.1f} s over {launch['count']} pods",
        ),
        ("nodes launched", f"{summary['nodes_launched']} ({format_counts(summary['nodes_launched_by'])})"),
        ("nodes terminated", format_counts(summary["nodes_terminated"]) or "0"),
        ("cost", format_usd(summary["cost_usd"])),
        ("cost without consolidation", _without_consolidation(summary, saved)),
        ("pods moved by consolidation", format_moves(summary["consolidation_moves"])),
        (
            "simulated EC2 fidelity (did the simulated EC2 launch what real EC2 would?)",
            f"{fidelity['launches']} launches, {fidelity['launches_not_cheapest']} not the cheapest allowed "
            f"({fidelity['on_demand_not_cheapest']} on-demand); {fidelity['replaces']} consolidation replacements, "
            f"{fidelity['replaces_not_cheaper']} no cheaper, {fidelity['replaces_rolled_back']} rolled back",
        ),
        ("wall time", f"{summary['wall_seconds']:.1f} s for {format_duration(scenario.duration)} of virtual time"),
    ]
    for reporter, reasons in (summary.get("kube_events") or {}).items():
        # Event objects the cluster got, and the occurrences their series counted, by reason.
        shown = {f"{reason} ({n['occurrences']})": n["events"] for reason, n in reasons.items()}
        figures.append((f"Kubernetes Events from {reporter}: objects (occurrences)", format_counts(shown)))
    displaced = summary["displaced_pending_seconds"]
    for cause, label in (("interruption", "interrupted nodes"), ("other", "other removed nodes")):
        waited = displaced[cause]
        if waited["count"]:
            figures.insert(
                6,
                (
                    f"pods moved off {label}: pending (p50 / p95 / max)",
                    f"{waited['p50']:.1f} / {waited['p95']:.1f} / {waited['max']:.1f} s over {waited['count']} pods",
                ),
            )
    consolidator = Counter(str(d.get("decision")) for d in world.observers["consolidator"].decisions)
    if consolidator["disruption"] or consolidator["disruption-dropped"]:
        # `disruption` is logged once a command passed validation; dropped ones never get there.
        started = consolidator["disruption"]
        figures.append(
            (
                "consolidation commands",
                f"{started + consolidator['disruption-dropped']} decided: {consolidator['disruption-dropped']} "
                f"dropped at validation, {started} started ({consolidator['disruption-done']} done, "
                f"{consolidator['disruption-aborted']} aborted, {consolidator['disruption-rolled-back']} rolled back)",
            )
        )
    own = summary.get("self_cost")
    if own:
        items = ", ".join(f"{name} {format_usd(usd)}" for name, usd in own["by_item_usd_per_month"].items())
        figures.append(
            ("Nodewright's own AWS bill, per month at this pace", f"{format_usd(own['usd_per_month'])} ({items})")
        )
    api = summary.get("kube_api")
    if api:
        figures.append(
            (
                "Kubernetes API load (the functions, over HTTP)",
                f"{api['requests']} requests, {api['bytes'] / 1e6:.1f} MB; "
                f"{api['requests_per_minute']:.1f} requests and {api['bytes_per_minute'] / 1e3:.0f} KB a minute",
            )
        )
    if summary["provisioner_launches_for_consolidated_pods"]:
        figures.append(
            (
                "provisioner launches for pods of nodes being consolidated",
                str(summary["provisioner_launches_for_consolidated_pods"]),
            )
        )
    if interruption["instances"]:
        figures[4:4] = [
            ("spot instances interrupted", str(interruption["instances"])),
            ("warning -> cordon (max)", format_seconds(interruption["cordon_seconds_max"])),
            ("warning -> replacement requested (max)", format_seconds(interruption["replacement_request_seconds_max"])),
            ("warning -> drained (max)", format_seconds(interruption["drain_seconds_max"])),
        ]
    repair = summary.get("repair") or {}
    if repair.get("nodes_broken"):
        recovery = repair["recovery_seconds"]
        figures += [
            ("nodes broken (not recovered)", f"{repair['nodes_broken']} ({repair['not_recovered']})"),
            (
                "failure -> pods running elsewhere (p50 / max)",
                f"{format_seconds(recovery['p50'])} / {format_seconds(recovery['max'])}",
            ),
        ]
    blocks += [Block("h2", "Key figures"), Block("table", rows=(("figure", "value"), *figures))]
    if summary["warnings"]:
        blocks += [Block("h2", "Warnings"), Block("list", items=tuple(summary["warnings"]))]
    if images:
        blocks.append(Block("h2", "Plots"))
        captions = {
            "overview.png": "Nodes by capacity type, pending pods and $/h over time",
            "nodes.png": "Ready nodes by capacity type (dotted orange: rebalance recommendations, red: spot "
            "interruption warnings, green triangles: nodes removed by consolidation)",
            "pending.png": "Pending and running pods",
            "cost.png": "Cost per hour and cumulative cost",
        }
        for name in images:
            blocks.append(Block("image", text=name, items=(captions.get(name, name),)))
    blocks += _what_ran(world)
    blocks += _decisions(world)
    blocks += _fidelity(world)
    if recorder.interruptions:
        rows: list[tuple[str, ...]] = [
            ("instance", "node", "warning at", "cordon", "replacement", "drained", "pods at reclaim")
        ]
        for record in sorted(recorder.interruptions.values(), key=lambda r: r.warning_at):
            rows.append(
                (
                    record.instance_id,
                    record.node,
                    format_duration(round(record.warning_at - scenario.start)),
                    format_relative(record.cordoned_at, record.warning_at),
                    format_relative(record.replacement_at, record.warning_at),
                    format_relative(record.drained_at, record.warning_at),
                    str(record.pods_at_reclaim),
                )
            )
        blocks += [
            Block("h2", "Interrupted spot instances"),
            Block("p", "Seconds from each instance's interruption warning (negative: before it, on the rebalance)."),
            Block("table", rows=tuple(rows[:101])),
        ]
    if recorder.repairs:
        rows = [("node", "failure", "at", "pods", "removed after", "by", "pods elsewhere after")]
        for broken in sorted(recorder.repairs.values(), key=lambda r: r.broke_at):
            rows.append(
                (
                    broken.node,
                    broken.cause,
                    format_duration(round(broken.broke_at - scenario.start)),
                    str(broken.pods),
                    format_relative(broken.removed_at, broken.broke_at),
                    broken.removed_by or "-",
                    format_relative(broken.recovered_at, broken.broke_at),
                )
            )
        blocks += [
            Block("h2", "Broken nodes"),
            Block(
                "p",
                "Seconds from each failure to the node's removal and to its pods running elsewhere (the node "
                "holding no workload pod, every pod displaced from it bound again).",
            ),
            Block("table", rows=tuple(rows[:101])),
        ]
    if recorder.violations:
        rows = [("at", "kind", "pod", "node", "how", "budget")]
        rows += [
            (format_duration(round(v.at)), v.kind, v.pod, v.node, v.how, v.budget) for v in recorder.violations[:50]
        ]
        blocks += [Block("h2", "Violations"), Block("table", rows=tuple(rows))]
    if recorder.lost:
        lost = Counter(node for _, _, node in recorder.lost)
        blocks += [
            Block("h2", "Pods lost"),
            Block("list", items=tuple(f"{count} on {node}" for node, count in lost.most_common(20))),
        ]
    if recorder.held_by_pdb:
        rows = [("at", "pod", "node")]
        rows += [(format_duration(round(at)), pod, node) for at, pod, node in recorder.held_by_pdb[:100]]
        blocks += [
            Block("h2", "Pods a PodDisruptionBudget held on an interrupted node until it went"),
            Block(
                "p",
                "Their budget refused every eviction from the node's first signal until the instance was "
                "taken: no drain could have moved them in time. Counted apart from the pods lost.",
            ),
            Block("table", rows=tuple(rows)),
        ]
    blocks += _faults(summary)
    blocks += status_at_end(world)
    blocks += pod_explanations(world)
    blocks += node_explanations(world)
    if recorder.errors:
        blocks.append(Block("h2", f"Handler errors ({len(recorder.errors)})"))
        for error in recorder.errors[:3]:
            blocks.append(Block("p", f"{error['function']} at {error['at']} s: {error['error']}"))
            blocks.append(Block("pre", error["trace"]))
    blocks += _method(world, end)
    return blocks


def _faults(summary: dict[str, Any]) -> list[Block]:
    """The faults injected (the scenario's `faults:`), what each kind cost, and the audit of
    duplicate and orphan instances and claims.
    """
    faults = summary.get("faults") or {}
    by_kind = faults.get("by_kind") or {}
    audit = faults.get("audit") or {}
    if not by_kind:
        return []
    rows: list[tuple[str, ...]] = [("kind", "injected", "retries", "delay", "invocations failed after it")]
    for kind, tally in by_kind.items():
        rows.append(
            (
                kind,
                str(tally["injected"]),
                str(tally["retries"]),
                f"{tally['delay_seconds']:.1f} s",
                str(tally["failed_invocations"]),
            )
        )
    spot = faults.get("spot_interruptions")
    if spot:
        rows.append(("spot interruption (nodes)", f"{spot['hit']} of {spot['asked']} asked", "", "", ""))
    duplicates = audit.get("duplicate_instances") or {}
    found = [
        f"claims with more than one instance: {len(duplicates)}"
        + (f" ({', '.join(sorted(duplicates)[:5])})" if duplicates else ""),
        f"orphan instances: {len(audit.get('orphan_instances') or [])}",
        f"orphan claims: {len(audit.get('orphan_claims') or [])}",
    ]
    when = f"at {format_duration(round(audit.get('at_seconds', 0)))}"
    note = f" ({audit['note']})" if audit.get("note") else " (15 minutes after the last fault window closed)"
    return [
        Block("h2", "Faults injected"),
        Block("table", rows=tuple(rows)),
        Block("p", f"Audit {when}{note}:"),
        Block("list", items=tuple(found)),
    ]


def _what_ran(world: World) -> list[Block]:
    scenario = world.scenario
    items = [
        f"virtual time: {format_duration(scenario.duration)} from {format_iso(scenario.start)} (seed {scenario.seed})",
        f"zones: {', '.join(scenario.zones)}; node boot delay {format_duration(scenario.boot_delay)}",
        "NodePools: "
        + ", ".join(
            f"{p.name} (limits {dict(p.limits.format()) if p.limits else 'none'}, rebalance {p.rebalance_policy})"
            for p in scenario.nodepools
        ),
    ]
    for workload in scenario.workloads:
        requests = workload.template.requests.format()
        shape = ", ".join(f"{k} {v}" for k, v in requests.items() if k != "pods")
        plan = _plan(workload)
        items.append(f"{workload.kind} {workload.key}: {shape} per pod; replicas {plan}")
    for daemonset in scenario.daemonsets:
        items.append(f"DaemonSet {daemonset.namespace}/{daemonset.name}")
    for pdb in scenario.pdbs:
        budget = (
            f"minAvailable {pdb.min_available}"
            if pdb.min_available is not None
            else f"maxUnavailable {pdb.max_unavailable}"
        )
        items.append(f"PodDisruptionBudget {pdb.namespace}/{pdb.name}: {budget}")
    for interruption in scenario.interruptions:
        what = (
            f"{interruption.count} spot nodes"
            if interruption.count
            else f"{interruption.fraction or 0:.0%} of spot nodes"
        )
        items.append(
            f"spot interruptions at {format_duration(interruption.at)}: {what} within "
            f"{format_duration(interruption.within)}; rebalance {format_duration(interruption.rebalance_lead)} "
            f"before the warning: {'yes' if interruption.rebalance else 'no'}; terminated "
            f"{format_duration(interruption.notice)} after it"
        )
    for error in scenario.capacity_errors:
        until = format_duration(error.end) if error.end is not None else "the end"
        items.append(
            f"no capacity ({error.code}) for {error.capacity_type} {error.instance_type} in {error.zone} "
            f"from {format_duration(error.start)} to {until}"
        )
    items.append(
        f"functions: provisioner every {format_duration(scenario.provisioner.rate)} "
        f"(timeout {format_duration(scenario.provisioner.timeout)}), consolidator "
        + (
            "off"
            if scenario.consolidation == "off"
            else f"every {format_duration(scenario.consolidator.rate)} ({scenario.consolidation} consolidation, "
            f"stability guard ${scenario.consolidation_min_savings:g}/h and "
            f"{scenario.consolidation_min_savings_percent:g}%)"
        )
        + f", interruption on the queue (timeout {format_duration(scenario.interruption.timeout)})"
    )
    return [Block("h2", "What ran"), Block("list", items=tuple(items))]


def _plan(workload: Any) -> str:
    if not workload.schedule:
        return str(workload.replicas)
    parts = []
    for segment in workload.schedule:
        if segment.diurnal is not None:
            curve = segment.diurnal
            parts.append(
                f"from {format_duration(segment.at)} daily curve {curve.minimum}-{curve.maximum} "
                f"(peak at {format_duration(curve.peak)}, every {format_duration(curve.every)})"
            )
        else:
            parts.append(f"{segment.replicas} at {format_duration(segment.at)}")
    return "; ".join(parts)


# One line for each decision record a newcomer meets first (the rest are named for what they do).
DECISION_WORDS = {
    "lease-busy": "an invocation found the previous one still running and exited at once (normal)",
    "disruption-rejected": "a node consolidation looked at and kept, with why (see 'Why: nodes')",
    "disruption-dropped": "a consolidation plan dropped when re-checked before acting",
    "disruption": "a consolidation, drift, expiry or repair command: nodes replaced or deleted",
    "unschedulable": "a pod no NodePool can hold as it asks (the reason says why)",
    "capacity-error": "EC2 had no capacity for some offerings; they are avoided for a while",
    "launch": "a node launched for pending pods",
    "idle-exit": "the provisioner ended early: no pod waited (the deploy key provisionerIdleExitSeconds)",
    "mirror": "NodeClaim objects written for kubectl",
    "nodepool-refused": "a NodePool held back: its EC2NodeClass names a node role the stack may not pass",
}


def _without_consolidation(summary: dict[str, Any], saved: float) -> str:
    """What the run would have cost without consolidation, and the saving only when it consolidated."""
    cost = format_usd(summary["cost_without_consolidation_usd"])
    if not summary["consolidation_moves"]["pods_moved"] and not summary["nodes_terminated"].get("consolidation"):
        return f"{cost} (nothing was consolidated: no saving to claim)"
    return f"{cost} (saved {format_usd(saved)})"


def _decisions(world: World) -> list[Block]:
    blocks = [Block("h2", "Decisions")]
    summary_rows: list[tuple[str, ...]] = [
        ("function", "invocations", "lease busy (exited: the previous invocation still ran)", "decisions")
    ]
    for name, observer in world.observers.items():
        kinds = Counter(str(d.get("decision")) for d in observer.decisions)
        summary_rows.append(
            (
                name,
                str(world.recorder.invocations.get(name, 0)),
                str(world.recorder.busy.get(name, 0)),
                ", ".join(f"{k} {v}" for k, v in kinds.most_common()) or "-",
            )
        )
    blocks.append(Block("table", rows=tuple(summary_rows)))
    seen = {str(d.get("decision")) for observer in world.observers.values() for d in observer.decisions}
    glossary = [f"{kind}: {DECISION_WORDS[kind]}" for kind in sorted(seen) if kind in DECISION_WORDS]
    if glossary:
        blocks += [Block("p", "What the decision records mean:"), Block("list", items=tuple(glossary))]
    launches: Counter[tuple[str, str]] = Counter()
    for record in world.recorder.instances.values():
        launches[(record.instance_type, record.capacity_type)] += 1
    if launches:
        rows = [("instance type", "capacity type", "launched")]
        rows += [(t, c, str(n)) for (t, c), n in launches.most_common(15)]
        blocks += [Block("p", "Instance types launched (most used first):"), Block("table", rows=tuple(rows))]
    examples = [d for d in world.observers["provisioner"].decisions if d.get("decision") == "launch"][:5]
    if examples:
        items = []
        for decision in examples:
            pods = decision.get("pods") or []
            options = decision.get("instance_type_options") or []
            items.append(
                f"{decision.get('nodeclaim')}: {decision.get('instance_type')} {decision.get('capacity_type')} in "
                f"{decision.get('zone')} at ${as_number(decision.get('price')):.4f}/h for "
                f"{len(pods) if isinstance(pods, list) else 0} pods, "
                f"out of {len(options) if isinstance(options, list) else 0} instance-type options"
            )
        blocks += [Block("p", "The first launch decisions:"), Block("list", items=tuple(items))]
    return blocks


def _fidelity(world: World) -> list[Block]:
    """The simulated EC2 audited: launches against the cheapest allowed, replacements against
    what they replace and what was promised.
    """
    recorder = world.recorder
    launches = recorder.fleet_launches
    blocks = [Block("h2", "Fidelity of the simulated EC2")]
    by: Counter[tuple[str, str]] = Counter()
    odd: Counter[tuple[str, str]] = Counter()
    for audit in launches:
        by[(audit.capacity_type, audit.strategy)] += 1
        if not audit.cheapest:
            odd[(audit.capacity_type, audit.strategy)] += 1
    rows: list[tuple[str, ...]] = [("capacity type", "allocation strategy", "launches", "not the cheapest allowed")]
    rows += [(ct, strategy, str(n), str(odd[(ct, strategy)])) for (ct, strategy), n in sorted(by.items())]
    blocks += [
        Block(
            "p",
            "Each instance CreateFleet started, against the cheapest override its request allowed that EC2 had "
            "capacity for (on-demand lowest-price must launch it; spot price-capacity-optimized may prefer a "
            "deeper pool).",
        ),
        Block("table", rows=tuple(rows)),
    ]
    dearer = [a for a in launches if not a.cheapest]
    if dearer:
        rows = [("at", "capacity type", "launched", "$/h", "cheapest allowed", "$/h")]
        rows += [
            (
                format_duration(round(a.at)),
                a.capacity_type,
                f"{a.instance_type} {a.zone}",
                f"{a.price:.4f}",
                f"{a.cheapest_type} {a.cheapest_zone}",
                f"{a.cheapest_price:.4f}",
            )
            for a in dearer[:20]
        ]
        blocks += [
            Block("p", "Launches that were not the cheapest allowed (first 20):"),
            Block("table", rows=tuple(rows)),
        ]
    if recorder.replaces:
        rows = [("at", "command", "replaced $/h", "promised $/h", "came up", "$/h", "outcome")]
        rows += [
            (
                format_duration(round(r.at)),
                r.command,
                f"{r.replaced_price:.4f}",
                f"{r.promised_price:.4f}",
                ", ".join(r.launched_types) or "-",
                f"{r.launched_price:.4f}",
                "rolled back" if r.rolled_back else ("cheaper" if r.cheaper else "NO CHEAPER"),
            )
            for r in recorder.replaces[:30]
        ]
        blocks += [
            Block("p", "Consolidation replacements: what the replaced nodes cost, what was promised, what came up:"),
            Block("table", rows=tuple(rows)),
        ]
    return blocks


def _method(world: World, end: float) -> list[Block]:
    del end
    notes = (
        "The real Lambda handlers (functions/*/handler.py) ran against moto (EC2, DynamoDB, SQS, EventBridge, "
        "in-process) and the in-memory cluster, on a virtual clock; invocations overlap as concurrent Lambdas do.",
        "Spot interruptions were put on EventBridge as EC2 does and travelled the stack's rules to the SQS queue and "
        "the interruption handler; capacity errors were EC2's documented CreateFleet errors.",
        "The kube-scheduler stand-in binds pods with the scheduling engine's predicates; a kubelet stand-in turns "
        "each instance into a Ready node after the boot delay, with the labels and taints of its user data.",
        "Prices are the bundled catalog's estimates (on-demand per family; spot at 35% of on-demand).",
        "CreateFleet chose what to launch as EC2 does (nodewright/simulator/standins/fleet.py): on-demand lowest-price "
        "across every override of every launch-template config, spot price-capacity-optimized over a capacity "
        "depth drawn per (instance type, zone) pool from the seed; pools that run short fail with "
        "InsufficientInstanceCapacity.",
        "Reads of node claims come from a write-through mirror of the DynamoDB state table (every write goes to "
        "DynamoDB first); the mirror was compared with the table at the end.",
    )
    definitions = tuple(line.strip("* ").strip() for line in (metrics.__doc__ or "").split("\n* ")[1:] if line.strip())
    return [
        Block("h2", "How it was simulated"),
        Block("list", items=notes),
        Block("h2", "Definitions"),
        Block("list", items=tuple(" ".join(d.split()) for d in definitions)),
    ]
