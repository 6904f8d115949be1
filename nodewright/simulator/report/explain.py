"""The report's explanations: why pods waited, why nodes stayed, and the status at the end.

Role: the blocks of `nodewright.simulator.report` that ask `nodewright.controllers.explain` what
`nodewright explain` would answer (over the run's recorded decisions, claims and Events): the pods
that waited longest or were evicted most, the nodes consolidation left alone, and what
`nodewright status` shows at the end of the run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nodewright.controllers.explain import Sources, event_rows, explain_node, explain_pod, status
from nodewright.controllers.observe import RecordingObserver
from nodewright.model.duration import format_duration

if TYPE_CHECKING:
    from nodewright.simulator.world import World
from nodewright.simulator.report.render import (
    Block,
)

# At most this many pods are explained: the lost first, then those a PDB held, those still
# pending at the end, and the displaced pods that waited longest.
EXPLAINED = 12


# Of the pods the functions evicted (a drain), this many are explained: what moved them.
EVICTED = 3


def pod_explanations(world: World) -> list[Block]:
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


def node_explanations(world: World) -> list[Block]:
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


def status_at_end(world: World) -> list[Block]:
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
    from nodewright.controllers.provisionoptions import pool_capacities

    assert world.store is not None
    scenario = world.scenario
    # Each record with the time it was logged (`at`, as Logs Insights gives it) unless it says.
    decisions = [
        {"function": function, **({"at": at} if at is not None else {}), **record}
        for function, observer in world.observers.items()
        for record, at in zip(observer.decisions, _stamps(observer), strict=True)
    ]
    return Sources(
        claim_records=world.store,
        command_records=world.store,
        offering_blocks=world.store,
        snapshot=world.cluster.snapshot_unrecorded(),
        pools=pool_capacities(list(scenario.nodepools), dict(scenario.nodeclasses), world.catalog),
        now=world.clock.now(),
        decisions=decisions,
        events=event_rows(world.cluster.events()),
    )


def _stamps(observer: RecordingObserver) -> list[float | None]:
    """When each of an observer's decisions was kept (None where it was not stamped)."""
    times: list[float | None] = list(observer.times)
    return times if len(times) == len(observer.decisions) else [None] * len(observer.decisions)


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
