"""Generated days with Nodewright's own capabilities drawn in: standby buffers, DRA device
workloads, zone balance and a DaemonSet that arrives later. An opt-in to `generate`.

Role: the four capabilities each have a hand-written scenario; this puts them on days nobody
tuned, next to everything else a generated day holds (`generate.py`'s module docstring), so the
suite's claims (no pod lost, no PodDisruptionBudget, do-not-disrupt or limit broken) are checked
with them on. `add_features(document, story, seed, features)` adds the chosen ones to a drawn
document in place. Each feature draws from a random source of its own (`random.Random(
"<feature>-<seed>")`), so the day itself is the same with and without them, a feature is the same
whichever others are on, and no feature means today's document, byte for byte.

What each adds (sizes drawn as the rest of the generator draws them; times of the story pass
through `story.time`, replica counts through `story.count`, so `hours` and `scale` apply):

* `dra`: a GPU NodePool (`gpu`: NVIDIA types, amd64, on-demand or both capacity types, tainted
  `nvidia.com/gpu`, a `nvidia.com/gpu` limit 1.5-3x the day's peak), the NVIDIA DRA driver's
  DeviceClass `gpu.nvidia.com`, a ResourceClaimTemplate asking for one (sometimes two) GPUs by a
  CEL selector on the product name (T4, A10G, L4 or L40S), the architecture or the memory, and an
  `inference` Deployment claiming it on a daily curve (peak 2-12 pods).
* `zone-balance`: `nodewright.io/zone-balance` on each NodePool with probability 3/4 (at least
  one): `nodes:1`, `nodes:2` or `cpu:32` / `cpu:64`.
* `standby`: a CapacityBuffer with `provisioningStrategy: nodewright.io/standby-capacity` and its
  PodTemplate, shaped like one of the day's services or bursts (same requests and NodePool pin),
  room for 10-30% of that workload's peak (2 to 40 chunks). Standby is on-demand only
  (docs/standby.md): when no NodePool may launch on-demand, the last one (which can run every
  service) is widened to spot and on-demand.
* `late-daemonset`: a DaemonSet of 500m-1.5 cpu and 512Mi-2Gi per node, tolerating every taint,
  created in the busy middle of the day (30-70% of it): on packed nodes its pods no longer fit.
  Every NodePool gets `nodewright.io/daemonset-overflow`: Replace (weight 3), Report (2) or
  Ignore (1).

Pure: no I/O.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from nodewright.model import labels as wk
from nodewright.model.dra import API_VERSION as DRA_API_VERSION
from nodewright.model.dra import NVIDIA_DRIVER
from nodewright.model.standby import STANDBY_CAPACITY

FEATURES = ("standby", "dra", "zone-balance", "late-daemonset")
ALL = "all"
GPU_POOL = "gpu"
GPU_NAMESPACE = "inference"
GPU_TAINT = "nvidia.com/gpu"
CONSOLIDATE_AFTER = ("30s", "1m", "2m", "5m", "10m")
BUDGETS = ("10%", "20%", "5", "30%")
ZONE_BALANCES = ("nodes:1", "nodes:1", "nodes:2", "cpu:32", "cpu:64")
OVERFLOW_POLICIES = ("Replace", "Report", "Ignore")
OVERFLOW_WEIGHTS = (3, 2, 1)
LATE_DAEMONSETS = ("security-agent", "trace-collector", "log-shipper-v2")


class Story(Protocol):
    """What a feature needs of the day's draw: its length, and how times, counts and curve steps
    (at least a minute) are shortened.
    """

    duration: float

    def time(self, seconds: float) -> str: ...

    def count(self, replicas: int) -> int: ...

    def step(self, seconds: float) -> str: ...


@dataclass(frozen=True, slots=True)
class Gpu:
    """A GPU model the catalog's types carry, as the NVIDIA DRA driver names it."""

    product: str  # the driver's productName attribute
    architecture: str
    memory: str  # a quantity every device of the model has at least
    cpu: tuple[str, ...]  # pod requests that fit its smaller types next to the DaemonSets
    pod_memory: tuple[str, ...]


GPUS = (
    Gpu("NVIDIA T4", "Turing", "15Gi", ("1", "2", "3"), ("4Gi", "8Gi", "12Gi")),
    Gpu("NVIDIA A10G", "Ampere", "22Gi", ("1", "2", "3", "6"), ("4Gi", "8Gi", "16Gi", "24Gi")),
    Gpu("NVIDIA L4", "Ada Lovelace", "22Gi", ("1", "2", "3", "6"), ("4Gi", "8Gi", "16Gi", "24Gi")),
    Gpu("NVIDIA L40S", "Ada Lovelace", "44Gi", ("2", "3", "6"), ("16Gi", "24Gi", "48Gi")),
)


def parse_features(text: str) -> tuple[str, ...]:
    """`standby,dra` (or `all`) as the features in FEATURES order; ValueError naming a value
    that is not one, and the ones there are. An empty text is no feature.
    """
    names = [name.strip() for name in text.split(",") if name.strip()]
    if ALL in names:
        if len(names) > 1:
            raise ValueError(f"'{ALL}' stands alone, got {text!r}")
        return FEATURES
    return check_features(names)


