"""Did each capability of a generated day act, and within its rules? Standby, DRA, zone balance, late DaemonSet.

Role: a generated day with `--features` (`nodewright.simulator.scenario.generate_features`) loses no
pod and breaks no budget only means something if the features did their work on it. `FeatureWatch`
is attached to a simulation before its clock runs (`run_scenario(..., on_built=watch.attach)`),
samples the cluster once a virtual minute, and after the run `figures(world, summary)` says, per
feature the scenario has:

* standby: buffers, standby nodes started (the summary's fidelity audit) and stopped at the end;
* dra: device pods seen bound, and those bound to a node whose type does not publish the devices
  their claim asks for (checked with `model.dra`'s own matching against what the node's instance
  type publishes, not with the engine's lowering), and the nodes they ran on;
* zone balance: per balanced NodePool, its skew (most minus fewest nodes, or vCPUs, by zone,
  counting as `engine.zonebalance` counts them: the NodePool's Nodes that are not leaving and its
  claims launched whose Node has not registered yet, its serving nodes and its standby ones apart)
  each minute: for the serving nodes the worst minute, the time-weighted mean and the share of
  minutes over the bound; the mean skew of its standby nodes alone and of all its nodes together;
* late DaemonSet: per NodePool and its overflow policy, the daemon pods waiting for one of its
  nodes that do not fit it (`engine.daemonfit.overflows`; the peak and at the end), the
  `DaemonSetPodsDoNotFit` Events on its nodes, and the `daemonset-overflow` replacements done.

`shortfalls(figures)` names what falls short: a feature that never acted (no standby node started,
no device pod bound, no overflow anywhere), a device pod on a node without its devices, a balanced
NodePool whose serving nodes' or standby nodes' mean skew is over its bound, and an overflow not
handled as its policy says (Replace: replaced; Report: an Event; Ignore: neither). Measurement
only: reads the world, changes nothing in it (`snapshot_unrecorded`, no recorded API call).
"""

from __future__ import annotations

import collections
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from nodewright.engine.daemonfit import OVERFLOW, overflows
from nodewright.engine.devices import catalog_devices
from nodewright.engine.scheduling.inputs import in_flight
from nodewright.engine.zonebalance import claim_zone, skew
from nodewright.model import labels as wk
from nodewright.model.dra import DeviceObjects, PublishedDevices, matching
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.resources import CPU
from nodewright.model.snapshot import ClusterSnapshot
from nodewright.model.standby import STANDBY_LABEL
from nodewright.simulator.scenario import Scenario

SAMPLE_SECONDS = 60.0


