"""Scenario builders for scheduling tests: a small catalog, constraint shorthands, and `run()`.

Everything here returns real model objects (see `tests/builders.py` for pods, pools and types);
the tests run the real `solve()` on them and check its result with `expect.py`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from nodewright.engine.scheduling import PoolCapacity, SchedulingInput, SchedulingResult, solve
from nodewright.engine.scheduling.binding import unbindable
from nodewright.model import labels as wk
from nodewright.model.instancetype import InstanceType
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.nodepool import NodePool
from nodewright.model.pod import AffinityTerm, Pod, PreferredTerm, SpreadConstraint
from nodewright.model.requirements import Requirements
from nodewright.model.resources import Resources
from nodewright.model.selectors import LabelSelector
from nodewright.model.taints import Taint, Toleration
from nodewright.model.workloads import DaemonSet
from tests.builders import ZONES, instance_type, node_pool, pod

GPU = "nvidia.com/gpu"


def catalog() -> tuple[InstanceType, ...]:
    """A small, realistic catalog: general, compute, memory, arm64, one GPU and one metal type."""
    return (
        instance_type("c5.large", cpu="2", memory="4Gi", price=0.085, spot_price=0.035),
        instance_type("m5.large", cpu="2", memory="8Gi", price=0.096, spot_price=0.040),
        instance_type("r5.large", cpu="2", memory="16Gi", price=0.126, spot_price=0.050),
        instance_type("c5.xlarge", cpu="4", memory="8Gi", price=0.170, spot_price=0.070),
        instance_type("m5.xlarge", cpu="4", memory="16Gi", price=0.192, spot_price=0.080),
        instance_type("m5.2xlarge", cpu="8", memory="32Gi", price=0.384, spot_price=0.160),
        instance_type("m6g.large", cpu="2", memory="8Gi", price=0.077, spot_price=0.030, arch="arm64"),
        instance_type("m6g.xlarge", cpu="4", memory="16Gi", price=0.154, spot_price=0.060, arch="arm64"),
        instance_type("g4dn.xlarge", cpu="4", memory="16Gi", price=0.526, extra={GPU: "1"}),
        instance_type("m5.metal", cpu="96", memory="384Gi", price=4.608),
    )


def pool(nodepool: NodePool | None = None, types: Iterable[InstanceType] | None = None) -> PoolCapacity:
    """A NodePool (default: `node_pool()`) with its instance types (default: `catalog()`)."""
    return PoolCapacity(nodepool or node_pool(), tuple(catalog() if types is None else types))


def scheduling_input(
    pods: Iterable[Pod],
    *,
    pools: Iterable[PoolCapacity] | None = None,
    **fields: Any,
) -> SchedulingInput:
    """A `SchedulingInput` for `pods`; one default pool over the catalog unless `pools` is given."""
    return SchedulingInput(pods=tuple(pods), pools=tuple([pool()] if pools is None else pools), **fields)


def run(pods: Iterable[Pod], *, pools: Iterable[PoolCapacity] | None = None, **fields: Any) -> SchedulingResult:
    """Solve a scenario (see `scheduling_input`), and check that kube-scheduler would bind every
    pod the plan places where it places it (`binding.unbindable`).
    """
    inp = scheduling_input(pods, pools=pools, **fields)
    result = solve(inp)
    refused = unbindable(inp, result)
    assert not refused, f"planned pods kube-scheduler would not bind: {refused[:5]}"
    return result


def pods(count: int, prefix: str, **fields: Any) -> list[Pod]:
    """`count` identical pods named `prefix-0`, `prefix-1`, ..."""
    return [pod(f"{prefix}-{i}", **fields) for i in range(count)]


# -- constraints -----------------------------------------------------------------------------------


def selector(app: str) -> LabelSelector:
    """`matchLabels: {app: <app>}`."""
    return LabelSelector((("app", app),))


def spread(
    app: str,
    *,
    key: str = wk.ZONE,
    max_skew: int = 1,
    when: str = "DoNotSchedule",
    min_domains: int | None = None,
) -> SpreadConstraint:
    """A topology spread constraint over pods labelled `app=<app>`."""
    return SpreadConstraint(max_skew, key, when, selector(app), min_domains=min_domains)


def term(app: str, *, key: str = wk.HOSTNAME, weight: int = 0, namespace: str = "default") -> AffinityTerm:
    """A pod (anti-)affinity term selecting pods labelled `app=<app>`."""
    return AffinityTerm(selector(app), key, frozenset((namespace,)), weight=weight)


def node_terms(*terms: Mapping[str, Iterable[str]]) -> tuple[Requirements, ...]:
    """Required node affinity: ORed terms, each `{key: [values]}` read as `key In values`."""
    return tuple(
        Requirements.parse([{"key": k, "operator": "In", "values": list(v)} for k, v in t.items()]) for t in terms
    )


def preferred(weight: int, **by_key: Iterable[str]) -> PreferredTerm:
    """A preferred node affinity term; keyword `zone=[...]` means the zone label."""
    keys = {"zone": wk.ZONE, "capacity_type": wk.CAPACITY_TYPE, "arch": wk.ARCH}
    return PreferredTerm(
        weight,
        Requirements.parse([{"key": keys.get(k, k), "operator": "In", "values": list(v)} for k, v in by_key.items()]),
    )


def requirement(key: str, operator: str, *values: str, min_values: int | None = None) -> dict[str, Any]:
    """A NodeSelectorRequirement manifest, for `node_pool(requirements=[...])`."""
    out: dict[str, Any] = {"key": key, "operator": operator, "values": list(values)}
    if min_values is not None:
        out["minValues"] = min_values
    return out


def tolerate(key: str, effect: str = "") -> Toleration:
    """A toleration of any value of `key` (and any effect unless given)."""
    return Toleration(key, "Exists", effect=effect)


def taint(key: str, effect: str = "NoSchedule", value: str = "") -> Taint:
    """A taint."""
    return Taint(key, effect, value)


def daemonset(name: str, *, cpu: str = "100m", memory: str = "128Mi", **fields: Any) -> DaemonSet:
    """A DaemonSet whose template requests `cpu` and `memory`."""
    return DaemonSet(
        "kube-system", name, pod(f"{name}-template", cpu=cpu, memory=memory, owner_kind="DaemonSet", **fields)
    )


def inflight(
    name: str,
    instance_type_name: str,
    *,
    nodepool: str = "default",
    zone: str = ZONES[0],
    capacity_type: str = "on-demand",
) -> NodeClaim:
    """A launched, not yet registered node claim of `instance_type_name` in `zone`."""
    reqs = Requirements.parse(
        [
            requirement(wk.INSTANCE_TYPE, "In", instance_type_name),
            requirement(wk.ZONE, "In", zone),
            requirement(wk.CAPACITY_TYPE, "In", capacity_type),
            requirement(wk.NODEPOOL, "In", nodepool),
        ]
    )
    return NodeClaim(
        name=name,
        nodepool=nodepool,
        requirements=reqs,
        instance_type_options=(instance_type_name,),
        state="launched",
        instance_type=instance_type_name,
        capacity_type=capacity_type,
        zone=zone,
        labels={wk.ZONE: zone, wk.CAPACITY_TYPE: capacity_type, wk.INSTANCE_TYPE: instance_type_name},
    )


def resources(**quantities: str | int) -> Resources:
    """Shorthand for `Resources.of`."""
    return Resources.of(**quantities)
