"""Generated scenarios: a seeded draw of a realistic cluster day, as a scenario YAML document.

Role: claims about cost and loss are checked on scenarios nobody tuned (DESIGN, "Testing real
parts"). `generate(seed)` draws one scenario in the schema of nodewright.simulator.scenario (the
same keys as examples/scenarios/*.yaml); the same seed always gives the same document, and the
document written out (`nodewright simulate --generate SEED --write FILE`) reproduces the run.

What is drawn (each seed independently, from `random.Random(seed)`):

* a day of 12 to 24 hours;
* 2 to 6 services, each of a shape (cpu-heavy, memory-heavy, tiny, mixed) whose requests and
  replica range come from that shape, following a daily curve (its own period, peak, minimum and
  maximum) or holding a fixed count; some spread over zones (DoNotSchedule or ScheduleAnyway),
  some keep their pods on separate nodes (pod anti-affinity, required or preferred), some have a
  PodDisruptionBudget (`maxUnavailable: 1` or `minAvailable` a percentage), a few are
  `karpenter.sh/do-not-disrupt`;
* 0 to 2 batch bursts: a fixed number of large pods for tens of minutes;
* one or two DaemonSets;
* with `faults=True`, two to five of the simulator's fault kinds (Kubernetes API errors, EC2 and
  DynamoDB throttling, partial fleets, killed invocations, duplicate and reordered SQS messages) at
  modest rates, drawn from a random source of their own: the day is the same with and without,
  but for two or three more spot interruptions in its busy middle, aimed at a NodePool that
  launches spot (so the interruption function meets the faults too);
* 1 to 3 NodePools (weighted when several): spot, on-demand or both; amd64, arm64 or both; some
  instance categories and sizes; with or without a cpu limit; consolidateAfter and a budget;
* spot interruptions (one storm interrupts several nodes within minutes, aimed at the NodePool of a
  PDB-protected service when there is one), zone-wide spot capacity errors, sometimes shallow spot
  pools.

With `features` (`--features` on `nodewright simulate --generate` and on the suite), Nodewright's
own capabilities are drawn in too: standby buffers, DRA device workloads, zone balance, a late
DaemonSet (`generate_features`). Without, the document is what it always was.

Shortening: `hours=H` compresses the drawn day to H hours. Every time of the scenario's own story
(curve periods and peaks, when bursts start and how long they last, interruption and capacity-error
times, the curves' step) is multiplied by H / the drawn hours; the controllers' own timings
(consolidateAfter, boot delay, the two-minute notice) are kept. The draw does not depend on H, so
seed N shortened is seed N's day, faster. `scale` multiplies every replica count (at least 1 pod).

Pure: no I/O (`to_yaml` renders, `load` validates through the real scenario loader).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from nodewright.model.duration import format_duration
from nodewright.simulator.scenario import Scenario, parse_scenario
from nodewright.simulator.scenario.generate_features import add_features, check_features, node_daemonset

HOUR = 3600.0
MINUTE = 60.0
MIN_HOURS = 0.25
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
NODECLASS = {
    "apiVersion": "karpenter.k8s.aws/v1",
    "kind": "EC2NodeClass",
    "metadata": {"name": "default"},
    "spec": {
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
        "role": "KarpenterNodeRole-simulated",
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "simulated"}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "simulated"}}],
    },
}


@dataclass(frozen=True, slots=True)
class Shape:
    """A kind of service: the requests it may have and how many replicas it may run at its peak."""

    name: str
    cpu: tuple[str, ...]
    memory: tuple[str, ...]
    peak: tuple[int, int]


# The shapes services are drawn from, with their weights: most services are ordinary ("mixed").
SHAPES: tuple[tuple[Shape, int], ...] = (
    (Shape("cpu-heavy", ("1", "2", "4"), ("1Gi", "2Gi", "4Gi"), (20, 220)), 2),
    (Shape("memory-heavy", ("250m", "500m", "1"), ("4Gi", "6Gi", "8Gi", "12Gi"), (15, 120)), 2),
    (Shape("tiny", ("50m", "100m", "200m"), ("64Mi", "128Mi", "256Mi"), (100, 900)), 2),
    (Shape("mixed", ("250m", "500m", "1"), ("512Mi", "1Gi", "2Gi", "4Gi"), (30, 300)), 3),
)
BURST_SHAPES = (("4", "16Gi"), ("2", "8Gi"), ("8", "16Gi"), ("1", "4Gi"))
CONSOLIDATE_AFTER = ("30s", "1m", "2m", "5m", "10m")
BUDGETS = ("10%", "20%", "5", "30%")
SIZES = (
    ("large", "xlarge", "2xlarge"),
    ("xlarge", "2xlarge", "4xlarge"),
    ("medium", "large", "xlarge", "2xlarge", "4xlarge", "8xlarge"),
    None,  # every size
)


def generate(
    seed: int,
    *,
    hours: float | None = None,
    scale: float = 1.0,
    faults: bool = False,
    features: Sequence[str] = (),
) -> dict[str, Any]:
    """The scenario document drawn for `seed` (see the module docstring), as plain YAML data; with
    `faults`, also a `faults:` list (drawn from a source of its own, so the rest is the same day);
    with `features` (names of `generate_features.FEATURES`), those capabilities drawn in too
    (`generate_features`: each from a source of its own). ValueError for a bad argument.
    """
    if seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed}")
    if hours is not None and hours < MIN_HOURS:
        raise ValueError(
            f"hours must be at least {MIN_HOURS} (shorter days squeeze the bursts to nothing), got {hours}"
        )
    if scale <= 0:
        raise ValueError(f"scale must be positive, got {scale}")
    features = check_features(features)
    draw = _Draw(random.Random(seed), seed, hours, scale)
    document = draw.scenario()
    if faults:
        rng = random.Random(f"faults-{seed}")
        document["faults"] = draw.faults(rng)
        document["description"] += f", {len(document['faults'])} fault kinds"
        aimed = draw.faulty_interruption(rng, document["nodepools"])
        if aimed is not None:
            # A faulty day interrupts spot nodes while the faults are on: the interruption
            # function then meets them too.
            document["interruptions"] = sorted(
                [*document.get("interruptions", ()), aimed], key=lambda entry: _seconds(entry["at"])
            )
    if features:  # after the faults: their interruption aims at the day's own NodePools
        add_features(document, draw, seed, features)
    return document


def to_yaml(document: dict[str, Any]) -> str:
    """The document as YAML text, keys in the order they were drawn."""
    header = (
        f"# Generated by nodewright.simulator.scenario.generate ({document['description']}).\n"
        "# Run it with `nodewright simulate FILE`; every value below is what the run uses.\n"
    )
    return header + yaml.dump(document, Dumper=_Dumper, sort_keys=False, width=120, default_flow_style=None)


def load(document: dict[str, Any], path: str | Path = "<generated>") -> Scenario:
    """Validate a generated document through the real scenario loader (ScenarioError if invalid)."""
    return parse_scenario(to_yaml(document), path)


class _Dumper(yaml.SafeDumper):
    """Writes every value in place: a label set shared by a template and its PDB is not an alias."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


