"""The report of a run: summary.json, report.md, report.html (self-contained) and PNG plots.

The Markdown and HTML versions are rendered from the same list of blocks (headings, paragraphs,
tables, images, lists, preformatted text), so they always say the same thing. Plots use
matplotlib's Agg backend, imported here only, so the simulator runs without a display.
"""

from __future__ import annotations

import base64
import html
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nodewright.controllers.explain import Sources, event_rows, explain_node, explain_pod, status
from nodewright.model.duration import format_duration
from nodewright.simulator import metrics

if TYPE_CHECKING:
    from nodewright.simulator.world import World

PLOTS = ("nodes.png", "pending.png", "cost.png", "overview.png")
COLORS = {"spot": "#2a9d8f", "on-demand": "#e9c46a", "reserved": "#8ab17d", "unknown": "#999999"}


@dataclass(frozen=True, slots=True)
class Block:
    """One piece of the report: kind is h1, h2, h3, p, table, image, list, links or pre.

    An h3's `items[0]` is its anchor; a links block's `rows` are (text, anchor) pairs.
    """

    kind: str
    text: str = ""
    rows: tuple[tuple[str, ...], ...] = ()
    items: tuple[str, ...] = ()


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


# --- content ---------------------------------------------------------------------------------------


def _seconds(value: Any) -> str:
    return "-" if value is None else f"{float(value):.1f} s"


