"""Karpenter's metric names for the Nodewright metrics that mean the same thing.

Role: Karpenter users alert on and graph `karpenter_*` Prometheus metrics. Where a Nodewright
EMF metric counts or measures exactly what a Karpenter metric does, the Lambda observer
(`adapters.powertools`) emits it under both names, with the same dimensions, so a dashboard or an
alarm can be moved over by name (the Grafana dashboard in deploy/grafana/ uses these).
docs/metrics.md maps every Karpenter metric, including those with no equal here.

Left out on purpose, because the meaning differs: `PendingToLaunchSeconds` (pod creation to the
launch answered, not to the pod running: Karpenter's `karpenter_pods_startup_duration_seconds`
also counts the boot and the bind), `LaunchFailures` (launches, not every cloud provider call).
"""

from __future__ import annotations

from collections.abc import Mapping

KARPENTER_NAMES: Mapping[str, str] = {
    # A node launched / found gone: one per claim, by NodePool.
    "NodesLaunched": "karpenter_nodes_created_total",
    "NodesTerminated": "karpenter_nodes_terminated_total",
    # A node taken by a disruption method, by reason (empty, underutilized, drifted, expired...).
    "NodesDisrupted": "karpenter_nodeclaims_disrupted_total",
    # An interruption message received, by kind.
    "InterruptionsReceived": "karpenter_interruption_received_messages_total",
    # How old a message was when handled.
    "MessageAgeSeconds": "karpenter_interruption_message_queue_duration_seconds",
    # One scheduling simulation's duration.
    "SchedulingSeconds": "karpenter_scheduler_scheduling_duration_seconds",
    # Nodes disruption may consider in a pass.
    "EligibleNodes": "karpenter_voluntary_disruption_eligible_nodes",
}


def emitted_names(name: str) -> tuple[str, ...]:
    """Every name a metric is emitted under: its own, and Karpenter's when the meaning is the same."""
    alias = KARPENTER_NAMES.get(name)
    return (name, alias) if alias else (name,)