class _Draw:
    """One draw: the random source, the time compression and what has been drawn so far."""

    def __init__(self, rng: random.Random, seed: int, hours: float | None, scale: float) -> None:
        self.rng = rng
        self.seed = seed
        self.scale = scale
        self.drawn_hours = rng.randint(12, 24)
        self.factor = 1.0 if hours is None else hours / self.drawn_hours
        self.duration = self.drawn_hours * HOUR

    # -- helpers -------------------------------------------------------------------------------------

    def time(self, seconds: float) -> str:
        """A time of the scenario's story, compressed, as a duration string."""
        return format_duration(max(0, round(seconds * self.factor)))

    def count(self, replicas: int) -> int:
        return max(1, round(replicas * self.scale))

    def step(self, seconds: float) -> str:
        """A curve's step, compressed, but at least a minute."""
        return format_duration(max(MINUTE, round(seconds * self.factor)))

    # -- the scenario --------------------------------------------------------------------------------

    def scenario(self) -> dict[str, Any]:
        rng = self.rng
        zones = list(ZONES[: rng.choice((2, 3, 3, 3))])
        pools = self.nodepools(rng.choice((1, 1, 2, 2, 3)))
        services = [self.service(index, pools) for index in range(rng.randint(2, 6))]
        bursts = [self.burst(index) for index in range(rng.choice((0, 1, 1, 2)))]
        daemonsets = [self.daemonset(index) for index in range(rng.choice((1, 1, 1, 2)))]
        self.limit(pools, services, bursts)
        # The services' private keys (what the draw needs later) are taken out of the documents.
        pdbs: list[dict[str, Any]] = []
        protected: list[str] = []  # NodePools a PDB-protected service is pinned to
        for service in services:
            pool, pdb = service.pop("_pool"), service.pop("_pdb")
            if pdb is not None:
                pdbs.append(pdb)
                if pool is not None:
                    protected.append(pool)
        document: dict[str, Any] = {
            "apiVersion": "nodewright.io/v1alpha1",
            "kind": "Scenario",
            "name": f"generated-{self.seed}",
            "description": (
                f"generated seed {self.seed}: {len(services)} services, {len(bursts)} bursts, "
                f"{len(pools)} NodePools, {self.drawn_hours} h"
                + (f" compressed to {format_duration(round(self.duration * self.factor))}" if self.factor != 1 else "")
                + (f", replicas x{self.scale:g}" if self.scale != 1 else "")
            ),
            "duration": self.time(self.duration),
            "seed": self.seed,
            "zones": zones,
            "consolidation": "nodewright",
            "nodepools": pools,
            "nodeclasses": [NODECLASS],
            "workloads": [*daemonsets, *services, *bursts],
        }
        if pdbs:
            document["pdbs"] = pdbs
        interruptions = self.interruptions(pools, protected)
        if interruptions:
            document["interruptions"] = interruptions
        errors = self.capacity_errors(zones)
        if errors:
            document["capacity_errors"] = errors
        if rng.random() < 0.2:
            document["spot_pool_depth"] = {"min": 2, "max": rng.choice((20, 50))}
        return document

    # -- NodePools -----------------------------------------------------------------------------------

    def nodepools(self, count: int) -> list[dict[str, Any]]:
        rng = self.rng
        weights = sorted(rng.sample(range(10, 100, 10), count), reverse=True)
        pools: list[dict[str, Any]] = []
        for index in range(count):
            capacity: list[str] = rng.choice((["spot", "on-demand"], ["spot", "on-demand"], ["spot"], ["on-demand"]))
            arch: list[str] = rng.choice((["amd64"], ["arm64"], ["amd64", "arm64"], ["amd64", "arm64"]))
            categories = rng.choice((["c", "m", "r"], ["c", "m", "r"], ["c", "m"], ["m", "r"], ["c", "m", "r", "t"]))
            # Every pool must be able to run every service: the memory-heavy shapes need 12Gi pods.
            if count == 1 or index == count - 1:
                categories = sorted({*categories, "m", "r"})
            generation = rng.choice(("4", "5", "5", "6"))
            requirements: list[dict[str, Any]] = [
                {"key": "karpenter.sh/capacity-type", "operator": "In", "values": capacity},
                {"key": "kubernetes.io/arch", "operator": "In", "values": arch},
                {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": categories},
                {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": [generation]},
            ]
            sizes = rng.choice(SIZES)
            if sizes is not None and index == count - 1 and "4xlarge" not in sizes:
                sizes = (*sizes, "4xlarge")  # and the largest burst pods (8 cpu) need a 4xlarge
            if sizes is not None:
                requirements.append({"key": "karpenter.k8s.aws/instance-size", "operator": "In", "values": list(sizes)})
            # The name says what the pool may launch.
            name = f"{capacity[0] if len(capacity) == 1 else 'any'}-{arch[0] if len(arch) == 1 else 'multiarch'}"
            if any(p["metadata"]["name"] == name for p in pools):
                name = f"{name}-{index}"
            policy = "WhenEmptyOrUnderutilized" if rng.random() < 0.85 else "WhenEmpty"
            budgets = [{"nodes": rng.choice(BUDGETS)}]
            spec: dict[str, Any] = {
                "template": {
                    "spec": {
                        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                        "requirements": requirements,
                    }
                },
                "disruption": {
                    "consolidationPolicy": policy,
                    "consolidateAfter": rng.choice(CONSOLIDATE_AFTER),
                    "budgets": budgets,
                },
            }
            if count > 1:
                spec["weight"] = weights[index]
            pools.append(
                {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name}, "spec": spec}
            )
        return pools

    def limit(self, pools: list[dict[str, Any]], services: list[dict[str, Any]], bursts: list[dict[str, Any]]) -> None:
        """Give some NodePools a cpu limit, from the cpu the workloads ask for at their peak: a
        generous one (1.5-3x), or, for the first of several pools, a tight one (half) so the
        rest overflows into the next pool.
        """
        peak = sum(_peak_cpu(w) for w in (*services, *bursts))
        pinned = {service["_pool"] for service in services}
        for index, pool in enumerate(pools):
            draw = self.rng.random()
            # A tight limit only where the overflow has somewhere to go: no service is pinned there.
            if index == 0 and len(pools) > 1 and draw < 0.25 and pool["metadata"]["name"] not in pinned:
                factor = 0.5
            elif draw < 0.5:
                factor = self.rng.uniform(1.5, 3.0)
            else:
                continue
            pool["spec"]["limits"] = {"cpu": str(max(8, round(peak * factor)))}

    # -- workloads -----------------------------------------------------------------------------------

    def service(self, index: int, pools: list[dict[str, Any]]) -> dict[str, Any]:
        rng = self.rng
        shape = rng.choices([s for s, _ in SHAPES], weights=[w for _, w in SHAPES])[0]
        name = f"{shape.name}-{index}"
        cpu, memory = rng.choice(shape.cpu), rng.choice(shape.memory)
        high = rng.randint(*shape.peak)
        anti = rng.random()
        if anti < 0.12:
            high = min(high, 30)  # one pod per node: a small service (a quorum, a cache ring)
        low = max(1, round(high * rng.uniform(0.05, 0.35)))
        workload = _deployment(name, "apps", cpu, memory, self.count(low))
        template = workload["manifest"]["spec"]["template"]
        labels, spec = template["metadata"]["labels"], template["spec"]
        pool = None
        if len(pools) > 1 and rng.random() < 0.25:
            pool = rng.choice(pools)["metadata"]["name"]
            spec["nodeSelector"] = {"karpenter.sh/nodepool": pool}
        if rng.random() < 0.4:
            spec["topologySpreadConstraints"] = [
                {
                    "maxSkew": 1,
                    "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": rng.choice(("DoNotSchedule", "DoNotSchedule", "ScheduleAnyway")),
                    "labelSelector": {"matchLabels": labels},
                }
            ]
        if anti < 0.12:
            spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term(labels)]}}
        elif anti < 0.25:
            spec["affinity"] = {
                "podAntiAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 100, "podAffinityTerm": _term(labels)}
                    ]
                }
            }
        if rng.random() < 0.08:
            template["metadata"]["annotations"] = {"karpenter.sh/do-not-disrupt": "true"}
        if rng.random() < 0.85:
            period = rng.choice((24 * HOUR, 12 * HOUR, self.duration, self.duration / 2))
            peak = period * rng.uniform(0.2, 0.8)
            every = rng.choice((2 * MINUTE, 5 * MINUTE, 5 * MINUTE, 10 * MINUTE))
            curve = {
                "min": self.count(low),
                "max": self.count(high),
                "period": self.time(period),
                "peak": self.time(peak),
                "every": self.step(every),
            }
            workload["replicas"] = [{"at": "0s", "diurnal": curve}]
        else:
            workload["manifest"]["spec"]["replicas"] = self.count(round((low + high) / 2))
        budget = rng.random()
        workload["_pdb"] = None
        if budget < 0.5:
            key, value = ("maxUnavailable", 1) if budget < 0.3 else ("minAvailable", rng.choice(("50%", "80%", "90%")))
            workload["_pdb"] = {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": name, "namespace": "apps"},
                "spec": {key: value, "selector": {"matchLabels": labels}},
            }
        workload["_pool"] = pool
        return workload

    def burst(self, index: int) -> dict[str, Any]:
        rng = self.rng
        cpu, memory = rng.choice(BURST_SHAPES)
        pods = rng.randint(20, 100)
        length = rng.choice((30, 45, 60, 90, 120)) * MINUTE
        start = rng.uniform(0.1, 0.9) * (self.duration - length)
        workload = _deployment(f"batch-{index}", "batch", cpu, memory, 0)
        workload["replicas"] = [
            {"at": "0s", "replicas": 0},
            {"at": self.time(start), "replicas": self.count(pods)},
            {"at": self.time(start + length), "replicas": 0},
        ]
        return workload

    def daemonset(self, index: int) -> dict[str, Any]:
        rng = self.rng
        name = ("node-agent", "log-shipper")[index]
        requests = {
            "cpu": rng.choice(("50m", "100m", "150m", "200m")),
            "memory": rng.choice(("64Mi", "128Mi", "256Mi")),
        }
        return {"manifest": node_daemonset(name, f"example.com/{name}:1.0", requests)}

    # -- events --------------------------------------------------------------------------------------

    def faults(self, rng: random.Random) -> list[dict[str, Any]]:
        """Two to five fault kinds, each at a modest rate, over the whole day or a window of it."""
        out: list[dict[str, Any]] = []
        for kind in sorted(rng.sample(sorted(_FAULT_RATES), rng.randint(2, 5))):
            low, high = _FAULT_RATES[kind]
            entry: dict[str, Any] = {"kind": kind, "rate": round(rng.uniform(low, high), 3)}
            if kind.startswith("kube-"):
                entry["verbs"] = ["list", "evict", "patch"]
            if rng.random() < 0.5:
                start = rng.uniform(0.0, 0.7) * self.duration
                entry["from"] = self.time(start)
                entry["until"] = self.time(start + rng.uniform(0.1, 0.3) * self.duration)
            out.append(entry)
        return out

    def faulty_interruption(self, rng: random.Random, pools: list[dict[str, Any]]) -> dict[str, Any] | None:
        """With faults, two or three spot nodes interrupted in the busy middle of the day, aimed at
        a NodePool that launches spot (None when none does): the day's own interruptions may find
        no spot node running, or not be drawn at all.
        """
        spot = sorted(p["metadata"]["name"] for p in pools if "spot" in _values(p, "karpenter.sh/capacity-type"))
        if not spot:
            return None
        return {
            "at": self.time(rng.uniform(0.3, 0.7) * self.duration),
            "count": rng.randint(2, 3),
            "within": self.time(rng.choice((0, 60))),
            "nodepool": rng.choice(spot),
        }

    def interruptions(self, pools: list[dict[str, Any]], protected: list[str]) -> list[dict[str, Any]]:
        """Spot interruptions: usually a storm (several nodes within 3 minutes, on the NodePool of a
        PDB-protected service when one is pinned to a spot pool), sometimes single ones too.
        """
        rng = self.rng
        spot = {p["metadata"]["name"] for p in pools if "spot" in _values(p, "karpenter.sh/capacity-type")}
        out: list[dict[str, Any]] = []
        if rng.random() < 0.8:
            storm: dict[str, Any] = {
                "at": self.time(rng.uniform(0.15, 0.85) * self.duration),
                "count": rng.randint(2, 5),
                "within": self.time(rng.choice((0, 60, 120, 180))),
            }
            targets = sorted(spot.intersection(protected))
            if targets and rng.random() < 0.7:
                storm["nodepool"] = rng.choice(targets)
            out.append(storm)
        for _ in range(rng.choice((0, 0, 1, 2))):
            out.append({"at": self.time(rng.uniform(0.05, 0.95) * self.duration), "count": 1})
        out.sort(key=lambda entry: _seconds(entry["at"]))
        return out

    def capacity_errors(self, zones: list[str]) -> list[dict[str, Any]]:
        rng = self.rng
        out = []
        for _ in range(rng.choice((0, 0, 1, 2))):
            start = rng.uniform(0.0, 0.8) * self.duration
            length = rng.choice((30, 60, 90, 180)) * MINUTE
            out.append(
                {
                    "instance_type": "*",
                    "zone": rng.choice(zones),
                    "capacity_type": rng.choice(("spot", "spot", "on-demand")),
                    "from": self.time(start),
                    "until": self.time(min(self.duration, start + length)),
                }
            )
        return out


