"""Capacity reservations an EC2NodeClass selects: DescribeCapacityReservations, cached, with counts.

Role: resolve `capacityReservationSelectorTerms` to the active On-Demand Capacity Reservations and
Capacity Blocks they select (Karpenter's queries and filters; the facts table is in
`nodewright.engine.reservations`), and keep each reservation's remaining instance count between
reads: a launch into a reservation takes one (`mark_launched`), EC2's ReservationCapacityExceeded
sets it to 0 (`mark_unavailable`), and every read of EC2 replaces the count with EC2's
AvailableInstanceCount. The catalog turns the result into `reserved` offerings
(`engine.reservations.with_reservations`); the EC2 cloud provider launches into them.

One object per Lambda container, shared by the catalog and the cloud provider (so a launch is
seen by the next solve). Reads are cached per query for `ttl` seconds (a minute: a reservation's
count changes when instances start or stop, which Nodewright mostly causes itself and counts).

Errors: a reservation EC2 describes with an instance match criteria or reservation type Nodewright
does not know is skipped with a warning naming it (Karpenter does the same); an interruptible one
is offered like any other, launched with its own market type (`fleet`, `launch_template`); an id
EC2 does not know
(InvalidCapacityReservationId.NotFound) selects nothing; any other error propagates.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from types import MappingProxyType
from typing import Any

from nodewright.adapters.aws.retry import Backoff, error_code
from nodewright.engine.reservations import with_reservations
from nodewright.model.instancetype import InstanceType
from nodewright.model.nodeclass import (
    RESERVATION_CAPACITY_BLOCK,
    RESERVATION_DEFAULT,
    CapacityReservation,
    EC2NodeClass,
    SelectorTerm,
)
from nodewright.ports import Clock

log = logging.getLogger(__name__)

MATCH_CRITERIA = ("open", "targeted")
NOT_FOUND = frozenset({"InvalidCapacityReservationId.NotFound", "InvalidCapacityReservationId.Malformed"})
TTL_SECONDS = 60.0
MAX_RESULTS = 1000
# EC2's ReservationType -> Karpenter's capacity-reservation-type label value (absent: an ODCR).
_RESERVATION_TYPES = MappingProxyType(
    {"": RESERVATION_DEFAULT, "odcr": RESERVATION_DEFAULT, RESERVATION_CAPACITY_BLOCK: RESERVATION_CAPACITY_BLOCK}
)


def queries(terms: Iterable[SelectorTerm]) -> list[dict[str, Any]]:
    """The DescribeCapacityReservations arguments for `terms`, one query per id and one per
    tags/instanceMatchCriteria term (with its ownerID); every query asks for active ones only.
    """
    out: list[dict[str, Any]] = []
    for term in terms:
        active = {"Name": "state", "Values": ["active"]}
        if term.id:
            out.append({"CapacityReservationIds": [term.id], "Filters": [active]})
        if term.tags or term.instance_match_criteria:
            filters: list[dict[str, Any]] = [active]
            if term.owner_id:
                filters.append({"Name": "owner-id", "Values": [term.owner_id]})
            for key, value in sorted(term.tags.items()):
                if value == "*":
                    filters.append({"Name": "tag-key", "Values": [key]})
                else:
                    filters.append({"Name": f"tag:{key}", "Values": [value]})
            if term.instance_match_criteria:
                filters.append({"Name": "instance-match-criteria", "Values": [term.instance_match_criteria]})
            out.append({"Filters": filters, "MaxResults": MAX_RESULTS})
    return out


def reservation_from_description(item: Mapping[str, Any]) -> CapacityReservation:
    """One DescribeCapacityReservations entry as a CapacityReservation.

    Raises ValueError naming the reservation and the field when its instance match criteria or
    reservation type is not one Nodewright (and Karpenter) knows.
    """
    ident = str(item.get("CapacityReservationId", ""))
    criteria = str(item.get("InstanceMatchCriteria", ""))
    if criteria not in MATCH_CRITERIA:
        raise ValueError(f"capacity reservation {ident}: InstanceMatchCriteria {criteria!r} is not open or targeted")
    given = str(item.get("ReservationType") or "")
    kind = _RESERVATION_TYPES.get(given)
    if kind is None:
        raise ValueError(f"capacity reservation {ident}: ReservationType {given!r} is not odcr or capacity-block")
    end = item.get("EndDate")
    return CapacityReservation(
        id=ident,
        instance_type=str(item.get("InstanceType", "")),
        zone=str(item.get("AvailabilityZone", "")),
        owner_id=str(item.get("OwnerId", "")),
        instance_match_criteria=criteria,
        reservation_type=kind,
        available=int(item.get("AvailableInstanceCount") or 0),
        end_time=end.timestamp() if isinstance(end, datetime) else None,
        interruptible=bool(item.get("Interruptible")),
    )


def offered(
    types: list[InstanceType], nodeclass: EC2NodeClass | None, reservations: CapacityReservations, now: float
) -> list[InstanceType]:
    """`types` with the reserved offerings of the reservations `nodeclass` selects (the catalog's
    step, live and simulated). When EC2 cannot be asked, `types` as they are, with a warning: a
    NodeClass's on-demand and spot capacity must not go with its reservations.
    """
    if nodeclass is None or not nodeclass.capacity_reservation_selector_terms:
        return types
    try:
        selected = reservations.select(nodeclass.capacity_reservation_selector_terms)
    except Exception as error:
        log.warning("EC2NodeClass %s: capacity reservations not read, none offered: %s", nodeclass.name, error)
        return types
    return with_reservations(types, selected, now, reservations.remaining())


class CapacityReservations:
    """The reservations NodeClasses select, and what each can still start (module docstring)."""

    def __init__(self, ec2: Any, clock: Clock, *, backoff: Backoff | None = None, ttl: float = TTL_SECONDS) -> None:
        self._ec2 = ec2
        self._clock = clock
        self._backoff = backoff or Backoff()
        self._ttl = ttl
        self._cache: dict[str, tuple[float, tuple[CapacityReservation, ...]]] = {}
        self._counts: dict[str, int] = {}
        self._active: dict[str, float] = {}  # reservation id -> when EC2 last said it is active
        self._ended: set[str] = set()  # reservations EC2 said ended: they never come back

    def select(self, terms: Sequence[SelectorTerm]) -> tuple[CapacityReservation, ...]:
        """The active reservations `terms` select, unique by id, sorted by id, none past its end."""
        now = self._clock.now()
        found: dict[str, CapacityReservation] = {}
        for query in queries(terms):
            key = repr(sorted(query.items()))
            cached = self._cache.get(key)
            if cached is None or now - cached[0] >= self._ttl:
                cached = (now, self._describe(query))
                self._cache[key] = cached
                for reservation in cached[1]:
                    self._counts[reservation.id] = reservation.available
            for reservation in cached[1]:
                found.setdefault(reservation.id, reservation)
        return tuple(r for _, r in sorted(found.items()) if r.end_time is None or r.end_time > now)

    def remaining(self) -> Mapping[str, int]:
        """Reservation id -> instances it can still start, as far as this container knows."""
        return dict(self._counts)

    def mark_launched(self, reservation_id: str) -> None:
        """An instance was launched into the reservation: one fewer is left until EC2 is read again."""
        if reservation_id in self._counts:
            self._counts[reservation_id] = max(0, self._counts[reservation_id] - 1)

    def mark_unavailable(self, reservation_ids: Iterable[str]) -> None:
        """EC2 said these reservations are full (ReservationCapacityExceeded)."""
        for reservation_id in reservation_ids:
            self._counts[reservation_id] = 0

    def ended(self, reservation_ids: Iterable[str]) -> frozenset[str]:
        """Of `reservation_ids`, those whose instances no longer run in them: EC2 reports them in
        a state other than active (expired, cancelled, ...), past their end date, or does not know
        them. One DescribeCapacityReservations by ids (EC2 fails the whole call when one id is
        unknown: the ids are then asked one by one); an id found active is not asked again for
        `ttl` seconds, an ended one never. Other errors propagate: nothing is decided on a guess.
        """
        now = self._clock.now()
        asked = sorted(set(reservation_ids))
        due = [i for i in asked if i not in self._ended and now - self._active.get(i, -self._ttl) >= self._ttl]
        if due:
            found = self._by_id(due)
            for ident in due:
                item = found.get(ident)
                end = item.get("EndDate") if item is not None else None
                if (
                    item is None
                    or item.get("State") != "active"
                    or (isinstance(end, datetime) and end.timestamp() <= now)
                ):
                    self._ended.add(ident)
                else:
                    self._active[ident] = now
        return frozenset(i for i in asked if i in self._ended)

    def _by_id(self, ids: Sequence[str]) -> dict[str, Mapping[str, Any]]:
        """EC2's entries for `ids` by id; an id EC2 does not know has none."""
        try:
            return {
                str(item.get("CapacityReservationId")): item for item in self._items({"CapacityReservationIds": ids})
            }
        except Exception as error:
            if error_code(error) not in NOT_FOUND:
                raise
        found: dict[str, Mapping[str, Any]] = {}
        if len(ids) > 1:  # one unknown id fails the call: find which, one by one
            for ident in ids:
                found.update(self._by_id([ident]))
        return found

    def _items(self, query: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        """Every DescribeCapacityReservations entry `query` returns, all pages, with retries."""

        def pages() -> list[Mapping[str, Any]]:
            paginator = self._ec2.get_paginator("describe_capacity_reservations")
            return [item for page in paginator.paginate(**query) for item in page.get("CapacityReservations", [])]

        items: list[Mapping[str, Any]] = self._backoff.call(pages)
        return items

    def _describe(self, query: Mapping[str, Any]) -> tuple[CapacityReservation, ...]:
        try:
            items = self._items(query)
        except Exception as error:
            if error_code(error) in NOT_FOUND:
                return ()
            raise
        out: list[CapacityReservation] = []
        for item in items:
            try:
                out.append(reservation_from_description(item))
            except ValueError as error:
                log.warning("skipping %s", error)
        return tuple(out)
