"""Builders that keep tests short: `pod(cpu="500m")`, `node(...)`, `instance_type(...)`, `node_pool(...)`.

Each returns a real model object with sensible defaults; override only what a test is about.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import Any

from nodewright.model import labels as wk
from nodewright.model.instancetype import InstanceType, Offering
from nodewright.model.node import Node
from nodewright.model.nodepool import NodePool
from nodewright.model.pod import Pod
from nodewright.model.requirements import Requirement, Requirements
from nodewright.model.resources import Resources
from nodewright.model.taints import Taint, Toleration

ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
_ids = itertools.count(1)


def pod(
    name: str | None = None,
    *,
    cpu: str = "100m",
    memory: str = "128Mi",
    namespace: str = "default",
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    node_selector: Mapping[str, str] | None = None,
    tolerations: Iterable[Toleration] = (),
    node_name: str = "",
    owner_kind: str = "ReplicaSet",
    extra: Mapping[str, str] | None = None,
    **fields: Any,
) -> Pod:
    """A pending, unschedulable pod with the given requests (plus one pod slot)."""
    requests = Resources.of(cpu=cpu, memory=memory, pods=1) + Resources.parse(extra or {})
    return Pod(
        namespace=namespace,
        name=name or f"pod-{next(_ids)}",
        labels=dict(labels or {}),
        annotations=dict(annotations or {}),
        requests=requests,
        node_selector=dict(node_selector or {}),
        tolerations=tuple(tolerations),
        node_name=node_name,
        owner_kind=owner_kind,
        unschedulable=not node_name,
        phase="Running" if node_name else "Pending",
        **fields,
    )


def instance_type(
    name: str = "m5.large",
    *,
    cpu: str = "2",
    memory: str = "8Gi",
    pods: int = 29,
    arch: str = "amd64",
    price: float = 0.096,
    spot_price: float | None = None,
    zones: Iterable[str] = ZONES,
    overhead: Resources | None = None,
    extra: Mapping[str, str] | None = None,
) -> InstanceType:
    """An instance type offered on-demand (and spot when `spot_price` is set) in `zones`."""
    family, _, size = name.partition(".")
    zones = tuple(zones)
    offerings = [Offering(z, "on-demand", price) for z in zones]
    if spot_price is not None:
        offerings += [Offering(z, "spot", spot_price) for z in zones]
    capacity_types = sorted({o.capacity_type for o in offerings})
    requirements = Requirements(
        [
            Requirement.new(wk.INSTANCE_TYPE, "In", [name]),
            Requirement.new(wk.ARCH, "In", [arch]),
            Requirement.new(wk.OS, "In", ["linux"]),
            Requirement.new(wk.INSTANCE_FAMILY, "In", [family]),
            Requirement.new(wk.INSTANCE_CATEGORY, "In", [family[0]]),
            Requirement.new(wk.INSTANCE_SIZE, "In", [size]),
            Requirement.new(wk.ZONE, "In", zones),
            Requirement.new(wk.CAPACITY_TYPE, "In", capacity_types),
        ]
    )
    capacity = Resources.of(cpu=cpu, memory=memory, pods=pods) + Resources.parse(extra or {})
    return InstanceType(name, requirements, capacity, overhead or Resources(), tuple(offerings))


def node_pool(
    name: str = "default",
    *,
    requirements: Iterable[Mapping[str, Any]] = (),
    taints: Iterable[Taint] = (),
    limits: Mapping[str, str] | None = None,
    weight: int = 0,
    **fields: Any,
) -> NodePool:
    """A NodePool with the given requirement manifests, taints and limits."""
    return NodePool(
        name=name,
        requirements=Requirements.parse(list(requirements)),
        taints=tuple(taints),
        limits=Resources.parse(limits) if limits is not None else None,
        weight=weight,
        **fields,
    )


def node(
    name: str = "node-1",
    *,
    cpu: str = "2",
    memory: str = "8Gi",
    pods: int = 29,
    labels: Mapping[str, str] | None = None,
    taints: Iterable[Taint] = (),
    ready: bool = True,
    **fields: Any,
) -> Node:
    """A ready node with the given allocatable resources."""
    allocatable = Resources.of(cpu=cpu, memory=memory, pods=pods)
    return Node(
        name=name,
        labels={wk.HOSTNAME: name, **(labels or {})},
        taints=tuple(taints),
        capacity=allocatable,
        allocatable=allocatable,
        ready=ready,
        **fields,
    )