def _deployment(name: str, namespace: str, cpu: str, memory: str, replicas: int) -> dict[str, Any]:
    """A workload entry holding a Deployment of `replicas` pods of one container, labelled app=name."""
    labels = {"app": name}
    container = {
        "name": name,
        "image": f"example.com/{name}:1.0",
        "resources": {"requests": {"cpu": cpu, "memory": memory}},
    }
    return {
        "manifest": {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": dict(labels)}, "spec": {"containers": [container]}},
            },
        }
    }


# Faults the generator draws, with the rates it draws them at: a bad day of an AWS region or an
# EKS control plane, not a broken one. Watch faults need `kube_api: http`, so they are left out.
_FAULT_RATES: dict[str, tuple[float, float]] = {
    "kube-5xx": (0.01, 0.1),
    "kube-429": (0.01, 0.1),
    "kube-timeout": (0.01, 0.05),
    "ec2-throttle": (0.05, 0.3),
    "ec2-partial-fleet": (0.05, 0.3),
    "dynamodb-throttle": (0.01, 0.1),
    "dynamodb-conditional": (0.01, 0.1),
    "crash": (0.02, 0.1),
    "timeout": (0.02, 0.1),
    "sqs-duplicate": (0.1, 0.5),
    "sqs-reorder": (0.1, 0.5),
}


def _term(labels: dict[str, str]) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": labels}, "topologyKey": "kubernetes.io/hostname"}


def _values(pool: dict[str, Any], key: str) -> list[str]:
    for requirement in pool["spec"]["template"]["spec"]["requirements"]:
        if requirement["key"] == key:
            return list(requirement["values"])
    return []


def _seconds(duration: str) -> float:
    from nodewright.model.duration import parse_duration

    return parse_duration(duration, allow_never=False) or 0.0


def _cpu(quantity: str) -> float:
    return float(quantity[:-1]) / 1000 if quantity.endswith("m") else float(quantity)


def _peak_cpu(workload: dict[str, Any]) -> float:
    """The cpu a workload asks for at its highest replica count."""
    spec = workload["manifest"]["spec"]
    counts = [spec.get("replicas", 0)]
    for segment in workload.get("replicas", ()):
        counts.append(segment["diurnal"]["max"] if "diurnal" in segment else segment["replicas"])
    requests = spec["template"]["spec"]["containers"][0]["resources"]["requests"]
    return float(max(counts)) * _cpu(str(requests["cpu"]))
