"""The controllers' Catalog in a simulation: the bundled offline catalog, filtered to the types
the scenario's NodePools could launch, with a price lookup the world's accounting shares, and the
reserved offerings of the capacity reservations a NodeClass selects, read from the simulated EC2
by the functions' own adapter (`reserve`), as the live catalog does.
"""

from __future__ import annotations

from collections.abc import Sequence

from nodewright.adapters.aws.reservations import CapacityReservations, offered
from nodewright.adapters.offline_catalog import load_catalog
from nodewright.model.instancetype import InstanceType
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodepool import NodePool
from nodewright.model.requirements import Requirements
from nodewright.ports import Clock


class SimCatalog:
    """The controllers' Catalog: the bundled offline catalog, one per kubelet configuration, keeping
    only the types some NodePool of the NodeClass could launch (the solver would drop the others
    on every pass; leaving them out changes no decision and saves most of a pass's preparation).
    """

    def __init__(self, zones: Sequence[str], nodepools: Sequence[NodePool]) -> None:
        self.zones = tuple(zones)
        self.nodepools = tuple(nodepools)
        self._all: dict[str, tuple[InstanceType, ...]] = {}
        self._types: dict[tuple[str, str], tuple[InstanceType, ...]] = {}
        self._by_name: dict[str, dict[str, InstanceType]] = {}
        self._reservations: CapacityReservations | None = None
        self._clock: Clock | None = None

    def reserve(self, reservations: CapacityReservations, clock: Clock) -> None:
        """Offer the reservations NodeClasses select, with the counts the cloud provider keeps."""
        self._reservations = reservations
        self._clock = clock

    def _catalog(self, nodeclass: EC2NodeClass | None) -> str:
        kubelet = nodeclass.kubelet if nodeclass is not None else None
        key = repr(kubelet)
        if key not in self._all:
            types = tuple(load_catalog(self.zones, kubelet=kubelet))
            self._all[key] = types
            self._by_name[key] = {t.name: t for t in types}
        return key

    def instance_types(self, nodeclass: EC2NodeClass | None) -> Sequence[InstanceType]:
        """The types offered in the scenario's zones that a NodePool of this NodeClass allows."""
        key = self._catalog(nodeclass)
        name = nodeclass.name if nodeclass is not None else ""
        cached = self._types.get((key, name))
        if cached is None:
            pools = [p for p in self.nodepools if nodeclass is None or p.node_class_ref.name == name]
            wanted = [p.requirements.intersection(Requirements.from_labels(p.labels)) for p in pools]
            cached = tuple(t for t in self._all[key] if any(t.requirements.intersects(r) for r in wanted))
            self._types[(key, name)] = cached
        if self._reservations is None or self._clock is None:
            return cached
        return offered(list(cached), nodeclass, self._reservations, self._clock.now())

    def find(self, name: str, nodeclass: EC2NodeClass | None) -> InstanceType | None:
        """One type by name (from the whole catalog)."""
        return self._by_name[self._catalog(nodeclass)].get(name)

    def price(self, name: str, zone: str, capacity_type: str, nodeclass: EC2NodeClass | None) -> float:
        """$/h of one offering (0 when unknown)."""
        found = self.find(name, nodeclass)
        if found is None:
            return 0.0
        for offering in found.offerings:
            if offering.zone == zone and offering.capacity_type == capacity_type:
                return offering.price
        return 0.0
