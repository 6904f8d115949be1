"""EC2 prices: on-demand from the Price List API, spot from DescribeSpotPriceHistory, cached 12 h.

Role: the price half of the instance catalog, as Karpenter's AWS pricing provider does it.

- On-demand: `pricing:GetProducts` (service AmazonEC2) filtered to shared-tenancy Linux without
  pre-installed software, capacity status Used, market option OnDemand, in the node region. The
  Price List API only has endpoints in a few regions: us-east-1, ap-south-1 (used for ap-*),
  eu-central-1 (used for eu-*) and cn-northwest-1 (used for cn-*). Each `PriceList` entry is a
  JSON *string*; the price is `terms.OnDemand.*.priceDimensions.*.pricePerUnit.USD`.
- Spot: `ec2:DescribeSpotPriceHistory` for Linux/UNIX with `StartTime=now`, which returns only the
  price in force now (the latest record) per instance type and zone; asked per zone when the
  zones are known.
- `PriceCache` refreshes each kind every 12 hours. A failed refresh keeps the previous prices
  (stale prices beat no prices: the scheduler cannot rank unpriced offerings) and is retried after
  `retry_seconds`. Time comes from an injected Clock, so tests drive the schedule.

Clients are injected (boto3 in Lambda, botocore's Stubber in tests: moto has no Pricing API).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from nodewright.ports import Clock

log = logging.getLogger(__name__)

REFRESH_SECONDS = 12 * 3600
RETRY_SECONDS = 300
SPOT_PRODUCT_DESCRIPTION = "Linux/UNIX"


def pricing_endpoint_region(region: str) -> str:
    """The Price List API region to ask about `region` (the API only lives in a few regions)."""
    if region.startswith("ap-"):
        return "ap-south-1"
    if region.startswith("eu-"):
        return "eu-central-1"
    if region.startswith("cn-"):
        return "cn-northwest-1"
    return "us-east-1"


def on_demand_filters(region: str) -> list[dict[str, str]]:
    """The GetProducts filters selecting shared-tenancy Linux on-demand prices in `region`."""
    wanted = {
        "regionCode": region,
        "operatingSystem": "Linux",
        "preInstalledSw": "NA",
        "tenancy": "Shared",
        "capacitystatus": "Used",
        "marketoption": "OnDemand",
    }
    return [{"Type": "TERM_MATCH", "Field": name, "Value": value} for name, value in wanted.items()]


def parse_price_list_entry(entry: str | Mapping[str, Any]) -> tuple[str, float] | None:
    """(instance type, USD per hour) from one PriceList entry, or None when it has no usable price.

    Entries with a zero price (e.g. reservation placeholders) or no instance type are skipped.
    """
    product = json.loads(entry) if isinstance(entry, str) else entry
    instance_type = product.get("product", {}).get("attributes", {}).get("instanceType")
    if not instance_type:
        return None
    prices = [
        float(dimension["pricePerUnit"]["USD"])
        for term in product.get("terms", {}).get("OnDemand", {}).values()
        for dimension in term.get("priceDimensions", {}).values()
        if "USD" in dimension.get("pricePerUnit", {})
    ]
    positive = [p for p in prices if p > 0]
    return (instance_type, min(positive)) if positive else None


def fetch_on_demand_prices(pricing: Any, region: str) -> dict[str, float]:
    """Instance type -> on-demand USD/hour in `region`, read from every GetProducts page.

    `pricing` must be a Pricing client in `pricing_endpoint_region(region)`. When a type has
    several matching products the lowest price wins, so the result does not depend on page order.
    """
    paginator = pricing.get_paginator("get_products")
    out: dict[str, float] = {}
    for page in paginator.paginate(ServiceCode="AmazonEC2", Filters=on_demand_filters(region), FormatVersion="aws_v1"):
        for entry in page.get("PriceList", []):
            parsed = parse_price_list_entry(entry)
            if parsed is not None:
                name, price = parsed
                out[name] = min(price, out.get(name, price))
    return out


def fetch_spot_prices(ec2: Any, now: float, zones: Sequence[str] | None = None) -> dict[tuple[str, str], float]:
    """(instance type, zone) -> the spot USD/hour in force at `now` (epoch seconds).

    With `zones`, one paginated call per zone; otherwise one for the whole region. When several
    records come back for an offering, the one with the latest timestamp wins.
    """
    start = datetime.fromtimestamp(now, tz=UTC)
    paginator = ec2.get_paginator("describe_spot_price_history")
    base = {"ProductDescriptions": [SPOT_PRODUCT_DESCRIPTION], "StartTime": start}
    calls = [{**base, "AvailabilityZone": zone} for zone in zones] if zones else [base]
    latest: dict[tuple[str, str], tuple[datetime, float]] = {}
    for call in calls:
        for page in paginator.paginate(**call):
            for record in page.get("SpotPriceHistory", []):
                key = (record["InstanceType"], record["AvailabilityZone"])
                stamp = _as_datetime(record.get("Timestamp"), start)
                price = float(record["SpotPrice"])
                if price > 0 and (key not in latest or stamp >= latest[key][0]):
                    latest[key] = (stamp, price)
    return {key: price for key, (_, price) in latest.items()}


def _as_datetime(value: Any, default: datetime) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, str):
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    return default


@dataclass(frozen=True, slots=True)
class Prices:
    """On-demand prices by instance type and spot prices by (instance type, zone), in USD/hour."""

    on_demand: Mapping[str, float] = field(default_factory=dict)
    spot: Mapping[tuple[str, str], float] = field(default_factory=dict)


@dataclass(slots=True)
class _Slot:
    """One kind of price with when it was last fetched and when a fetch last failed."""

    fetched_at: float | None = None
    failed_at: float | None = None
    error: str | None = None

    def due(self, now: float, refresh_seconds: float, retry_seconds: float) -> bool:
        if self.failed_at is not None and now - self.failed_at < retry_seconds:
            return False
        return self.fetched_at is None or now - self.fetched_at >= refresh_seconds


class PriceCache:
    """On-demand and spot prices for one region, refreshed every `refresh_seconds` (12 h).

    Contract: `prices()` never raises for an AWS failure; it returns the last good prices (or
    `initial`, e.g. an offline estimate, before the first success) and records the error in
    `last_error`. On-demand and spot are refreshed independently, so a spot outage does not
    discard fresh on-demand prices. Not thread-safe: one per Lambda container.

    With `pricing=None` (no Price List API reachable) the on-demand prices are `initial`'s and
    never refreshed; spot prices still come from EC2.
    """

    def __init__(
        self,
        region: str,
        *,
        pricing: Any,
        ec2: Any,
        clock: Clock,
        zones: Sequence[str] | None = None,
        refresh_seconds: float = REFRESH_SECONDS,
        retry_seconds: float = RETRY_SECONDS,
        initial: Prices | None = None,
    ) -> None:
        self.region = region
        self._pricing = pricing
        self._ec2 = ec2
        self._clock = clock
        self._zones = tuple(zones) if zones else None
        self._refresh_seconds = refresh_seconds
        self._retry_seconds = retry_seconds
        self._prices = initial or Prices()
        self._on_demand = _Slot()
        self._spot = _Slot()

    @property
    def last_error(self) -> str | None:
        """The most recent refresh error still unresolved (on-demand first), or None."""
        return self._on_demand.error or self._spot.error

    def prices(self) -> Prices:
        """The current prices, refreshing whichever kind is older than the refresh interval."""
        now = self._clock.now()
        if self._on_demand.due(now, self._refresh_seconds, self._retry_seconds):
            self._refresh_on_demand(now)
        if self._spot.due(now, self._refresh_seconds, self._retry_seconds):
            self._refresh_spot(now)
        return self._prices

    def refresh(self) -> Prices:
        """Refresh both kinds now, whatever their age (failures still keep the old prices)."""
        now = self._clock.now()
        self._refresh_on_demand(now)
        self._refresh_spot(now)
        return self._prices

    def on_demand_price(self, instance_type: str) -> float | None:
        """The on-demand USD/hour of a type, or None when unknown."""
        return self.prices().on_demand.get(instance_type)

    def spot_price(self, instance_type: str, zone: str) -> float | None:
        """The spot USD/hour of a type in a zone, or None when unknown."""
        return self.prices().spot.get((instance_type, zone))

    def _refresh_on_demand(self, now: float) -> None:
        if self._pricing is None:  # fixed on-demand prices: nothing to ask
            self._on_demand = _Slot(fetched_at=now)
            return
        try:
            fetched = fetch_on_demand_prices(self._pricing, self.region)
            if not fetched:
                raise LookupError(f"GetProducts returned no on-demand prices for {self.region}")
        except Exception as error:  # any AWS/parse failure: keep serving the previous prices
            self._failed(self._on_demand, "on-demand", now, error)
            return
        self._prices = Prices(on_demand=fetched, spot=self._prices.spot)
        self._on_demand = _Slot(fetched_at=now)

    def _refresh_spot(self, now: float) -> None:
        try:
            fetched = fetch_spot_prices(self._ec2, now, self._zones)
            if not fetched:
                raise LookupError(f"DescribeSpotPriceHistory returned no spot prices for {self.region}")
        except Exception as error:  # any AWS/parse failure: keep serving the previous prices
            self._failed(self._spot, "spot", now, error)
            return
        self._prices = Prices(on_demand=self._prices.on_demand, spot=fetched)
        self._spot = _Slot(fetched_at=now)

    def _failed(self, slot: _Slot, kind: str, now: float, error: Exception) -> None:
        slot.failed_at = now
        slot.error = f"{kind} price refresh failed: {type(error).__name__}: {error}"
        log.warning("%s; keeping prices fetched at %s", slot.error, slot.fetched_at)


def pricing_client(region: str, session: Any = None) -> Any:
    """A boto3 Pricing client at the endpoint that serves `region` (built lazily, not at import)."""
    import boto3

    return (session or boto3.session.Session()).client("pricing", region_name=pricing_endpoint_region(region))