def check_features(names: Iterable[str]) -> tuple[str, ...]:
    """The names in FEATURES order, each once; ValueError for one that is not a feature."""
    chosen = list(names)
    unknown = [name for name in chosen if name not in FEATURES]
    if unknown:
        raise ValueError(
            f"{', '.join(repr(n) for n in unknown)}: not a feature; "
            f"choose from {', '.join(FEATURES)} (comma-separated) or '{ALL}'"
        )
    return tuple(name for name in FEATURES if name in chosen)


def add_features(document: dict[str, Any], story: Story, seed: int, features: Sequence[str]) -> None:
    """Add `features` (FEATURES names) to the drawn `document`, in place (module docstring)."""
    chosen = check_features(features)
    # The order is fixed (the GPU NodePool exists before balance and overflow are drawn for the
    # NodePools); each feature's own random source keeps the others out of its draw.
    for name in ("dra", "zone-balance", "standby", "late-daemonset"):
        if name in chosen:
            _ADD[name](document, story, random.Random(f"{name}-{seed}"))
    if chosen:
        document["description"] += f", features: {', '.join(chosen)}"


# -- dra -------------------------------------------------------------------------------------------


def _dra(document: dict[str, Any], story: Story, rng: random.Random) -> None:
    gpu = rng.choice(GPUS)
    devices = 2 if rng.random() < 0.15 else 1
    selector = rng.choice(
        (
            f'device.attributes["{NVIDIA_DRIVER}"].productName == "{gpu.product}"',
            f'device.attributes["{NVIDIA_DRIVER}"].architecture == "{gpu.architecture}"',
            f'device.capacity["{NVIDIA_DRIVER}"].memory.compareTo(quantity("{gpu.memory}")) >= 0',
        )
    )
    high = rng.randint(2, 12)
    low = max(1, round(high * rng.uniform(0.1, 0.4)))
    period = rng.choice((24 * 3600.0, 12 * 3600.0, story.duration, story.duration / 2))
    every = rng.choice((120.0, 300.0, 300.0, 600.0))
    capacity: list[str] = rng.choice((["on-demand"], ["on-demand"], ["spot", "on-demand"]))
    pool: dict[str, Any] = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": GPU_POOL},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                    "requirements": [
                        {"key": wk.CAPACITY_TYPE, "operator": "In", "values": capacity},
                        {"key": wk.INSTANCE_GPU_MANUFACTURER, "operator": "In", "values": ["nvidia"]},
                        {"key": wk.ARCH, "operator": "In", "values": ["amd64"]},
                    ],
                    "taints": [{"key": GPU_TAINT, "value": "true", "effect": "NoSchedule"}],
                }
            },
            "limits": {GPU_TAINT: str(max(4, round(story.count(high) * devices * rng.uniform(1.5, 3.0))))},
            "disruption": {
                "consolidationPolicy": "WhenEmptyOrUnderutilized",
                "consolidateAfter": rng.choice(CONSOLIDATE_AFTER),
                "budgets": [{"nodes": rng.choice(BUDGETS)}],
            },
        },
    }
    device_class = {
        "apiVersion": DRA_API_VERSION,
        "kind": "DeviceClass",
        "metadata": {"name": NVIDIA_DRIVER},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{NVIDIA_DRIVER}"'}}]},
    }
    template = {
        "apiVersion": DRA_API_VERSION,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "gpu", "namespace": GPU_NAMESPACE},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "gpu",
                            "exactly": {
                                "deviceClassName": NVIDIA_DRIVER,
                                "count": devices,
                                "selectors": [{"cel": {"expression": selector}}],
                            },
                        }
                    ]
                }
            }
        },
    }
    labels = {"app": "llm"}
    workload = {
        "manifest": {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "llm", "namespace": GPU_NAMESPACE},
            "spec": {
                "replicas": story.count(low),
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": dict(labels)},
                    "spec": {
                        "tolerations": [{"key": GPU_TAINT, "operator": "Exists", "effect": "NoSchedule"}],
                        "containers": [
                            {
                                "name": "server",
                                "image": "example.com/inference/server:1.0",
                                "resources": {
                                    "requests": {"cpu": rng.choice(gpu.cpu), "memory": rng.choice(gpu.pod_memory)},
                                    "claims": [{"name": "gpu"}],
                                },
                            }
                        ],
                        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu"}],
                    },
                },
            },
        },
        "replicas": [
            {
                "at": "0s",
                "diurnal": {
                    "min": story.count(low),
                    "max": story.count(high),
                    "period": story.time(period),
                    "peak": story.time(period * rng.uniform(0.2, 0.8)),
                    "every": story.step(every),
                },
            }
        ],
    }
    document["nodepools"].append(pool)
    document.setdefault("devices", []).extend([device_class, template])
    document["workloads"].append(workload)


# -- zone balance ----------------------------------------------------------------------------------


