"""Headroom: CapacityBuffers as virtual pods, for the provisioner and for consolidation. Pure.

A CapacityBuffer (`nodewright.model.capacitybuffer`) becomes N *virtual pods*, copies of its
chunk's pod, as SIG Autoscaling's Cluster Autoscaler and Karpenter's design make them:

* the chunk is the PodTemplate `podTemplateRef` names, or a pod of the workload `scalableRef`
  names (found among the cluster's pods by owner: a Deployment's through its ReplicaSets
  `<name>-<pod-template-hash>`, other kinds directly), whose live pods are also the workload's
  current replicas for `percentage`;
* N is `replicas`, or `percentage` of the current replicas rounded up (at least 1 when above 0),
  the larger when both are set, cut to what fits in `limits` (the chunks' total requests), or
  only what fits in `limits` when neither is set;
* each carries the buffer's labels (`autoscaling.x-k8s.io/buffer`, `-namespace`), the lowest
  priority, and no node: it is pending as far as the engines are concerned.

Virtual pods never reach the cluster: nothing but the engines sees them. The provisioner solves for
them after the real pending pods (so real pods always come first and take any room first), and
launches what they do not fit in; kube-scheduler, which never sees them, puts a burst of real pods
straight into that room. Consolidation counts the room as used: `hold_buffers` places the
virtual pods on the existing nodes (one `solve()` with no NodePools) and hands the engine a
snapshot in which they are bound there, so a node holding buffer room is not empty, and removing
it means finding that room elsewhere, as for any pod. Those copies carry only the buffer labels,
so no PodDisruptionBudget or topology constraint of real pods counts them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from nodewright.engine.scheduling import SolverCache, Strategy, solve
from nodewright.engine.scheduling.inputs import existing_nodes_input
from nodewright.model.capacitybuffer import (
    ACTIVE_CAPACITY,
    BUFFER_LABEL,
    BUFFER_NAMESPACE_LABEL,
    CapacityBuffer,
    PodTemplate,
)
from nodewright.model.pod import Pod
from nodewright.model.snapshot import ClusterSnapshot
from nodewright.model.standby import STANDBY_CAPACITY

OWNER_KIND = "CapacityBuffer"
LOWEST_PRIORITY = -(2**31)
_TEMPLATE_HASH = "pod-template-hash"


@dataclass(frozen=True, slots=True)
class BufferPods:
    """The virtual pods of every buffer, and why a buffer has none (buffer `ns/name` -> reason)."""

    pods: tuple[Pod, ...] = ()
    problems: Mapping[str, str] = field(default_factory=dict)


def is_virtual(pod: Pod) -> bool:
    """True for a buffer's virtual pod."""
    return pod.owner_kind == OWNER_KIND and BUFFER_LABEL in pod.labels


def workload_pods(buffer: CapacityBuffer, pods: Sequence[Pod]) -> list[Pod]:
    """The live pods of the workload `buffer.scalable_ref` names, in its namespace, by name."""
    ref = buffer.scalable_ref
    if ref is None:
        return []
    out = []
    for pod in pods:
        if pod.namespace != buffer.namespace or pod.terminal or pod.deleting or is_virtual(pod):
            continue
        if ref.kind == "Deployment":
            owned = pod.owner_kind == "ReplicaSet" and pod.owner_name.startswith(f"{ref.name}-")
            template_hash = pod.labels.get(_TEMPLATE_HASH)
            if owned and template_hash is not None:
                owned = pod.owner_name == f"{ref.name}-{template_hash}"
        else:
            owned = pod.owner_kind == ref.kind and pod.owner_name == ref.name
        if owned:
            out.append(pod)
    return sorted(out, key=lambda p: p.name)