def _usd(value: float) -> str:
    return f"${value:,.2f}"


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
        ("nodes launched", f"{summary['nodes_launched']} ({_counts(summary['nodes_launched_by'])})"),
        ("nodes terminated", _counts(summary["nodes_terminated"]) or "0"),
        ("cost", _usd(summary["cost_usd"])),
        ("cost without consolidation", f"{_usd(summary['cost_without_consolidation_usd'])} (saved {_usd(saved)})"),
        ("pods moved by consolidation", _moves(summary["consolidation_moves"])),
        (
            "simulated EC2 fidelity",
            f"{fidelity['launches']} launches, {fidelity['launches_not_cheapest']} not the cheapest allowed "
            f"({fidelity['on_demand_not_cheapest']} on-demand); {fidelity['replaces']} consolidation replacements, "
            f"{fidelity['replaces_not_cheaper']} no cheaper, {fidelity['replaces_rolled_back']} rolled back",
        ),
        ("wall time", f"{summary['wall_seconds']:.1f} s for {format_duration(scenario.duration)} of virtual time"),
    ]
    for reporter, reasons in (summary.get("kube_events") or {}).items():
        # Event objects the cluster got, and the occurrences their series counted, by reason.
        shown = {f"{reason} ({n['occurrences']})": n["events"] for reason, n in reasons.items()}
        figures.append((f"Kubernetes Events from {reporter}: objects (occurrences)", _counts(shown)))
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
        items = ", ".join(f"{name} {_usd(usd)}" for name, usd in own["by_item_usd_per_month"].items())
        figures.append(("Nodewright's own AWS bill, per month at this pace", f"{_usd(own['usd_per_month'])} ({items})"))
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
            ("warning -> cordon (max)", _seconds(interruption["cordon_seconds_max"])),
            ("warning -> replacement requested (max)", _seconds(interruption["replacement_request_seconds_max"])),
            ("warning -> drained (max)", _seconds(interruption["drain_seconds_max"])),
        ]
    repair = summary.get("repair") or {}
    if repair.get("nodes_broken"):
        recovery = repair["recovery_seconds"]
        figures += [
            ("nodes broken (not recovered)", f"{repair['nodes_broken']} ({repair['not_recovered']})"),
            (
                "failure -> pods running elsewhere (p50 / max)",
                f"{_seconds(recovery['p50'])} / {_seconds(recovery['max'])}",
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
            if name != "overview.png":
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
                    _relative(record.cordoned_at, record.warning_at),
                    _relative(record.replacement_at, record.warning_at),
                    _relative(record.drained_at, record.warning_at),
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
                    _relative(broken.removed_at, broken.broke_at),
                    broken.removed_by or "-",
                    _relative(broken.recovered_at, broken.broke_at),
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
    blocks += _status_at_end(world)
    blocks += _explanations(world)
    blocks += _node_explanations(world)
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


def _moves(moves: dict[str, Any]) -> str:
    per = moves["pods_moved_per_dollar_saved"]
    rate = f"{per:g} per dollar saved" if per is not None else "nothing saved"
    return f"{moves['pods_moved']} ({rate}; saved {_usd(moves['saved_usd'])})"


def _counts(values: dict[str, int]) -> str:
    return ", ".join(f"{count} {name}" for name, count in values.items())


def _number(value: object) -> float:
    return float(value) if isinstance(value, (int, float)) else 0.0


def _relative(at: float | None, warning: float) -> str:
    return "-" if at is None else f"{at - warning:+.1f} s"


def _what_ran(world: World) -> list[Block]:
    scenario = world.scenario
    items = [
        f"virtual time: {format_duration(scenario.duration)} from {_iso(scenario.start)} (seed {scenario.seed})",
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


def _decisions(world: World) -> list[Block]:
    blocks = [Block("h2", "Decisions")]
    summary_rows: list[tuple[str, ...]] = [("function", "invocations", "lease busy", "decisions")]
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
                f"{decision.get('zone')} at ${_number(decision.get('price')):.4f}/h for "
                f"{len(pods) if isinstance(pods, list) else 0} pods, "
                f"out of {len(options) if isinstance(options, list) else 0} instance-type options"
            )
        blocks += [Block("p", "The first launch decisions:"), Block("list", items=tuple(items))]
    return blocks


# At most this many pods are explained: the lost first, then those a PDB held, those still
# pending at the end, and the displaced pods that waited longest.
EXPLAINED = 12
# Of the pods the functions evicted (a drain), this many are explained: what moved them.
EVICTED = 3


def _explanations(world: World) -> list[Block]:
    """`nodewright explain pod` for the pods a reader asks about, as the run left the world: each
    linked from a list naming why it was picked (lost, held, still pending, waited longest).
    """
    recorder = world.recorder
    start = world.scenario.start
    picked: dict[str, str] = {}
    for at, pod, node in recorder.lost:
        picked.setdefault(pod, f"lost on {node} at {format_duration(round(at))}")
    for at, pod, node in recorder.held_by_pdb:
        picked.setdefault(pod, f"held by a PDB on {node} until {format_duration(round(at))}")
    for pod, since in sorted(recorder.pending_since.items(), key=lambda item: item[1]):
        picked.setdefault(pod, f"still pending at the end (since {format_duration(round(since - start))})")
    evicted = [e for e in world.cluster.events() if e.event.reason == "Evicted"]
    for stored in evicted[:EVICTED]:
        ref = stored.event.regarding
        picked.setdefault(f"{ref.namespace}/{ref.name}", f"evicted at {format_duration(round(stored.first - start))}")
    for pod, waited in sorted(recorder.pending_by_pod.items(), key=lambda item: -item[1]):
        if waited < 1.0:
            break
        picked.setdefault(
            pod, f"moved off a removed node ({recorder.displaced.get(pod, 'other')}), pending {waited:.0f} s"
        )
    chosen = list(picked.items())[:EXPLAINED]
    if not chosen or world.store is None:
        return []
    src = _sources(world)
    blocks = [
        Block("h2", "Why: explanations"),
        Block(
            "p",
            "`nodewright explain pod` for the pods worth a look, as the run left the state table, the cluster, "
            "its Events and the functions' decision records (times from the start of the run).",
        ),
        Block("links", rows=tuple((f"{pod}: {why}", _anchor(pod)) for pod, why in chosen)),
    ]
    for pod, why in chosen:
        try:
            answer = explain_pod(src, pod)
        except LookupError as error:
            answer = {"pod": pod, "state": str(error)}
        blocks += [
            Block("h3", f"{pod}: {why}", items=(_anchor(pod),)),
            Block("pre", "\n".join(_explained(answer, world.scenario.start))),
        ]
    return blocks


# Of the nodes Nodewright launched still running at the end, this many are explained.
NODES_EXPLAINED = 3
# Node Events that make a node worth a look: the consolidator considered it and did not take it.
_NODE_VERDICTS = ("Unconsolidatable", "DisruptionBlocked")


def _node_explanations(world: World) -> list[Block]:
    """`nodewright explain node` for a few of Nodewright's nodes still running at the end: those
    the consolidator considered and left (an Unconsolidatable or DisruptionBlocked Event) first,
    then the newest, so a reader sees why each stays and what happens to it next.
    """
    if world.store is None:
        return []
    launched = {c.node_name: c.launched_at for c in world.store.claims() if c.node_name}
    running = [n.name for n in world.cluster.snapshot_unrecorded().nodes if n.name in launched]
    considered = {
        e.event.regarding.name
        for e in world.cluster.events()
        if e.event.regarding.kind == "Node" and e.event.reason in _NODE_VERDICTS
    }
    chosen = sorted(running, key=lambda n: (n not in considered, -launched[n], n))[:NODES_EXPLAINED]
    if not chosen:
        return []
    src = _sources(world)
    blocks = [
        Block("h2", "Why: nodes"),
        Block(
            "p",
            "`nodewright explain node` for Nodewright's nodes still running at the end: those the "
            "consolidator considered and left first, then the newest.",
        ),
    ]
    for name in chosen:
        answer = explain_node(src, name)
        blocks += [
            Block("h3", name, items=("explain-node-" + name.replace(".", "-"),)),
            Block("pre", "\n".join(_node_explained(answer, world.scenario.start))),
        ]
    return blocks


def _node_explained(answer: dict[str, Any], start: float) -> list[str]:
    """An explain-node answer as lines of text (times relative to `start`)."""
    claim = answer.get("claim") or {}
    lines = [
        f"claim {claim.get('name')} ({claim.get('state')}: {claim.get('instance_type') or '?'} "
        f"{claim.get('capacity_type') or '?'} in {claim.get('zone') or '?'})"
    ]
    why = answer.get("launched_because")
    if why:
        at = format_duration(round(float(why["at"]) - start)) if why.get("at") else "-"
        pods = why.get("pods")
        count = len(pods) if isinstance(pods, list) else pods
        lines.append(f"launched at {at} for {count} pods: {why.get('reason') or ''}".rstrip(": "))
    if "consolidatable" in answer:
        blocked = answer.get("blocked_by")
        lines.append("Consolidatable: True" if answer["consolidatable"] else f"Consolidatable: False ({blocked})")
    if answer.get("drifted"):
        lines.append(f"drifted: {answer['drifted']}")
    lines.append(f"next: {answer.get('next')}")
    for event in answer.get("events", [])[-3:]:
        lines.append(f"event {event['type']} {event['reason']}: {event['note']}")
    return lines


def _status_at_end(world: World) -> list[Block]:
    """`nodewright status` as the run left the world, and the NodeClaim objects `kubectl get
    nodeclaims` would list then.
    """
    if world.store is None:
        return []
    answer = status(_sources(world))
    start = world.scenario.start
    rows: list[tuple[str, ...]] = [("what", "now")]
    for function, last in sorted(answer["functions"].items()):
        at = format_duration(round(float(last["at"]) - start)) if last.get("at") else "-"
        rows.append((f"{function}: last decision", f"{last['decision']} at {at}"))
    in_flight = ", ".join(f"{c['name']} ({c['state']})" for c in answer["claims_in_flight"][:8])
    rows += [
        (
            "claims (in flight)",
            f"{answer['claims']} ({len(answer['claims_in_flight'])}{': ' if in_flight else ''}{in_flight})",
        ),
        (
            "disruption commands running",
            ", ".join(f"{c['id']} {c['method']} {c['state']}" for c in answer["commands"]) or "none",
        ),
        ("capacity-error cache", ", ".join(answer["capacity_errors"]) or "empty"),
        ("errors in the last hour", str(answer["errors_last_hour"])),
        ("Kubernetes requests in the last hour", str(answer["kube_requests_last_hour"])),
        ("claims' $/h", f"{answer['hourly_cost']:.4f}"),
    ]
    objects = getattr(world, "claim_objects", None)
    if objects is not None:
        ready = sum(
            1
            for o in objects.objects.values()
            for c in (o.get("status") or {}).get("conditions") or ()
            if c.get("type") == "Ready" and c.get("status") == "True"
        )
        rows.append(("NodeClaim objects (kubectl get nodeclaims)", f"{len(objects.objects)}, {ready} Ready"))
    return [Block("h2", "Status at the end (nodewright status)"), Block("table", rows=tuple(rows))]


def _sources(world: World) -> Sources:
    from nodewright.controllers.provisioning import pool_capacities

    assert world.store is not None
    scenario = world.scenario
    decisions = [
        {"function": function, **record}
        for function, observer in world.observers.items()
        for record in observer.decisions
    ]
    return Sources(
        store=world.store,
        snapshot=world.cluster.snapshot_unrecorded(),
        pools=pool_capacities(list(scenario.nodepools), dict(scenario.nodeclasses), world.catalog),
        now=world.clock.now(),
        decisions=decisions,
        events=event_rows(world.cluster.events()),
    )


def _anchor(pod: str) -> str:
    return "explain-" + "".join(c if c.isalnum() else "-" for c in pod)


def _explained(answer: dict[str, Any], start: float) -> list[str]:
    """An explain answer as lines of text (times relative to `start`)."""

    def at(value: Any) -> str:
        return format_duration(round(float(value) - start)) if value else "-"

    lines = [f"state: {answer.get('state')}" + (f" on {answer['node']}" if answer.get("node") else "")]
    if "pending_since" in answer:
        lines.append(f"pending since {at(answer['pending_since'])} ({answer['pending_seconds']:.0f} s)")
    claim = answer.get("claim")
    if claim:
        lines.append(
            f"held by claim {claim['name']} ({claim['state']}: {claim['instance_type'] or '?'} "
            f"{claim['capacity_type'] or '?'} in {claim['zone'] or '?'}); "
            f"node ready by {at(answer.get('node_ready_by'))}"
        )
    why = answer.get("why_not_scheduled")
    if why:
        if why.get("schedulable"):
            lines.append(f"a pass now would place it: {why.get('would_go_to') or why.get('would_launch')}")
        else:
            lines.append(f"no NodePool takes it: {why['reason']}")
    for record in answer.get("seen_by", [])[-3:]:
        lines.append(
            f"seen by a pass: {record['decision']} {record.get('nodeclaim', '')} {record.get('reason', '')}".rstrip()
        )
    for record in answer.get("moved_by", [])[-4:]:
        if "decision" in record:
            what = record.get("event") or record.get("method") or ""
            detail = record.get("reason") or record.get("detail") or record.get("action") or ""
            lines.append(f"moved by: {record.get('function', '')} {record['decision']} {what}: {detail}".rstrip(": "))
        else:
            lines.append(f"moved by: Event {record['reason']} at {at(record.get('first'))}: {record.get('note', '')}")
    for event in answer.get("events", [])[-5:]:
        count = f" x{event['count']}" if event.get("count", 1) > 1 else ""
        lines.append(f"event {event['type']} {event['reason']}{count} at {at(event.get('first'))}: {event['note']}")
    return lines


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
        "CreateFleet chose what to launch as EC2 does (nodewright/simulator/fleet.py): on-demand lowest-price "
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


def _iso(t: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M UTC")


# --- rendering --------------------------------------------------------------------------------------


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def to_markdown(blocks: Sequence[Block]) -> str:
    """The blocks as GitHub Markdown."""
    out: list[str] = []
    for block in blocks:
        if block.kind == "h1":
            out.append(f"# {block.text}\n")
        elif block.kind == "h2":
            out.append(f"## {block.text}\n")
        elif block.kind == "h3":
            out.append(f'<a id="{block.items[0]}"></a>\n\n### {block.text}\n')
        elif block.kind == "links":
            out.append("\n".join(f"- [{text}](#{anchor})" for text, anchor in block.rows) + "\n")
        elif block.kind == "p":
            out.append(f"{block.text}\n")
        elif block.kind == "list":
            out.append("\n".join(f"- {item}" for item in block.items) + "\n")
        elif block.kind == "table" and block.rows:
            header, *rows = block.rows
            lines = ["| " + " | ".join(_md_cell(c) for c in header) + " |", "|" + "---|" * len(header)]
            lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
            out.append("\n".join(lines) + "\n")
        elif block.kind == "image":
            caption = block.items[0] if block.items else block.text
            out.append(f"![{caption}]({block.text})\n")
        elif block.kind == "pre":
            out.append("```\n" + block.text.rstrip() + "\n```\n")
    return "\n".join(out)


_STYLE = """
body { font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; max-width: 1100px; margin: 2em auto;
       padding: 0 1em; color: #222; line-height: 1.45; }
h1 { border-bottom: 2px solid #2a9d8f; padding-bottom: .3em; }
h2 { margin-top: 1.6em; color: #264653; }
table { border-collapse: collapse; margin: .6em 0; font-size: 14px; }
th, td { border: 1px solid #ddd; padding: 4px 10px; text-align: left; vertical-align: top; }
th { background: #f3f6f6; }
img { max-width: 100%; border: 1px solid #eee; margin: .4em 0; }
figcaption { color: #555; font-size: 13px; margin-bottom: 1em; }
pre { background: #f7f7f7; padding: .8em; overflow-x: auto; font-size: 12px; }
"""


def to_html(blocks: Sequence[Block], directory: Path, title: str) -> str:
    """The blocks as one self-contained HTML page (images inlined)."""
    out = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>Nodewright simulation: {html.escape(title)}</title><style>{_STYLE}</style></head><body>",
    ]
    for block in blocks:
        text = html.escape(block.text)
        if block.kind in ("h1", "h2"):
            out.append(f"<{block.kind}>{text}</{block.kind}>")
        elif block.kind == "h3":
            out.append(f'<h3 id="{html.escape(block.items[0])}">{text}</h3>')
        elif block.kind == "links":
            links = (
                f'<li><a href="#{html.escape(anchor)}">{html.escape(label)}</a></li>' for label, anchor in block.rows
            )
            out.append("<ul>" + "".join(links) + "</ul>")
        elif block.kind == "p":
            out.append(f"<p>{text}</p>")
        elif block.kind == "list":
            out.append("<ul>" + "".join(f"<li>{html.escape(i)}</li>" for i in block.items) + "</ul>")
        elif block.kind == "table" and block.rows:
            header, *rows = block.rows
            head = "".join(f"<th>{html.escape(c)}</th>" for c in header)
            body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
            out.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        elif block.kind == "image":
            path = directory / block.text
            data = base64.b64encode(path.read_bytes()).decode() if path.exists() else ""
            caption = html.escape(block.items[0] if block.items else block.text)
            out.append(
                f'<figure><img alt="{caption}" src="data:image/png;base64,{data}"><figcaption>{caption}'
                "</figcaption></figure>"
            )
        elif block.kind == "pre":
            out.append(f"<pre>{text}</pre>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


# --- plots ------------------------------------------------------------------------------------------


def draw(world: World, directory: Path) -> list[Path]:
    """The PNG plots; returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    recorder = world.recorder
    samples = recorder.samples
    if not samples:
        return []
    hours = world.scenario.duration > 3 * 3600
    scale, unit = (3600.0, "hours") if hours else (60.0, "minutes")
    xs = [s.t / scale for s in samples]
    kinds = [k for k in ("spot", "on-demand", "reserved", "unknown") if any(s.nodes.get(k) for s in samples)]
    start = world.scenario.start
    warnings = sorted(r.warning_at - start for r in recorder.interruptions.values())
    rebalances = sorted(r.rebalance_at - start for r in recorder.interruptions.values() if r.rebalance_at is not None)
    consolidated = sorted(
        r.terminated_at - start
        for r in recorder.instances.values()
        if r.terminated_at is not None and r.terminated_by == "consolidation"
    )

    def nodes(ax: Any) -> None:
        series = [[s.nodes.get(k, 0) for s in samples] for k in kinds]
        if series:
            ax.stackplot(xs, *series, labels=kinds, colors=[COLORS[k] for k in kinds], alpha=0.9, step="post")
        ax.plot(xs, [s.booting for s in samples], color="#555", linestyle="--", linewidth=1, label="booting")
        ax.set_ylabel("nodes")
        marks(ax)
        ax.legend(loc="upper left", fontsize=8)

    def pending(ax: Any) -> None:
        ax.plot(xs, [s.pending for s in samples], color="#e76f51", linewidth=1.4, label="pending pods")
        ax.set_ylabel("pending pods", color="#e76f51")
        twin = ax.twinx()
        twin.plot(xs, [s.running for s in samples], color="#264653", linewidth=1, label="running pods")
        twin.set_ylabel("running pods", color="#264653")
        marks(ax)

    def cost(ax: Any) -> None:
        ax.step(xs, [s.hourly_cost for s in samples], where="post", color="#264653", linewidth=1.4)
        ax.set_ylabel("$ per hour")
        cumulative, total, last = [], 0.0, 0.0
        for sample in samples:
            total += sample.hourly_cost * (sample.t - last) / 3600
            last = sample.t
            cumulative.append(total)
        twin = ax.twinx()
        twin.plot(xs, cumulative, color="#f4a261", linewidth=1, linestyle=":")
        twin.set_ylabel("cumulative $", color="#f4a261")
        marks(ax)

    def marks(ax: Any) -> None:
        for t in rebalances:
            ax.axvline(t / scale, color="#f4a261", alpha=0.5, linewidth=0.8, linestyle=":")
        for t in warnings:
            ax.axvline(t / scale, color="#d62828", alpha=0.35, linewidth=0.8)
        if consolidated:
            top = ax.get_ylim()[1]
            ax.plot([t / scale for t in consolidated], [top * 0.97] * len(consolidated), "v", color="#2b9348", ms=4)
        ax.grid(alpha=0.25)

    files = []
    for name, painter, title in (
        ("nodes.png", nodes, "Nodes by capacity type"),
        ("pending.png", pending, "Pods"),
        ("cost.png", cost, "Cost"),
    ):
        figure, ax = plt.subplots(figsize=(10, 3.6), dpi=100)
        painter(ax)
        ax.set_title(f"{world.scenario.name}: {title}", fontsize=11)
        ax.set_xlabel(unit)
        figure.tight_layout()
        path = directory / name
        figure.savefig(path)
        plt.close(figure)
        files.append(path)
    figure, axes = plt.subplots(3, 1, figsize=(10, 8.4), dpi=100, sharex=True)
    nodes(axes[0])
    pending(axes[1])
    cost(axes[2])
    axes[0].set_title(f"Nodewright simulation: {world.scenario.name}", fontsize=12)
    axes[2].set_xlabel(unit)
    figure.tight_layout()
    path = directory / "overview.png"
    figure.savefig(path)
    plt.close(figure)
    files.append(path)
    return files
