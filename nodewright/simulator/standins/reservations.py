"""Capacity reservations in the simulated EC2: what moto lacks (DescribeCapacityReservations, and
CreateFleet launching into a reservation a launch template targets).

Theory of operation. The scenario's `capacity_reservations` are EC2's reservations: each has a
count, a state from its times (`scheduled` before `from`, `active`, `expired` from `until`) and
the instances launched into it. `describe` answers DescribeCapacityReservations as EC2 does:
`CapacityReservationIds` (an unknown id is InvalidCapacityReservationId.NotFound), and the filters
Nodewright sends (`state`, `owner-id`, `tag:K`, `tag-key`, `instance-match-criteria`), with
`AvailableInstanceCount` = count - live instances, EC2's `ReservationType` (`odcr`,
`capacity-block`) and `EndDate`. `target` reads the reservation a launch template's
`CapacityReservationSpecification` targets (`SimulatedEc2` asks it of each CreateLaunchTemplate,
so a CreateFleet needs no extra call a function would be charged for);
`refusal` is EC2's answer for one fleet override into it: ReservationCapacityExceeded when it is
full, not active, or of another instance type or zone; `launched` and `released` keep the count.
An instance launched with preference `none` or without a target never fills an open reservation
here (EC2 would fill an open one with a matching on-demand launch whose preference is `open`:
Nodewright never sends that for a NodeClass that selects reservations).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from nodewright.simulator.scenario.model import CapacityReservationSpec

FULL = "ReservationCapacityExceeded"
_EC2_TYPE = {"default": "odcr", "capacity-block": "capacity-block"}


class SimulatedReservations:
    """The scenario's capacity reservations as EC2 keeps them (module docstring)."""

    def __init__(self, specs: Sequence[CapacityReservationSpec], *, start: float, account: str, region: str) -> None:
        self.specs = {s.id: s for s in specs}
        self._start = start
        self._account = account
        self._region = region
        self._holding: dict[str, str] = {}  # instance id -> reservation id
        self._targets: dict[str, str] = {}  # launch template name -> reservation id ("" none)

    def state(self, spec: CapacityReservationSpec, now: float) -> str:
        """EC2's state of the reservation at `now`."""
        if now < self._start + spec.start:
            return "scheduled"
        if spec.end is not None and now >= self._start + spec.end:
            return "expired"
        return "active"

    def end_time(self, spec: CapacityReservationSpec) -> float | None:
        """The reservation's end, epoch seconds (None: no end)."""
        return None if spec.end is None else self._start + spec.end

    def used(self, reservation_id: str) -> int:
        """Live instances launched into the reservation."""
        return sum(1 for r in self._holding.values() if r == reservation_id)

    def instances(self, reservation_id: str) -> list[str]:
        """The live instances launched into the reservation, sorted."""
        return sorted(i for i, r in self._holding.items() if r == reservation_id)

    def describe(self, request: Mapping[str, Any], now: float) -> dict[str, Any]:
        """DescribeCapacityReservations (one page: the scenario's reservations are few)."""
        ids = list(request.get("CapacityReservationIds") or [])
        unknown = [i for i in ids if i not in self.specs]
        if unknown:
            raise ClientError(
                {
                    "Error": {
                        "Code": "InvalidCapacityReservationId.NotFound",
                        "Message": f"The capacity reservation ID '{unknown[0]}' does not exist",
                    }
                },
                "DescribeCapacityReservations",
            )
        chosen = [self.specs[i] for i in ids] if ids else list(self.specs.values())
        filters = list(request.get("Filters") or [])
        items = [self._item(s, now) for s in chosen]
        return {"CapacityReservations": [i for i in items if all(_passes(i, f) for f in filters)]}

    def target(self, template: Mapping[str, Any]) -> str:
        """The reservation id a launch template's data targets ("" when none)."""
        spec = template.get("CapacityReservationSpecification") or {}
        return str((spec.get("CapacityReservationTarget") or {}).get("CapacityReservationId") or "")

    def refusal(self, reservation_id: str, instance_type: str, zone: str, now: float) -> str | None:
        """EC2's error code for launching one instance of this override into the reservation, or None."""
        spec = self.specs.get(reservation_id)
        if spec is None or self.state(spec, now) != "active":
            return FULL
        if (spec.instance_type, spec.zone) != (instance_type, zone) or self.used(reservation_id) >= spec.count:
            return FULL
        return None

    def available(self, reservation_id: str) -> int:
        """Instances the reservation can still start."""
        spec = self.specs.get(reservation_id)
        return 0 if spec is None else max(0, spec.count - self.used(reservation_id))

    def launched(self, instance_id: str, reservation_id: str) -> None:
        """An instance now runs in the reservation."""
        self._holding[instance_id] = reservation_id

    def released(self, instance_ids: Sequence[str]) -> None:
        """These instances were terminated: their reservations get the room back."""
        for instance_id in instance_ids:
            self._holding.pop(instance_id, None)

    def _item(self, spec: CapacityReservationSpec, now: float) -> dict[str, Any]:
        owner = spec.owner_id or self._account
        end = self.end_time(spec)
        item: dict[str, Any] = {
            "CapacityReservationId": spec.id,
            "OwnerId": owner,
            "CapacityReservationArn": f"arn:aws:ec2:{self._region}:{owner}:capacity-reservation/{spec.id}",
            "InstanceType": spec.instance_type,
            "InstancePlatform": "Linux/UNIX",
            "AvailabilityZone": spec.zone,
            "Tenancy": "default",
            "TotalInstanceCount": spec.count,
            "AvailableInstanceCount": self.available(spec.id),
            "State": self.state(spec, now),
            "StartDate": datetime.fromtimestamp(self._start + spec.start, UTC),
            "EndDateType": "unlimited" if end is None else "limited",
            "InstanceMatchCriteria": spec.match,
            "ReservationType": _EC2_TYPE[spec.reservation_type],
            "Tags": [{"Key": k, "Value": v} for k, v in sorted(spec.tags.items())],
            "Interruptible": spec.interruptible,
        }
        if end is not None:
            item["EndDate"] = datetime.fromtimestamp(end, UTC)
        return item


def _passes(item: Mapping[str, Any], flt: Mapping[str, Any]) -> bool:
    """EC2's filter semantics for the filters Nodewright sends (values ORed)."""
    name = str(flt.get("Name", ""))
    values = {str(v) for v in flt.get("Values") or []}
    tags = {t["Key"]: t["Value"] for t in item.get("Tags", [])}
    if name == "state":
        return item["State"] in values
    if name == "owner-id":
        return item["OwnerId"] in values
    if name == "instance-match-criteria":
        return item["InstanceMatchCriteria"] in values
    if name == "tag-key":
        return bool(values & tags.keys())
    if name.startswith("tag:"):
        return tags.get(name[4:]) in values
    return True  # a filter Nodewright does not send: not modelled
