"""EC2 and the kubelet, as the world sees them (`SimulatedEc2`'s hooks): the scenario's capacity
errors, prices and spot pool depth, the faults that cut a fleet short, the status checks the node
failures impaired; each launched instance accounted for and, after `boot_delay`, a Ready Node with
the labels and taints of its user data; each terminated instance's Node removed at once (pods
still on it are lost) and EC2's state-change events put on the bus. Launches, fleet answers,
terminations and registrations are published on the change feed (the audits and the pods'
accounting follow them there).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from nodewright.adapters.aws.ec2 import NODECLAIM_TAG, NODEPOOL_TAG
from nodewright.engine.interruption.rules import STATE_CHANGE_NOTIFICATION
from nodewright.model import labels as wk
from nodewright.model.nodepool import NodePool
from nodewright.ports import Clock
from nodewright.simulator.report.metrics import InstanceRecord, Recorder
from nodewright.simulator.scenario import Scenario
from nodewright.simulator.standins.catalog import SimCatalog
from nodewright.simulator.standins.ec2 import Ec2Hooks, FleetCall, Launched
from nodewright.simulator.standins.faults import Faults
from nodewright.simulator.standins.kube import SimulatedCluster, node_for, registration
from nodewright.simulator.standins.lambdas import REGION, EventLoop, Lambdas
from nodewright.simulator.world.failures import NodeFailures
from nodewright.simulator.world.feed import (
    ChangeFeed,
    FleetAnswered,
    InstanceLaunched,
    InstancesTerminating,
    NodeRegistered,
)
from nodewright.simulator.world.signals import Ec2Signals

TERMINATED_BY = {"provisioner": "provisioner", "interruption": "interruption", "consolidator": "consolidation"}


class Kubelet(Ec2Hooks):
    """EC2's hooks and the kubelet (module docstring)."""

    def __init__(
        self,
        *,
        scenario: Scenario,
        clock: Clock,
        loop: EventLoop,
        lambdas: Lambdas,
        cluster: SimulatedCluster,
        catalog: SimCatalog,
        pools: dict[str, NodePool],
        faults: Faults,
        recorder: Recorder,
        ec2: Any,
        failures: NodeFailures,
        signals: Ec2Signals,
        feed: ChangeFeed,
    ) -> None:
        self._scenario = scenario
        self._clock = clock
        self._loop = loop
        self._lambdas = lambdas
        self._cluster = cluster
        self._catalog = catalog
        self._pools = pools
        self._faults = faults
        self._recorder = recorder
        self._ec2 = ec2  # moto's EC2 client: what the kubelet reads of its instance
        self._failures = failures
        self._signals = signals
        self._feed = feed
        self._booting: dict[str, float] = {}  # instance -> when its node registers

    @property
    def booting(self) -> int:
        """How many launched instances have no Node yet."""
        return len(self._booting)

    def capacity_error(self, instance_type: str, zone: str, capacity_type: str) -> str | None:
        """The scenario's capacity errors, at the current virtual time."""
        t = self._clock.now() - self._scenario.start
        for error in self._scenario.capacity_errors:
            if error.matches(instance_type, zone, capacity_type, t):
                return error.code
        return None

    def price(self, instance_type: str, zone: str, capacity_type: str) -> float | None:
        """The scenario's price of the offering (the catalog the controllers read too)."""
        return self._catalog.price(instance_type, zone, capacity_type, None) or None

    def spot_depth(self, instance_type: str, zone: str) -> int | None:
        """The spot capacity the scenario drew for the pool."""
        return self._scenario.pool_depth(instance_type, zone)

    def short_fleet(self) -> bool:
        """An `ec2-partial-fleet` fault strikes this CreateFleet (only a function's)."""
        return self._faults.invocation() is not None and self._faults.draw("ec2-partial-fleet", "ec2:fleet") is not None

    def effect(self, operation: str) -> None:
        """A whole CreateFleet or TerminateInstances was carried out: a crash may follow."""
        self._faults.effect(f"ec2:{operation}")

    def impaired(self, instance_id: str) -> tuple[tuple[str, ...], float] | None:
        """The status checks the scenario's node failures impaired on the instance."""
        return self._failures.impaired(instance_id)

    def fleet(self, call: FleetCall) -> None:
        """A CreateFleet call was answered: on the feed (the audits price its choices)."""
        self._feed.publish(FleetAnswered(call))

    def launched(self, instance: Launched) -> None:
        """Account for the instance and boot it into a Node after the boot delay."""
        now = self._clock.now()
        pool_name = instance.tags.get(NODEPOOL_TAG, "")
        pool = self._pools.get(pool_name)
        nodeclass = self._scenario.nodeclasses.get(pool.node_class_ref.name) if pool else None
        current = self._lambdas.current
        record = InstanceRecord(
            instance_id=instance.instance_id,
            instance_type=instance.instance_type,
            zone=instance.zone,
            capacity_type=instance.capacity_type,
            nodepool=pool_name,
            price=self._catalog.price(instance.instance_type, instance.zone, instance.capacity_type, nodeclass),
            launched_at=now,
            launched_by=current.function if current is not None else "world",
            nodeclaim=instance.tags.get(NODECLAIM_TAG, ""),
        )
        self._recorder.instances[instance.instance_id] = record
        self._recorder.launches.append(now)
        self._feed.publish(InstanceLaunched(record, pool, nodeclass))
        self._booting[instance.instance_id] = now + self._scenario.boot_delay
        self._loop.at(now + self._scenario.boot_delay, lambda: self._register(instance.instance_id))

    def _register(self, instance_id: str) -> None:
        self._booting.pop(instance_id, None)
        record = self._recorder.instances.get(instance_id)
        if record is None or record.terminated_at is not None:
            return
        described = self._ec2.describe_instances(InstanceIds=[instance_id])
        item = next((i for r in described.get("Reservations", []) for i in r.get("Instances", [])), None)
        if item is None or item.get("State", {}).get("Name") not in ("pending", "running"):
            return
        user_data = self._ec2.describe_instance_attribute(InstanceId=instance_id, Attribute="userData")
        labels, taints = registration(str((user_data.get("UserData") or {}).get("Value", "")))
        pool = self._pools.get(record.nodepool)
        nodeclass = self._scenario.nodeclasses.get(pool.node_class_ref.name) if pool else None
        instance_type = self._catalog.find(record.instance_type, nodeclass)
        if instance_type is None:
            self._recorder.warnings.append(f"{instance_id}: {record.instance_type} is not in the catalog; no node")
            return
        name = str(item.get("PrivateDnsName") or instance_id)
        record.image_id = str(item.get("ImageId", ""))
        labels = {
            **labels,
            wk.HOSTNAME: name,
            wk.ZONE: record.zone,
            wk.REGION: REGION,
            wk.ARCH: instance_type.arch,
            wk.OS: "linux",
            wk.INSTANCE_TYPE: record.instance_type,
        }
        if wk.CAPACITY_TYPE not in labels:
            labels[wk.CAPACITY_TYPE] = record.capacity_type
        node = node_for(
            name,
            labels=labels,
            taints=taints,
            startup_taints=pool.startup_taints if pool else (),
            capacity=instance_type.capacity,
            allocatable=instance_type.allocatable,
            provider_id=f"aws:///{record.zone}/{instance_id}",
        )
        self._cluster.memory.add_node(node)
        self._cluster.memory.reconcile_daemonsets()
        record.node = name
        record.ready_at = self._clock.now()
        self._feed.publish(NodeRegistered(self._clock.now(), name))

    def stopped(self, instance_ids: Sequence[str]) -> None:
        """Standby instances were stopped: billed for their volumes only from now; their kubelets
        stop, so their Nodes go NotReady (the node lifecycle's view once heartbeats stop); EC2's
        state-change events go on the bus.
        """
        now = self._clock.now()
        for instance_id in instance_ids:
            record = self._recorder.instances.get(instance_id)
            if record is None or record.terminated_at is not None or record.stopped_at is not None:
                continue
            record.stopped_at = now
            record.stops.append(now)
            if record.node and self._cluster.get_node(record.node) is not None:
                self._cluster.memory.set_node_ready(record.node, False)
            # EC2 reports the stop on the bus, as for any state change: the interruption function must let it be.
            for state in ("stopping", "stopped"):
                self._signals.put(STATE_CHANGE_NOTIFICATION, instance_id, {"instance-id": instance_id, "state": state})

    def started(self, instance_ids: Sequence[str]) -> None:
        """Stopped standby instances were started: billed at their price again; each Node is Ready
        `start_delay` later (the warm boot of an initialized node: no bootstrap, images cached).
        """
        now = self._clock.now()
        for instance_id in instance_ids:
            record = self._recorder.instances.get(instance_id)
            if record is None or record.terminated_at is not None or record.stopped_at is None:
                continue
            record.stopped_seconds += now - record.stopped_at
            record.stopped_at = None
            record.started_at.append(now)
            self._loop.at(now + self._scenario.start_delay, functools.partial(self._ready_again, instance_id))

    def _ready_again(self, instance_id: str) -> None:
        record = self._recorder.instances.get(instance_id)
        if record is None or record.terminated_at is not None or record.stopped_at is not None or not record.node:
            return
        if self._cluster.get_node(record.node) is None:
            return
        self._cluster.memory.set_node_ready(record.node)
        record.ready_again_at.append(self._clock.now())
        self._feed.publish(NodeRegistered(self._clock.now(), record.node))

    def terminating(self, instance_ids: Sequence[str], reason: str | None) -> None:
        """Instances are about to be terminated: on the feed (the audits count what their nodes hold)."""
        self._feed.publish(InstancesTerminating(tuple(instance_ids), reason))

    def terminated(self, instance_ids: Sequence[str], reason: str | None) -> None:
        """The instances are gone: their nodes with them; EC2 reports the state changes. Who took
        them is `reason` (EC2's own), else the function whose invocation terminated them.
        """
        now = self._clock.now()
        current = self._lambdas.current
        by = reason or (TERMINATED_BY.get(current.function, current.function) if current else "world")
        for instance_id in instance_ids:
            record = self._recorder.instances.get(instance_id)
            if record is None or record.terminated_at is not None:
                continue
            record.terminated_at = now
            record.terminated_by = by
            self._booting.pop(instance_id, None)
            if record.node and self._cluster.get_node(record.node) is not None:
                self._cluster.memory.remove_node(record.node)
                self._cluster.memory.reconcile_daemonsets()
            for state in ("shutting-down", "terminated"):
                self._signals.put(STATE_CHANGE_NOTIFICATION, instance_id, {"instance-id": instance_id, "state": state})
