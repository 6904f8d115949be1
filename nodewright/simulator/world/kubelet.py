"""EC2 and the kubelet, as the world sees them (`aws.Ec2Hooks`): the scenario's capacity errors,
prices and spot pool depth; each launched instance accounted for and, after `boot_delay`, a Ready
Node with the labels and taints of its user data; each terminated instance's Node removed at once
(pods still on it are lost) and EC2's state-change events put on the bus.
"""

from __future__ import annotations

from collections.abc import Sequence

from nodewright.adapters.aws.ec2 import NODECLAIM_TAG, NODEPOOL_TAG
from nodewright.engine.interruption.rules import (
    STATE_CHANGE_NOTIFICATION,
)
from nodewright.model import labels as wk
from nodewright.simulator.report.metrics import (
    InstanceRecord,
)
from nodewright.simulator.standins.account import (
    Ec2Hooks,
    Launched,
)
from nodewright.simulator.standins.kube import node_for, registration
from nodewright.simulator.standins.lambdas import REGION
from nodewright.simulator.world.audits import Audits
from nodewright.simulator.world.spot import SpotInterruptions

TERMINATED_BY = {"provisioner": "provisioner", "interruption": "interruption", "consolidator": "consolidation"}


class Kubelet(Audits, SpotInterruptions, Ec2Hooks):
    """EC2's hooks and the kubelet (module docstring)."""

    def capacity_error(self, instance_type: str, zone: str, capacity_type: str) -> str | None:
        """The scenario's capacity errors, at the current virtual time."""
        t = self.clock.now() - self.scenario.start
        for error in self.scenario.capacity_errors:
            if error.matches(instance_type, zone, capacity_type, t):
                return error.code
        return None

    def price(self, instance_type: str, zone: str, capacity_type: str) -> float | None:
        """The scenario's price of the offering (the catalog the controllers read too)."""
        return self.catalog.price(instance_type, zone, capacity_type, None) or None

    def spot_depth(self, instance_type: str, zone: str) -> int | None:
        """The spot capacity the scenario drew for the pool."""
        return self.scenario.pool_depth(instance_type, zone)

    def short_fleet(self) -> bool:
        """An `ec2-partial-fleet` fault strikes this CreateFleet (only a function's)."""
        return self.faults.invocation() is not None and self.faults.draw("ec2-partial-fleet", "ec2:fleet") is not None

    def effect(self, operation: str) -> None:
        """A whole CreateFleet or TerminateInstances was carried out: a crash may follow."""
        self.faults.effect(f"ec2:{operation}")

    def launched(self, instance: Launched) -> None:
        """Account for the instance and boot it into a Node after the boot delay."""
        now = self.clock.now()
        pool_name = instance.tags.get(NODEPOOL_TAG, "")
        pool = self.pools.get(pool_name)
        nodeclass = self.scenario.nodeclasses.get(pool.node_class_ref.name) if pool else None
        current = self.lambdas.current
        record = InstanceRecord(
            instance_id=instance.instance_id,
            instance_type=instance.instance_type,
            zone=instance.zone,
            capacity_type=instance.capacity_type,
            nodepool=pool_name,
            price=self.catalog.price(instance.instance_type, instance.zone, instance.capacity_type, nodeclass),
            launched_at=now,
            launched_by=current.function if current is not None else "world",
            nodeclaim=instance.tags.get(NODECLAIM_TAG, ""),
        )
        self.recorder.instances[instance.instance_id] = record
        self.recorder.launches.append(now)
        self._check_limits(pool, nodeclass)
        self._booting[instance.instance_id] = now + self.scenario.boot_delay
        self.loop.at(now + self.scenario.boot_delay, lambda: self._register(instance.instance_id))

    def _register(self, instance_id: str) -> None:
        self._booting.pop(instance_id, None)
        record = self.recorder.instances.get(instance_id)
        if record is None or record.terminated_at is not None:
            return
        described = self.account.ec2.describe_instances(InstanceIds=[instance_id])
        item = next((i for r in described.get("Reservations", []) for i in r.get("Instances", [])), None)
        if item is None or item.get("State", {}).get("Name") not in ("pending", "running"):
            return
        user_data = self.account.ec2.describe_instance_attribute(InstanceId=instance_id, Attribute="userData")
        labels, taints = registration(str((user_data.get("UserData") or {}).get("Value", "")))
        pool = self.pools.get(record.nodepool)
        nodeclass = self.scenario.nodeclasses.get(pool.node_class_ref.name) if pool else None
        instance_type = self.catalog.find(record.instance_type, nodeclass)
        if instance_type is None:
            self.recorder.warnings.append(f"{instance_id}: {record.instance_type} is not in the catalog; no node")
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
        self.cluster.add_node(node)
        self.cluster.reconcile_daemonsets()
        record.node = name
        record.ready_at = self.clock.now()
        self._node_instance[name] = instance_id
        self._dirty = True

    def terminating(self, instance_ids: Sequence[str]) -> None:
        """A controller (or EC2 itself) is terminating instances: audit what their nodes still hold."""
        if self._reason in ("spot-reclaimed", "capacity-block-reclaimed"):
            return  # EC2 takes these, not a controller
        for instance_id in instance_ids:
            record = self.recorder.instances.get(instance_id)
            if record is not None and record.node and record.terminated_at is None:
                self._audit_node(record.node, "instance terminated by a controller")

    def terminated(self, instance_ids: Sequence[str]) -> None:
        """The instances are gone: their nodes with them; EC2 reports the state changes."""
        now = self.clock.now()
        current = self.lambdas.current
        reason = self._reason or (TERMINATED_BY.get(current.function, current.function) if current else "world")
        for instance_id in instance_ids:
            record = self.recorder.instances.get(instance_id)
            if record is None or record.terminated_at is not None:
                continue
            record.terminated_at = now
            record.terminated_by = reason
            self._booting.pop(instance_id, None)
            if record.node and self.cluster.get_node(record.node) is not None:
                self.cluster.remove_node(record.node)
                self.cluster.reconcile_daemonsets()
            for state in ("shutting-down", "terminated"):
                self._put(STATE_CHANGE_NOTIFICATION, instance_id, {"instance-id": instance_id, "state": state})
