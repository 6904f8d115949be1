"""The conformance harness: behaviours learned from Karpenter's own scheduling, topology and
instance-type suites, written as manifests, run through `solve()` and through `nodewright plan`.

A `Case` is a list of Kubernetes manifests (NodePools, Pods, Deployments, DaemonSets, Nodes) and
an expectation on the plan (`Outcome`). `check(case)` reads the manifests the way `plan` reads
files (`read_workloads`, `plan.build_input`: the bundled us-east-1 catalog, three zones), runs
`solve()`, asserts that kube-scheduler would bind every planned pod on its planned node
(`binding.unbindable`), asserts the expectation, then runs `nodewright plan -f ... -o json` on the
same manifests and asserts it reports the same plan. Both are given the same `--prices` file: the
catalog's estimated prices for the families in FAMILIES (about 300 real types, so each case plans
in a fraction of a second instead of preparing the whole catalog twice). Where Nodewright deliberately differs from
Karpenter (cheaper packing, one capacity type per claim), the case's `differs` says how.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner

from nodewright.adapters.offline_catalog import load_catalog, read_prices_csv
from nodewright.cli import app
from nodewright.cli.plan import build_input
from nodewright.config.workloads import read_workloads
from nodewright.engine.scheduling import SchedulingInput, SchedulingResult, solve
from nodewright.engine.scheduling.binding import planned_labels, unbindable
from nodewright.model import labels as wk

ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
# The families the cases' selectors need: general, compute, memory, burstable, AMD, Graviton,
# flex, local NVMe, fast network and EBS, and NVIDIA GPUs (T4, A10G, L4, V100).
FAMILIES = frozenset(
    {
        *("m5", "m5a", "m5d", "m5n", "m6i", "m7i", "c5", "c5n", "c6i", "c6a", "c7i", "c7i-flex"),
        *("r5", "r5b", "r7i", "t3", "m6g", "c7g", "g4dn", "g5", "g6", "p3"),
    }
)
_PRICES: list[str] = []
Manifest = dict[str, Any]
Expectation = Callable[["Outcome"], object]  # raises AssertionError, or returns None/True when met


# -- manifests -------------------------------------------------------------------------------------


def nodepool(
    name: str = "default",
    *,
    requirements: Iterable[Mapping[str, Any]] = (),
    labels: Mapping[str, str] | None = None,
    taints: Iterable[Mapping[str, str]] = (),
    limits: Mapping[str, str] | None = None,
    weight: int | None = None,
) -> Manifest:
    """A karpenter.sh/v1 NodePool (amd64 Linux, spot or on-demand unless `requirements` say)."""
    reqs = list(requirements)
    keys = {r["key"] for r in reqs}
    if wk.CAPACITY_TYPE not in keys:
        reqs.append(req(wk.CAPACITY_TYPE, "In", "spot", "on-demand"))
    if wk.ARCH not in keys:
        reqs.append(req(wk.ARCH, "In", "amd64"))
    template: dict[str, Any] = {
        "spec": {
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
            "requirements": reqs,
        }
    }
    if labels:
        template["metadata"] = {"labels": dict(labels)}
    if taints:
        template["spec"]["taints"] = list(taints)
    spec: dict[str, Any] = {"template": template}
    if limits is not None:
        spec["limits"] = dict(limits)
    if weight is not None:
        spec["weight"] = weight
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name}, "spec": spec}


def req(key: str, operator: str, *values: str) -> dict[str, Any]:
    """A NodeSelectorRequirement."""
    out: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


def pod_spec(
    *,
    cpu: str = "100m",
    memory: str = "128Mi",
    gpu: int = 0,
    node_selector: Mapping[str, str] | None = None,
    required: Iterable[Iterable[Mapping[str, Any]]] | None = None,
    preferred: Iterable[tuple[int, Iterable[Mapping[str, Any]]]] = (),
    affinity: Iterable[Mapping[str, Any]] = (),
    anti: Iterable[Mapping[str, Any]] = (),
    preferred_anti: Iterable[tuple[int, Mapping[str, Any]]] = (),
    preferred_affinity: Iterable[tuple[int, Mapping[str, Any]]] = (),
    spread: Iterable[Mapping[str, Any]] = (),
    tolerations: Iterable[Mapping[str, Any]] = (),
    host_ports: Iterable[int] = (),
    node_name: str = "",
) -> dict[str, Any]:
    """A pod spec with one container and the given constraints."""
    requests: dict[str, Any] = {"cpu": cpu, "memory": memory}
    if gpu:
        requests["nvidia.com/gpu"] = str(gpu)
    container: dict[str, Any] = {"name": "app", "image": "app", "resources": {"requests": requests}}
    if gpu:
        container["resources"]["limits"] = {"nvidia.com/gpu": str(gpu)}
    if host_ports:
        container["ports"] = [{"containerPort": p, "hostPort": p} for p in host_ports]
    spec: dict[str, Any] = {"containers": [container]}
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    aff: dict[str, Any] = {}
    if required is not None or preferred:
        node: dict[str, Any] = {}
        if required is not None:
            node["requiredDuringSchedulingIgnoredDuringExecution"] = {
                "nodeSelectorTerms": [{"matchExpressions": list(t)} for t in required]
            }
        if preferred:
            node["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": w, "preference": {"matchExpressions": list(t)}} for w, t in preferred
            ]
        aff["nodeAffinity"] = node
    if affinity or preferred_affinity:
        aff["podAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": list(affinity),
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": w, "podAffinityTerm": t} for w, t in preferred_affinity
            ],
        }
    if anti or preferred_anti:
        aff["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": list(anti),
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": w, "podAffinityTerm": t} for w, t in preferred_anti
            ],
        }
    if aff:
        spec["affinity"] = aff
    if spread:
        spec["topologySpreadConstraints"] = list(spread)
    if tolerations:
        spec["tolerations"] = list(tolerations)
    if node_name:
        spec["nodeName"] = node_name
    return spec


def pod(name: str, *, labels: Mapping[str, str] | None = None, namespace: str = "default", **spec: Any) -> Manifest:
    """A pending Pod (bound when `node_name` is given)."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = dict(labels)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod_spec(**spec)}