def chunks(buffer: CapacityBuffer, chunk: Pod, current: int) -> int:
    """How many chunks `buffer` keeps room for (see the module docstring)."""
    wanted: int | None = None
    if buffer.replicas is not None:
        wanted = buffer.replicas
    if buffer.percentage is not None and buffer.scalable_ref is not None:
        share = math.ceil(current * buffer.percentage / 100)
        if buffer.percentage > 0:
            share = max(1, share)
        wanted = share if wanted is None else max(wanted, share)
    if buffer.limits is not None:
        fits = [buffer.limits[k] // chunk.requests[k] for k in buffer.limits if chunk.requests[k] > 0]
        room = min(fits) if fits else 0
        wanted = room if wanted is None else min(wanted, room)
    return max(0, wanted or 0)


def buffer_pods(buffers: Sequence[CapacityBuffer], templates: Sequence[PodTemplate], pods: Sequence[Pod]) -> BufferPods:
    """The virtual pods of `buffers` (PodTemplates from `templates`, workloads from `pods`)."""
    by_name = {(t.namespace, t.name): t.pod for t in templates}
    out: list[Pod] = []
    problems: dict[str, str] = {}
    for buffer in sorted(buffers, key=lambda b: (b.namespace, b.name)):
        key = f"{buffer.namespace}/{buffer.name}"
        if buffer.provisioning_strategy == STANDBY_CAPACITY:
            continue  # kept as stopped instances (`engine.standby`), not as running room
        if buffer.provisioning_strategy != ACTIVE_CAPACITY:
            problems[key] = f"provisioningStrategy {buffer.provisioning_strategy} is not Nodewright's to act on"
            continue
        chunk: Pod | None
        current = 0
        if buffer.pod_template_ref is not None:
            chunk = by_name.get((buffer.namespace, buffer.pod_template_ref))
            if chunk is None:
                problems[key] = f"PodTemplate {buffer.namespace}/{buffer.pod_template_ref} is not in the configuration"
                continue
        else:
            found = workload_pods(buffer, pods)
            ref = buffer.scalable_ref
            if not found or ref is None:
                what = f"{ref.kind} {buffer.namespace}/{ref.name}" if ref is not None else "its workload"
                problems[key] = f"no live pod of {what} to take the chunk's shape from"
                continue
            chunk, current = found[0], len(found)
        count = chunks(buffer, chunk, current)
        labels = {**chunk.labels, BUFFER_LABEL: buffer.name, BUFFER_NAMESPACE_LABEL: buffer.namespace}
        out += [
            replace(
                chunk,
                namespace=buffer.namespace,
                name=f"{buffer.name}-buffer-{i}",
                uid="",
                labels=labels,
                node_name="",
                nominated_node_name="",
                phase="Pending",
                unschedulable=True,
                deleting=False,
                priority=LOWEST_PRIORITY,
                owner_kind=OWNER_KIND,
                owner_name=buffer.name,
                created_at=0.0,
            )
            for i in range(count)
        ]
    return BufferPods(tuple(out), problems)


def hold_buffers(
    snapshot: ClusterSnapshot, virtual: Sequence[Pod], now: float, cache: SolverCache | None = None
) -> ClusterSnapshot:
    """`snapshot` with the virtual pods that fit bound to existing nodes (see the module docstring).

    Nodes that take pods only: ready, schedulable, not being deleted. Pods not bound yet are not
    given room first: the consolidation engine places those itself, after these.
    """
    if not virtual:
        return snapshot
    nodes = tuple(n for n in snapshot.nodes if n.ready and not n.unschedulable and not n.deleting)
    names = {n.name for n in nodes}
    result = solve(
        existing_nodes_input(
            virtual,
            nodes,
            (p for p in snapshot.pods if p.node_name in names and not p.terminal),
            daemonsets=snapshot.daemonsets,
            now=now,
        ),
        Strategy(),
        cache=cache,
    )
    by_key = {p.key: p for p in virtual}
    held = [
        replace(
            by_key[key],
            node_name=node,
            phase="Running",
            unschedulable=False,
            labels={k: v for k, v in by_key[key].labels.items() if k in (BUFFER_LABEL, BUFFER_NAMESPACE_LABEL)},
            affinity=(),
            anti_affinity=(),
            preferred_affinity=(),
            preferred_anti_affinity=(),
            spread=(),
        )
        for node, keys in sorted(result.existing.items())
        for key in keys
    ]
    return replace(snapshot, pods=(*snapshot.pods, *held))
