"""The simulated account's EC2: moto's client with CreateFleet, capacity and status checks as EC2 does them.

Role: `SimulatedEc2` (described in `nodewright.simulator.standins.account`'s docstring) wraps moto's EC2
client: CreateFleet chooses what to launch as EC2 does (`nodewright.simulator.standins.fleet`), answers
with EC2's capacity errors for the offerings a scenario declares out of capacity and for spot
pools that ran short, and reports each launch, fleet call and termination to the world through
`Ec2Hooks`; DescribeInstanceStatus answers the impaired checks the world injects.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from nodewright.simulator.standins.fleet import LOWEST_PRICE, Pool, allocate
from nodewright.simulator.standins.reservations import SimulatedReservations
from nodewright.simulator.standins.spot_requests import SpotRequests

CAPACITY_MESSAGE = (
    "We currently do not have sufficient {type} capacity in the Availability Zone you requested ({zone}). "
    "Our system will be working on provisioning additional capacity."
)


@dataclass(frozen=True, slots=True)
class Launched:
    """One instance a CreateFleet call started."""

    instance_id: str
    instance_type: str
    zone: str
    capacity_type: str
    tags: Mapping[str, str]
    price: float | None = None


@dataclass(frozen=True, slots=True)
class FleetCall:
    """One CreateFleet call as EC2 answered it, for the fidelity audit: the allocation strategy,
    the overrides EC2 had capacity for when asked (their prices from the scenario's price table)
    and the instances it started.
    """

    capacity_type: str
    strategy: str
    allowed: tuple[Pool, ...]
    launched: tuple[Launched, ...]


class Ec2Hooks:
    """What the world wants to hear from EC2 (the world overrides these)."""

    def capacity_error(self, instance_type: str, zone: str, capacity_type: str) -> str | None:
        """The error code EC2 should answer for this offering now, or None when it has capacity."""
        return None

    def price(self, instance_type: str, zone: str, capacity_type: str) -> float | None:
        """$/h of the offering in the scenario's price table (None: unknown, chosen last)."""
        return None

    def spot_depth(self, instance_type: str, zone: str) -> int | None:
        """How many spot instances the pool holds in all (None: no limit)."""
        return None

    def launched(self, instance: Launched) -> None:
        """An instance was started."""

    def fleet(self, call: FleetCall) -> None:
        """A CreateFleet call was answered (after `launched` for each of its instances)."""

    def terminating(self, instance_ids: Sequence[str], reason: str | None) -> None:
        """These instances are about to be terminated (their nodes still hold their pods); `reason`
        is EC2's own (`SimulatedEc2.reclaim`), None for a caller's TerminateInstances.
        """

    def terminated(self, instance_ids: Sequence[str], reason: str | None) -> None:
        """These instances were terminated (`reason` as for `terminating`)."""

    def stopped(self, instance_ids: Sequence[str]) -> None:
        """These instances were stopped (StopInstances)."""

    def started(self, instance_ids: Sequence[str]) -> None:
        """These stopped instances were started (StartInstances)."""

    def short_fleet(self) -> bool:
        """True when this CreateFleet comes back short (a fault): fewer instances, plus Errors."""
        return False

    def effect(self, operation: str) -> None:
        """EC2 carried out a whole CreateFleet or TerminateInstances for the caller (a fault may
        stop the caller right after it).
        """

    def impaired(self, instance_id: str) -> tuple[tuple[str, ...], float] | None:
        """The instance's impaired status checks ("system", "instance", "ebs") and since when
        (epoch seconds), or None when they pass.
        """
        return None


class SimulatedEc2:
    """moto's EC2 client that chooses what a CreateFleet launches as EC2 does, with capacity errors,
    spot pool depth and launch/termination reports (module docstring; the choice: `fleet.py`).
    """

    def __init__(
        self,
        client: Any,
        hooks: Ec2Hooks,
        *,
        reservations: SimulatedReservations | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self._client = client
        self.hooks = hooks
        # The scenario's capacity reservations (nodewright.simulator.standins.reservations), on `clock`.
        self.reservations = reservations
        self._now = clock or (lambda: 0.0)
        self._targets: dict[str, str] = {}  # launch template name -> the reservation it targets
        self._template_profiles: dict[str, str] = {}  # launch template name -> its instance profile
        # Instance id -> the instance profile its launch template named (moto's CreateFleet does
        # not copy it onto the instance): the node role audit of a node_roles scenario.
        self.instance_profiles: dict[str, str] = {}
        self._pool_of: dict[str, tuple[str, str, str]] = {}  # live instance -> (capacity type, type, zone)
        self._in_pool: Counter[tuple[str, str, str]] = Counter()
        self._zones: dict[str, str] = {}  # subnet id -> zone
        # True while this EC2 calls moto for itself after the first call of a CreateFleet (the
        # other pools' launches, a subnet lookup): one CreateFleet is one request to throttle.
        self.quiet = False
        # The spot requests moto does not name or mark (nodewright.simulator.standins.spot_requests).
        self.spot_requests = SpotRequests()

    def describe_instances(self, **request: Any) -> dict[str, Any]:
        """moto's DescribeInstances, each spot instance naming its spot request as on EC2."""
        return self.spot_requests.described(self._client.describe_instances(**request))

    def describe_spot_instance_requests(self, **request: Any) -> dict[str, Any]:
        """DescribeSpotInstanceRequests of those requests, marked once a warning went out."""
        return self.spot_requests.describe(request)

    def create_fleet(self, **request: Any) -> dict[str, Any]:
        """CreateFleet `instant`: the scenario's capacity errors and pool depths, then EC2's
        allocation strategy over every override of every config (`fleet.allocate`); moto starts
        what was chosen. Partial fulfilment and short pools answer as EC2 does (Errors entries).
        """
        target = request["TargetCapacitySpecification"]
        capacity_type = str(target.get("DefaultTargetCapacityType", "on-demand"))
        options = request.get("SpotOptions" if capacity_type == "spot" else "OnDemandOptions") or {}
        strategy = str(options.get("AllocationStrategy") or LOWEST_PRICE)
        errors: list[dict[str, Any]] = []
        pools: list[Pool] = []
        chosen: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}  # position -> (config, override)
        targets: dict[int, str] = {}  # config index -> the reservation its template targets
        for index, config in enumerate(request.get("LaunchTemplateConfigs", [])):
            targets[index] = self._target(config)
            for override in config.get("Overrides") or []:
                instance_type = str(override.get("InstanceType", ""))
                zone = str(override.get("AvailabilityZone") or self._zone(str(override.get("SubnetId", ""))))
                if not instance_type or not zone:
                    # Not a request Nodewright sends (types from the template): moto's own answer.
                    response: dict[str, Any] = self._client.create_fleet(**request)
                    return response
                # A launch into a reservation meets the scenario's `reserved` capacity errors (e.g.
                # ReservationCapacityExceeded while instances outside the cluster hold it).
                kind = "reserved" if targets[index] else capacity_type
                code = self.hooks.capacity_error(instance_type, zone, kind)
                if code is None and targets[index] and self.reservations is not None:
                    code = self.reservations.refusal(targets[index], instance_type, zone, self._now())
                if code is not None:
                    errors.append(_capacity_error(config, override, capacity_type, code, zone=zone))
                    continue
                available = None
                if targets[index] and self.reservations is not None:
                    available = self.reservations.available(targets[index])
                elif capacity_type == "spot":
                    depth = self.hooks.spot_depth(instance_type, zone)
                    if depth is not None:
                        available = max(0, depth - self._in_pool[(capacity_type, instance_type, zone)])
                priority = override.get("Priority")
                pool = Pool(
                    config=index,
                    position=len(pools),
                    instance_type=instance_type,
                    zone=zone,
                    price=self.hooks.price(instance_type, zone, capacity_type),
                    weight=float(override.get("WeightedCapacity") or 1.0),
                    priority=float(priority) if priority is not None else None,
                    available=available,
                )
                pools.append(pool)
                chosen[pool.position] = (config, override)
        allocation = allocate(pools, float(target.get("TotalTargetCapacity", 1)), strategy)
        short = list(allocation.short)
        launches = list(allocation.launches)
        if launches and self.hooks.short_fleet():
            # EC2 fulfils an instant fleet partly: the last pool gets half of its share (none of
            # one), and its shortfall comes back as an Errors entry.
            pool, count = launches[-1]
            launches[-1] = (pool, count // 2)
            short.append(pool)
        for pool in short:
            config, override = chosen[pool.position]
            errors.append(
                _capacity_error(config, override, capacity_type, "InsufficientInstanceCapacity", zone=pool.zone)
            )
        fleet_id = "fleet-00000000-0000-0000-0000-000000000000"
        instances: list[dict[str, Any]] = []
        launched: list[Launched] = []
        tags = {
            t["Key"]: t["Value"]
            for spec in request.get("TagSpecifications", [])
            if spec.get("ResourceType") == "instance"
            for t in spec.get("Tags", [])
        }
        first = True
        for pool, count in launches:
            if count <= 0:
                continue
            config, override = chosen[pool.position]
            bare = {k: v for k, v in override.items() if k not in ("WeightedCapacity", "Priority")}
            self.quiet = not first
            first = False
            try:
                answer = self._client.create_fleet(
                    **{
                        **request,
                        "TargetCapacitySpecification": {
                            "TotalTargetCapacity": count,
                            # moto knows no capacity-block market: a block's instance is on-demand to it.
                            "DefaultTargetCapacityType": "on-demand" if targets[pool.config] else capacity_type,
                        },
                        "LaunchTemplateConfigs": [{**config, "Overrides": [bare]}],
                    }
                )
            finally:
                self.quiet = False
            if not instances:
                fleet_id = str(answer.get("FleetId", fleet_id))
            errors += list(answer.get("Errors") or [])
            for entry in answer.get("Instances") or []:
                echoed = dict(entry.get("LaunchTemplateAndOverrides") or {})
                echoed["Overrides"] = override  # EC2 echoes the override it launched, weight and all
                instances.append({**entry, "LaunchTemplateAndOverrides": echoed})
                template = str((config.get("LaunchTemplateSpecification") or {}).get("LaunchTemplateName") or "")
                for instance_id in entry.get("InstanceIds") or []:
                    self.instance_profiles[str(instance_id)] = self._template_profiles.get(template, "")
                    reservation = targets[pool.config]
                    if reservation and self.reservations is not None:
                        self.reservations.launched(str(instance_id), reservation)
                    started = Launched(
                        instance_id=str(instance_id),
                        instance_type=pool.instance_type,
                        zone=pool.zone,
                        capacity_type="reserved" if reservation else str(entry.get("Lifecycle") or capacity_type),
                        tags=tags,
                        price=pool.price,
                    )
                    key = (started.capacity_type, started.instance_type, started.zone)
                    self._pool_of[started.instance_id] = key
                    self._in_pool[key] += 1
                    launched.append(started)
                    self.hooks.launched(started)
        self.hooks.fleet(
            FleetCall(
                capacity_type=capacity_type,
                strategy=strategy,
                allowed=tuple(p for p in pools if p.available is None or p.available > 0),
                launched=tuple(launched),
            )
        )
        self.hooks.effect("CreateFleet")
        return {"FleetId": fleet_id, "Errors": errors, "Instances": instances}

    def terminate_instances(self, **request: Any) -> dict[str, Any]:
        """TerminateInstances, reported to the world before and after; the pools get their room back."""
        return self._terminate(request, None)

    def reclaim(self, instance_ids: Sequence[str], reason: str) -> None:
        """EC2 itself terminates the instances (a spot reclaim, a capacity block's end): as
        TerminateInstances, reported to the world with `reason`.
        """
        self._terminate({"InstanceIds": list(instance_ids)}, reason)

    def _terminate(self, request: Mapping[str, Any], reason: str | None) -> dict[str, Any]:
        ids = [str(i) for i in request.get("InstanceIds", [])]
        self.hooks.terminating(ids, reason)
        response: dict[str, Any] = self._client.terminate_instances(**request)
        gone = [str(c["InstanceId"]) for c in response.get("TerminatingInstances", []) if c.get("InstanceId")]
        for instance_id in gone:
            key = self._pool_of.pop(instance_id, None)
            if key is not None:
                self._in_pool[key] -= 1
        if self.reservations is not None:
            self.reservations.released(gone)
        self.hooks.terminated(gone, reason)
        self.hooks.effect("TerminateInstances")
        return response

    def stop_instances(self, **request: Any) -> dict[str, Any]:
        """StopInstances: moto's, reported to the world (its kubelet stops with the instance)."""
        response: dict[str, Any] = self._client.stop_instances(**request)
        changed = [
            str(c["InstanceId"])
            for c in response.get("StoppingInstances", [])
            if c.get("PreviousState", {}).get("Name") in ("pending", "running")
        ]
        self.hooks.stopped(changed)
        return response

    def start_instances(self, **request: Any) -> dict[str, Any]:
        """StartInstances: EC2 starts a stopped instance in its own type and zone, so the scenario's
        capacity errors for that offering answer as EC2 would; otherwise moto's, reported to the world.
        """
        ids = [str(i) for i in request.get("InstanceIds", [])]
        for instance_id in ids:
            key = self._pool_of.get(instance_id)
            if key is None:
                continue
            capacity_type, instance_type, zone = key
            code = self.hooks.capacity_error(instance_type, zone, capacity_type)
            if code is not None:
                error = {"Code": code, "Message": CAPACITY_MESSAGE.format(type=instance_type, zone=zone)}
                raise ClientError({"Error": error}, "StartInstances")
        response: dict[str, Any] = self._client.start_instances(**request)
        changed = [
            str(c["InstanceId"])
            for c in response.get("StartingInstances", [])
            if c.get("PreviousState", {}).get("Name") in ("stopped", "stopping")
        ]
        self.hooks.started(changed)
        return response

    def describe_instance_status(self, **request: Any) -> dict[str, Any]:
        """DescribeInstanceStatus: moto's answer (every running instance "ok") with the checks the
        world failed (`Ec2Hooks.impaired`) reported impaired, in EC2's shape.
        """
        response: dict[str, Any] = self._client.describe_instance_status(**request)
        for item in response.get("InstanceStatuses", []):
            found = self.hooks.impaired(str(item.get("InstanceId")))
            if found is None:
                continue
            checks, since = found
            failed = {
                "Status": "impaired",
                "Details": [{"Name": "reachability", "Status": "failed", "ImpairedSince": _utc(since)}],
            }
            for check in checks:
                item[_STATUS_BLOCKS[check]] = dict(failed)
        return response

    def describe_capacity_reservations(self, **request: Any) -> dict[str, Any]:
        """DescribeCapacityReservations, which moto lacks: the scenario's reservations."""
        if self.reservations is None:
            return {"CapacityReservations": []}
        return self.reservations.describe(request, self._now())

    def get_paginator(self, name: str) -> Any:
        """moto's paginators, and one page of DescribeCapacityReservations (moto has none)."""
        if name == "describe_capacity_reservations":
            return _OnePage(self.describe_capacity_reservations)
        return self._client.get_paginator(name)

    def create_launch_template(self, **request: Any) -> dict[str, Any]:
        """moto's CreateLaunchTemplate; this EC2 notes which reservation the template targets."""
        name = str(request.get("LaunchTemplateName") or "")
        if self.reservations is not None:
            self._targets[name] = self.reservations.target(request.get("LaunchTemplateData") or {})
        profile = (request.get("LaunchTemplateData") or {}).get("IamInstanceProfile") or {}
        self._template_profiles[name] = str(profile.get("Arn") or profile.get("Name") or "").rsplit("/", 1)[-1]
        response: dict[str, Any] = self._client.create_launch_template(**request)
        return response

    def _target(self, config: Mapping[str, Any]) -> str:
        """The capacity reservation a config's launch template targets ("" none). Template names
        are content hashes, so a name always means the data it was created with.
        """
        name = str((config.get("LaunchTemplateSpecification") or {}).get("LaunchTemplateName") or "")
        return self._targets.get(name, "")

    def in_pool(self, capacity_type: str, instance_type: str, zone: str) -> int:
        """How many live instances this EC2 started in one pool."""
        return self._in_pool[(capacity_type, instance_type, zone)]

    def _zone(self, subnet_id: str) -> str:
        if subnet_id and subnet_id not in self._zones:
            quiet, self.quiet = self.quiet, True
            try:
                subnets = self._client.describe_subnets()["Subnets"]
            finally:
                self.quiet = quiet
            for subnet in subnets:
                self._zones[str(subnet["SubnetId"])] = str(subnet["AvailabilityZone"])
        return self._zones.get(subnet_id, "")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


class _OnePage:
    """A paginator over a call whose answer is one page."""

    def __init__(self, call: Callable[..., dict[str, Any]]) -> None:
        self._call = call

    def paginate(self, **request: Any) -> list[dict[str, Any]]:
        return [self._call(**request)]


# DescribeInstanceStatus's block for each status check.
_STATUS_BLOCKS = {"system": "SystemStatus", "instance": "InstanceStatus", "ebs": "AttachedEbsStatus"}


def _utc(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def _capacity_error(
    config: Mapping[str, Any], override: Mapping[str, Any], capacity_type: str, code: str, *, zone: str
) -> dict[str, Any]:
    instance_type = str(override.get("InstanceType", ""))
    return {
        "LaunchTemplateAndOverrides": {
            "LaunchTemplateSpecification": config["LaunchTemplateSpecification"],
            "Overrides": dict(override),
        },
        "Lifecycle": capacity_type,
        "ErrorCode": code,
        "ErrorMessage": CAPACITY_MESSAGE.format(type=instance_type, zone=zone),
    }