class FeatureWatch:
    """The samples of one run (see the module docstring)."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.objects = DeviceObjects.parse(
            classes=[d for d in scenario.devices if d.get("kind") == "DeviceClass"],
            claims=[d for d in scenario.devices if d.get("kind") == "ResourceClaim"],
            templates=[d for d in scenario.devices if d.get("kind") == "ResourceClaimTemplate"],
        )
        self.balanced = {p.name: p.zone_balance for p in scenario.nodepools if p.zone_balance is not None}
        self.late = {d.name for _, d in scenario.late_daemonsets}
        # NodePool -> per minute: the skew of all its nodes together, of its running (serving)
        # ones alone and of its standby ones alone (the engine holds each of the last two to the bound).
        self.skews: dict[str, list[float]] = {name: [] for name in self.balanced}
        self.running_skews: dict[str, list[float]] = {name: [] for name in self.balanced}
        self.standby_skews: dict[str, list[float]] = {name: [] for name in self.balanced}
        self.device_pods: set[str] = set()
        self.device_nodes: set[str] = set()
        self.misplaced: dict[str, str] = {}  # pod key -> the node without its devices
        self.published: Mapping[str, tuple[PublishedDevices, ...]] = {}
        self.vcpus: Mapping[str, float] = {}  # instance type -> vCPUs, for a claim's weight by `cpu`
        self.waiting: dict[str, list[int]] = collections.defaultdict(list)  # NodePool -> late daemon pods waiting

    def attach(self, world: Any) -> None:
        """Sample `world` every SAMPLE_SECONDS of virtual time, from its start to its end."""
        # What each type's drivers publish, from the catalog's GPU and accelerator data (a Node's
        # own labels need not carry them).
        types = world.catalog.instance_types(None)
        self.published = catalog_devices(types)
        self.vcpus = {it.name: it.capacity[CPU] / 1000 for it in types}
        t = 0.0
        while t <= self.scenario.duration:
            world.loop.at(
                self.scenario.start + t,
                lambda: self.sample(world.cluster.snapshot_unrecorded(), world.store.claims()),
            )
            t += SAMPLE_SECONDS

    def sample(self, snapshot: ClusterSnapshot, claims: Sequence[NodeClaim] = ()) -> None:
        """One minute's look at the cluster (and at Nodewright's claims, for those in flight)."""
        nodes = {n.name: n for n in snapshot.nodes}
        launching = in_flight(snapshot.nodes, claims) if self.balanced else ()
        for name, balance in self.balanced.items():
            running = dict.fromkeys(self.scenario.zones, 0.0)
            standby = dict.fromkeys(self.scenario.zones, 0.0)
            for node in nodes.values():
                zone = node.labels.get(wk.ZONE, "")
                if node.nodepool == name and zone and not node.leaving:
                    load = standby if STANDBY_LABEL in node.labels else running
                    load[zone] = load.get(zone, 0.0) + (1.0 if balance.by == "nodes" else node.capacity[CPU] / 1000)
            for claim in launching:
                zone = claim_zone(claim)
                if claim.nodepool == name and zone:
                    load = standby if STANDBY_LABEL in claim.labels else running
                    weight = 1.0 if balance.by == "nodes" else self.vcpus.get(claim.instance_type, 0.0)
                    load[zone] = load.get(zone, 0.0) + weight
            self.skews[name].append(skew({z: running.get(z, 0.0) + standby.get(z, 0.0) for z in running}))
            self.running_skews[name].append(skew(running))
            self.standby_skews[name].append(skew(standby))
        for pod in snapshot.pods:
            if pod.device_claims and pod.node_name in nodes:
                self.device_pods.add(pod.key)
                self.device_nodes.add(pod.node_name)
                node = nodes[pod.node_name]
                kind = node.labels.get(wk.INSTANCE_TYPE, "")
                if pod.key not in self.misplaced and not self._has_devices(pod.namespace, pod.device_claims, kind):
                    self.misplaced[pod.key] = f"{node.name} ({kind or '?'})"
        if self.late:
            # As the engine finds them: a daemon pod kube-scheduler just has not bound yet is no overflow.
            waiting: collections.Counter[str] = collections.Counter()
            for overflow in overflows(snapshot, self.scenario.nodepools).values():
                waiting[overflow.nodepool] += len(overflow.pods)
            for pool in self.scenario.nodepools:
                self.waiting[pool.name].append(waiting.get(pool.name, 0))

    def _has_devices(self, namespace: str, claims: Any, instance_type: str) -> bool:
        """Whether a node of `instance_type` publishes what every one of the pod's claims asks for."""
        published = self.published.get(instance_type, ())
        for claim in claims:
            if claim.template_name:
                requests = self.objects.templates[f"{namespace}/{claim.template_name}"].requests
            else:
                requests = self.objects.claims[f"{namespace}/{claim.claim_name}"].requests
            for request in requests:
                device_class = self.objects.classes[request.device_class]
                if matching(request, device_class, published) < request.count:
                    return False
        return True

    def figures(self, world: Any, summary: Mapping[str, Any]) -> dict[str, Any]:
        """The run's figures per feature it has (module docstring)."""
        out: dict[str, Any] = {}
        if self.scenario.capacitybuffers and any(
            b.provisioning_strategy != "buffer.x-k8s.io/active-capacity" for b in self.scenario.capacitybuffers
        ):
            standby = summary.get("standby") or {}
            out["standby"] = {
                "buffers": len(self.scenario.capacitybuffers),
                "started": len(standby.get("nodes_from_standby") or ()),
                "stopped_at_end": standby.get("stopped_at_end", 0),
            }
        if self.objects:
            out["dra"] = {
                "device_pods": len(self.device_pods),
                "device_nodes": len(self.device_nodes),
                "misplaced": dict(sorted(self.misplaced.items())),
            }
        if self.balanced:
            out["zone_balance"] = {
                name: {
                    "bound": f"{balance.by}:{balance.max_skew:g}",
                    "skew_max": max(self.running_skews[name], default=0.0),
                    "skew_mean": _mean(self.running_skews[name]),
                    "minutes_over": round(
                        sum(1 for s in self.running_skews[name] if s > balance.max_skew)
                        / max(1, len(self.running_skews[name])),
                        3,
                    ),
                    "standby_skew_mean": _mean(self.standby_skews[name]),
                    "total_skew_mean": _mean(self.skews[name]),
                }
                for name, balance in sorted(self.balanced.items())
            }
        if self.late:
            out["late_daemonset"] = self._late(world)
        return out

    def _late(self, world: Any) -> dict[str, Any]:
        node_pool = {r.node: r.nodepool for r in world.recorder.instances.values() if r.node}
        events: collections.Counter[str] = collections.Counter()
        for stored in world.cluster.events():
            if stored.event.reason == OVERFLOW:
                events[node_pool.get(stored.event.regarding.name, "")] += 1
        replaced: collections.Counter[str] = collections.Counter()
        for done in world.observers["consolidator"].of("disruption-done"):
            if done.get("method") == "daemonset-overflow":
                for node in done.get("candidates") or ():
                    replaced[node_pool.get(str(node), "")] += 1
        return {
            pool.name: {
                "policy": pool.daemon_overflow,
                "waiting_peak": max(self.waiting[pool.name], default=0),
                "waiting_at_end": self.waiting[pool.name][-1] if self.waiting[pool.name] else 0,
                "events": events.get(pool.name, 0),
                "replaced": replaced.get(pool.name, 0),
            }
            for pool in self.scenario.nodepools
        }