def _zone_balance(document: dict[str, Any], story: Story, rng: random.Random) -> None:
    pools = _nodepools(document)
    chosen = [pool for pool in pools if rng.random() < 0.75] or [rng.choice(pools)]
    for pool in chosen:
        _annotate(pool, wk.NW_ZONE_BALANCE, rng.choice(ZONE_BALANCES))


# -- standby ---------------------------------------------------------------------------------------


def _standby(document: dict[str, Any], story: Story, rng: random.Random) -> None:
    pools = _nodepools(document)
    if not any("on-demand" in _capacity(pool) for pool in pools):
        requirement = _requirement(pools[-1], wk.CAPACITY_TYPE)
        requirement["values"] = ["spot", "on-demand"]
    on_demand = {pool["metadata"]["name"] for pool in pools if "on-demand" in _capacity(pool)}
    candidates = []
    for workload in document["workloads"]:
        manifest = workload["manifest"]
        spec = manifest["spec"]["template"]["spec"]
        pinned = (spec.get("nodeSelector") or {}).get(wk.NODEPOOL)
        if _plain(manifest) and (pinned is None or pinned in on_demand):
            candidates.append(workload)
    # A workload pinned to a spot-only NodePool cannot use standby: its chunk then drops the pin.
    workload = rng.choice(candidates or [w for w in document["workloads"] if _plain(w["manifest"])])
    manifest = workload["manifest"]
    name, namespace = f"{manifest['metadata']['name']}-standby", manifest["metadata"]["namespace"]
    source = manifest["spec"]["template"]["spec"]
    container = source["containers"][0]
    pod_spec: dict[str, Any] = {
        "containers": [{"name": "chunk", "image": container["image"], "resources": dict(container["resources"])}]
    }
    if "nodeSelector" in source and candidates:
        pod_spec["nodeSelector"] = dict(source["nodeSelector"])
    # The peak is already scaled; so is the cap.
    chunks = max(1, min(story.count(40), round(_peak(workload) * rng.uniform(0.1, 0.3))))
    document["nodepools"].extend(
        [
            {
                "apiVersion": "v1",
                "kind": "PodTemplate",
                "metadata": {"name": name, "namespace": namespace},
                "template": {"metadata": {"labels": {"app": name}}, "spec": pod_spec},
            },
            {
                "apiVersion": "autoscaling.x-k8s.io/v1beta1",
                "kind": "CapacityBuffer",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {
                    "provisioningStrategy": STANDBY_CAPACITY,
                    "podTemplateRef": {"name": name},
                    "replicas": chunks,
                },
            },
        ]
    )


# -- a DaemonSet that arrives later ----------------------------------------------------------------


def _late_daemonset(document: dict[str, Any], story: Story, rng: random.Random) -> None:
    name = rng.choice(LATE_DAEMONSETS)
    requests = {"cpu": rng.choice(("500m", "750m", "1", "1500m")), "memory": rng.choice(("512Mi", "1Gi", "2Gi"))}
    at = story.time(rng.uniform(0.3, 0.7) * story.duration)
    document["workloads"].append({"at": at, "manifest": node_daemonset(name, f"example.com/{name}:2.0", requests)})
    for pool in _nodepools(document):
        _annotate(pool, wk.NW_DAEMONSET_OVERFLOW, rng.choices(OVERFLOW_POLICIES, weights=OVERFLOW_WEIGHTS)[0])


def node_daemonset(name: str, image: str, requests: dict[str, str]) -> dict[str, Any]:
    """A DaemonSet manifest in kube-system tolerating every taint, as node agents are: one
    container asking for `requests`, labelled app=name (the day's own DaemonSets and the late one).
    """
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "kube-system"},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {
                    "tolerations": [{"operator": "Exists"}],
                    "containers": [{"name": name, "image": image, "resources": {"requests": requests}}],
                },
            },
        },
    }


_ADD = {"dra": _dra, "zone-balance": _zone_balance, "standby": _standby, "late-daemonset": _late_daemonset}


# -- helpers ---------------------------------------------------------------------------------------


def _nodepools(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [doc for doc in document["nodepools"] if doc.get("kind") == "NodePool"]


def _annotate(pool: dict[str, Any], key: str, value: str) -> None:
    pool["metadata"].setdefault("annotations", {})[key] = value


def _requirement(pool: dict[str, Any], key: str) -> dict[str, Any]:
    return next(r for r in pool["spec"]["template"]["spec"]["requirements"] if r["key"] == key)


def _capacity(pool: dict[str, Any]) -> list[str]:
    return list(_requirement(pool, wk.CAPACITY_TYPE)["values"])


def _plain(manifest: dict[str, Any]) -> bool:
    """A Deployment without device claims: a service or a burst of the day."""
    return bool(manifest["kind"] == "Deployment" and "resourceClaims" not in manifest["spec"]["template"]["spec"])


def _peak(workload: dict[str, Any]) -> int:
    """A workload's highest replica count (its curve's maximum, or its steps' largest)."""
    counts = [int(workload["manifest"]["spec"].get("replicas", 0))]
    for segment in workload.get("replicas", ()):
        counts.append(int(segment["diurnal"]["max"] if "diurnal" in segment else segment["replicas"]))
    return max(counts)