def deployment(name: str, replicas: int, *, labels: Mapping[str, str] | None = None, **spec: Any) -> Manifest:
    """A Deployment whose `replicas` pods are pending."""
    pod_labels = dict(labels or {"app": name})
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": pod_labels},
            "template": {"metadata": {"labels": pod_labels}, "spec": pod_spec(**spec)},
        },
    }


def daemonset(name: str, **spec: Any) -> Manifest:
    """A DaemonSet."""
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "kube-system"},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": pod_spec(**spec)},
        },
    }


def node(
    name: str,
    *,
    zone: str = "us-east-1a",
    capacity_type: str = "on-demand",
    instance_type: str = "m5.xlarge",
    labels: Mapping[str, str] | None = None,
    taints: Iterable[Mapping[str, str]] = (),
    cpu: str = "3920m",
    memory: str = "14Gi",
    pods: str = "58",
    nodepool_name: str | None = "default",
) -> Manifest:
    """A Ready Node (an m5.xlarge's allocatable unless told)."""
    all_labels = {
        wk.HOSTNAME: name,
        wk.ZONE: zone,
        wk.REGION: "us-east-1",
        wk.CAPACITY_TYPE: capacity_type,
        wk.INSTANCE_TYPE: instance_type,
        wk.ARCH: "amd64",
        wk.OS: "linux",
        **({wk.NODEPOOL: nodepool_name} if nodepool_name else {}),
        **(labels or {}),
    }
    allocatable = {"cpu": cpu, "memory": memory, "pods": pods}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": all_labels},
        "spec": {"taints": list(taints)} if taints else {},
        "status": {
            "allocatable": allocatable,
            "capacity": allocatable,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def spread(key: str = wk.ZONE, app: str = "web", *, skew: int = 1, hard: bool = True, **extra: Any) -> dict[str, Any]:
    """A topology spread constraint over pods labelled `app`."""
    out: dict[str, Any] = {
        "maxSkew": skew,
        "topologyKey": key,
        "whenUnsatisfiable": "DoNotSchedule" if hard else "ScheduleAnyway",
        "labelSelector": {"matchLabels": {"app": app}},
    }
    out.update(extra)
    return out


def term(app: str, key: str = wk.HOSTNAME, **extra: Any) -> dict[str, Any]:
    """A pod (anti-)affinity term selecting pods labelled `app`."""
    return {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key, **extra}


def toleration(key: str, effect: str = "NoSchedule", operator: str = "Exists") -> dict[str, str]:
    """A toleration."""
    return {"key": key, "operator": operator, "effect": effect}


def taint(key: str, effect: str = "NoSchedule", value: str = "") -> dict[str, str]:
    """A taint."""
    out = {"key": key, "effect": effect}
    if value:
        out["value"] = value
    return out


# -- outcome and expectations ----------------------------------------------------------------------


@dataclass(frozen=True)
class Node:
    """A node of the plan: a new claim (`new`) or an existing node, with its labels and pods."""

    name: str
    new: bool
    labels: Mapping[str, str]
    pods: tuple[str, ...]
    instance_type: str
    price: float


@dataclass(frozen=True)
class Outcome:
    """What a plan decided, as the expectations read it."""

    nodes: tuple[Node, ...]
    pending: Mapping[str, str]  # pod name -> reason

    @property
    def new(self) -> list[Node]:
        """The claims to launch."""
        return [n for n in self.nodes if n.new]

    @property
    def placed(self) -> set[str]:
        """Names of pods on a node of the plan (bound ones included)."""
        return {p for n in self.nodes for p in n.pods}

    def node_of(self, pod: str) -> Node:
        """The node holding `pod`."""
        return next(n for n in self.nodes if pod in n.pods)

    def count_by(self, key: str, pods: Callable[[str], bool] = lambda _: True) -> Counter[str]:
        """Placed pods (those `pods` accepts) per value of label `key` of their node."""
        return Counter(n.labels.get(key, "") for n in self.nodes for p in n.pods if pods(p))

    def skew(self, key: str, prefix: str) -> list[int]:
        """Sorted counts per domain of the pods whose name starts with `prefix`."""
        return sorted(self.count_by(key, lambda p: p.startswith(prefix)).values())

    @property
    def price(self) -> float:
        """$/h of the new claims."""
        return sum(n.price for n in self.new)


@dataclass(frozen=True)
class Case:
    """A behaviour: where it comes from, its manifests and what the plan must show."""

    id: str
    source: str  # the Karpenter test it is learned from (suite and It, in our words)
    manifests: tuple[Manifest, ...]
    expect: Expectation
    differs: str = ""  # how and why Nodewright deliberately differs, when it does


def outcome(inp: SchedulingInput, result: SchedulingResult) -> Outcome:
    """The plan as the expectations read it."""
    nodes = [
        Node(
            f"new-{i}",
            True,
            planned_labels(c, inp) | {wk.HOSTNAME: f"new-{i}"},
            tuple(sorted(p.name for p in c.pods)),
            c.instance_type.name,
            c.price,
        )
        for i, c in enumerate(result.claims)
    ]
    by_name = {n.name: n for n in inp.nodes}
    bound: dict[str, list[str]] = {}
    for p in inp.bound_pods:
        bound.setdefault(p.node_name, []).append(p.name)
    for name in sorted(set(result.existing) | set(bound)):
        labels = dict(by_name[name].labels) if name in by_name else {}
        keys = result.existing.get(name, ())
        pods = tuple(sorted([k.split("/", 1)[1] for k in keys] + bound.get(name, [])))
        nodes.append(Node(name, False, labels, pods, labels.get(wk.INSTANCE_TYPE, ""), 0.0))
    pending = {k.split("/", 1)[1]: why for k, why in result.unschedulable.items()}
    return Outcome(tuple(nodes), pending)


def prices_csv() -> str:
    """`instance_type,usd_per_hour` for the bundled catalog's types of FAMILIES (its estimates)."""
    if not _PRICES:
        rows = [
            f"{t.name},{min(o.price for o in t.offerings if o.capacity_type == 'on-demand')}"
            for t in load_catalog(ZONES)
            if t.name.split(".")[0] in FAMILIES
        ]
        _PRICES.append("\n".join(["instance_type,usd_per_hour", *sorted(set(rows))]) + "\n")
    return _PRICES[0]


def solve_case(case: Case, prices: Path | None = None) -> tuple[SchedulingInput, SchedulingResult]:
    """Read the case's manifests as `plan` does and solve them (with `prices`, a `--prices` file)."""
    text = yaml.safe_dump_all(case.manifests)
    planned = read_workloads([("case.yaml", text)])
    assert not planned.problems, planned.problems
    inp = build_input(planned, read_prices_csv(prices) if prices is not None else None, ZONES)
    return inp, solve(inp)


def check(case: Case, tmp_path: Path) -> Outcome:
    """Run the case through `solve()` and `nodewright plan`; assert binding, expectation, agreement."""
    prices = tmp_path / "prices.csv"
    prices.write_text(prices_csv(), encoding="utf-8")
    inp, result = solve_case(case, prices)
    refused = unbindable(inp, result)
    assert not refused, f"kube-scheduler would not bind: {refused[:5]}"
    seen = outcome(inp, result)
    verdict = case.expect(seen)
    assert verdict is None or verdict is True, f"{case.id}: {verdict}"
    path = tmp_path / "case.yaml"
    path.write_text(yaml.safe_dump_all(case.manifests), encoding="utf-8")
    run = CliRunner().invoke(app, ["plan", "-f", str(path), "--prices", str(prices), "-o", "json"])
    assert run.exit_code == 0, run.output
    report = json.loads(run.stdout)
    assert summary_of_report(report) == summary_of_result(result)
    return seen


def summary_of_result(result: SchedulingResult) -> tuple[object, ...]:
    """What both entry points must agree on: claims (type, zone, capacity type, pods), placements
    on existing nodes, and the pods left pending.
    """
    claims = sorted(
        (c.instance_type.name, c.offering.zone, c.offering.capacity_type, tuple(sorted(p.key for p in c.pods)))
        for c in result.claims
    )
    existing = {n: tuple(sorted(keys)) for n, keys in result.existing.items()}
    return claims, existing, sorted(result.unschedulable)


def summary_of_report(report: Mapping[str, Any]) -> tuple[object, ...]:
    """`summary_of_result` read from `plan --output json`."""
    claims = sorted(
        (c["instance_type"], c["zone"], c["capacity_type"], tuple(sorted(c["pods"]))) for c in report["nodeclaims"]
    )
    existing = {n: tuple(sorted(keys)) for n, keys in report["existing"].items()}
    return claims, existing, sorted(u["pod"] for u in report["unschedulable"])


def cases_of(*groups: Iterable[Case]) -> list[Any]:
    """pytest params (one per case, with its id) for parametrize."""
    import pytest

    return [pytest.param(c, id=c.id) for group in groups for c in group]