def _mean(values: list[float]) -> float:
    return round(statistics.fmean(values), 3) if values else 0.0


def shortfalls(figures: Mapping[str, Any]) -> list[str]:
    """What falls short in one run's `FeatureWatch.figures` (module docstring); [] when all held."""
    out: list[str] = []
    standby = figures.get("standby")
    if standby is not None and not standby["started"]:
        out.append("standby: no standby node started")
    dra = figures.get("dra")
    if dra is not None:
        if not dra["device_pods"]:
            out.append("dra: no device pod bound")
        for pod, node in dra["misplaced"].items():
            out.append(f"dra: {pod} on {node}, which lacks its devices")
    for name, zone in (figures.get("zone_balance") or {}).items():
        by, _, bound = zone["bound"].partition(":")
        if zone["skew_mean"] > float(bound):
            out.append(f"zone balance: NodePool {name}'s mean skew {zone['skew_mean']:g} {by} over {zone['bound']}")
        if zone["standby_skew_mean"] > float(bound):
            out.append(
                f"zone balance: NodePool {name}'s standby nodes' mean skew {zone['standby_skew_mean']:g} {by} "
                f"over {zone['bound']}"
            )
    late = figures.get("late_daemonset")
    if late is not None:
        if not any(p["waiting_peak"] for p in late.values()):
            out.append("late DaemonSet: its pods fit everywhere (no overflow to handle)")
        for name, pool in late.items():
            overflowed = pool["waiting_peak"] > 0
            if pool["policy"] == "Replace" and overflowed and not pool["replaced"]:
                out.append(f"late DaemonSet: NodePool {name} (Replace) replaced no overflowing node")
            if pool["policy"] == "Report" and overflowed and not pool["events"]:
                out.append(f"late DaemonSet: NodePool {name} (Report) put no Event on an overflowing node")
            if pool["policy"] == "Ignore" and (pool["events"] or pool["replaced"]):
                out.append(f"late DaemonSet: NodePool {name} (Ignore) acted on its overflow")
    return out
