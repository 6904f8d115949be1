"""The live instance catalog for Lambda: EC2's instance types and zones, priced by the PriceCache.

Implements `nodewright.ports.Catalog`. Instance type specs change rarely, so
they are fetched once per `refresh_seconds` (12 h, like prices); the InstanceTypes built from them
are cached per kubelet configuration (the `max_configurations` most recently used: each holds
about 15 MB of types) and rebuilt only when the specs or the prices object change. A NodeClass
with `capacityReservationSelectorTerms` also gets a `reserved` offering per reservation they
select, with what it has left (`reservations`, shared with the cloud provider); when EC2 cannot
be asked, its types are offered without them (a warning), rather than not at all.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from nodewright.adapters.aws.instance_types import OfferedSpec, fetch_offered_specs, to_instance_types
from nodewright.adapters.aws.pricing import REFRESH_SECONDS, PriceCache, Prices
from nodewright.adapters.aws.reservations import CapacityReservations, offered
from nodewright.model.instancetype import InstanceType
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.ports import Clock


class LiveCatalog:
    """InstanceTypes for a NodeClass, from EC2 (types, zones) and the price cache."""

    def __init__(
        self,
        ec2: Any,
        prices: PriceCache,
        clock: Clock,
        *,
        zones: Sequence[str] | None = None,
        refresh_seconds: float = REFRESH_SECONDS,
        fetch: Callable[[Any], list[OfferedSpec]] = fetch_offered_specs,
        reservations: CapacityReservations | None = None,
        max_configurations: int = 16,
    ) -> None:
        self._ec2 = ec2
        self._prices = prices
        self._clock = clock
        self._zones = tuple(zones) if zones else None
        self._refresh_seconds = refresh_seconds
        self._fetch = fetch
        self._specs: list[OfferedSpec] | None = None
        self._fetched_at = 0.0
        # By kubelet configuration, least recently used first; bounded so that a warm container
        # that meets many configurations over its life does not keep every one (40 of them held
        # 591 MB of a 1,024 MB function).
        self._built: OrderedDict[str, tuple[int, Prices, list[InstanceType]]] = OrderedDict()
        self._max_configurations = max_configurations
        self._generation = 0
        self._reservations = reservations

    def instance_types(self, nodeclass: EC2NodeClass | None) -> Sequence[InstanceType]:
        """The types NodePools of `nodeclass` plan with (its kubelet settings shape allocatable)."""
        now = self._clock.now()
        if self._specs is None or now - self._fetched_at >= self._refresh_seconds:
            try:
                self._specs = self._fetch(self._ec2)
                self._fetched_at = now
                self._generation += 1
            except Exception:
                if self._specs is None:
                    raise  # nothing to fall back on: the caller reports the failed pass
                # Keep the previous specs; try again at the next pass rather than in 12 h.
        prices = self._prices.prices()
        kubelet = nodeclass.kubelet if nodeclass is not None else None
        key = repr(kubelet)
        cached = self._built.get(key)
        if cached is not None and cached[0] == self._generation and cached[1] is prices:
            built = cached[2]
            self._built.move_to_end(key)
        else:
            self._built.pop(key, None)
            built = to_instance_types(self._specs, prices, kubelet, zones=self._zones)
            self._built[key] = (self._generation, prices, built)
            while len(self._built) > self._max_configurations:
                self._built.popitem(last=False)
        return built if self._reservations is None else offered(built, nodeclass, self._reservations, now)
