"""Pricing adapter: GetProducts and DescribeSpotPriceHistory through botocore's Stubber.

moto has no Pricing API, so real botocore clients answer from recorded response shapes in
`fixtures/` (PriceList entries are JSON strings, as AWS sends them). The Stubber also checks the
request parameters we send, and a fake clock drives the 12-hour refresh.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import botocore.session
import pytest
from botocore.stub import ANY, Stubber

from nodewright.adapters.aws.pricing import (
    REFRESH_SECONDS,
    PriceCache,
    Prices,
    fetch_on_demand_prices,
    fetch_spot_prices,
    on_demand_filters,
    parse_price_list_entry,
    pricing_endpoint_region,
)

FIXTURES = Path(__file__).parent / "fixtures"
NOW = datetime(2025, 11, 20, 12, 0, tzinfo=UTC).timestamp()


class FakeClock:
    def __init__(self, now: float = NOW) -> None:
        self.value = now

    def now(self) -> float:
        return self.value


@cache
def _client(service: str, region: str = "us-east-1") -> Any:
    # One client per service for the module (loading botocore's models is the slow part); each
    # test activates its own Stubber on it.
    session = botocore.session.get_session()
    return session.create_client(
        service, region_name=region, aws_access_key_id="testing", aws_secret_access_key="testing"
    )


def _products_pages() -> list[dict[str, Any]]:
    pages: list[dict[str, Any]] = json.loads((FIXTURES / "pricing_get_products_us_east_1.json").read_text())
    return pages


def _spot_pages() -> list[dict[str, Any]]:
    pages: list[dict[str, Any]] = json.loads((FIXTURES / "ec2_describe_spot_price_history.json").read_text())
    for page in pages:
        for record in page["SpotPriceHistory"]:
            record["Timestamp"] = datetime.fromisoformat(record["Timestamp"])
    return pages


def _stub_products(stubber: Stubber, region: str = "us-east-1") -> None:
    pages = _products_pages()
    expected: dict[str, Any] = {
        "ServiceCode": "AmazonEC2",
        "Filters": on_demand_filters(region),
        "FormatVersion": "aws_v1",
    }
    stubber.add_response("get_products", pages[0], expected)
    stubber.add_response("get_products", pages[1], {**expected, "NextToken": pages[0]["NextToken"]})


def _stub_spot(stubber: Stubber) -> None:
    pages = _spot_pages()
    base = {"ProductDescriptions": ["Linux/UNIX"], "StartTime": ANY}
    stubber.add_response("describe_spot_price_history", pages[0], {**base, "AvailabilityZone": "us-east-1a"})
    stubber.add_response(
        "describe_spot_price_history", pages[1], {**base, "AvailabilityZone": "us-east-1a", "NextToken": "AAEAAQ"}
    )
    stubber.add_response("describe_spot_price_history", pages[2], {**base, "AvailabilityZone": "us-east-1b"})


@pytest.mark.parametrize(
    ("region", "endpoint"),
    [
        ("us-east-1", "us-east-1"),
        ("us-west-2", "us-east-1"),
        ("ca-central-1", "us-east-1"),
        ("ap-southeast-2", "ap-south-1"),
        ("eu-west-1", "eu-central-1"),
        ("cn-north-1", "cn-northwest-1"),
    ],
    ids=str,
)
def test_price_list_endpoint_depends_on_region(region: str, endpoint: str) -> None:
    assert pricing_endpoint_region(region) == endpoint


def test_on_demand_filters_select_shared_linux_on_demand_in_the_region() -> None:
    fields = {f["Field"]: f["Value"] for f in on_demand_filters("eu-west-1")}
    assert fields == {
        "regionCode": "eu-west-1",
        "operatingSystem": "Linux",
        "preInstalledSw": "NA",
        "tenancy": "Shared",
        "capacitystatus": "Used",
        "marketoption": "OnDemand",
    }
    assert all(f["Type"] == "TERM_MATCH" for f in on_demand_filters("eu-west-1"))


def test_on_demand_prices_are_read_from_every_page_and_only_from_on_demand_terms() -> None:
    client = _client("pricing")
    with Stubber(client) as stubber:
        _stub_products(stubber)
        prices = fetch_on_demand_prices(client, "us-east-1")
        stubber.assert_no_pending_responses()
    # Reserved terms (also in the documents) are ignored; a zero price is no price.
    assert prices == {"m5.large": 0.096, "m7g.large": 0.0816, "g5.xlarge": 1.006, "m5.metal": 4.608}


def test_a_price_list_entry_without_an_instance_type_is_skipped() -> None:
    assert parse_price_list_entry(json.dumps({"product": {"attributes": {}}, "terms": {}})) is None


def test_spot_prices_keep_only_the_latest_record_per_type_and_zone() -> None:
    client = _client("ec2")
    with Stubber(client) as stubber:
        _stub_spot(stubber)
        prices = fetch_spot_prices(client, NOW, zones=["us-east-1a", "us-east-1b"])
        stubber.assert_no_pending_responses()
    assert prices == {
        ("m5.large", "us-east-1a"): 0.0389,  # the 09:12 record, not the older 0.0411
        ("m7g.large", "us-east-1a"): 0.0312,
        ("g5.xlarge", "us-east-1a"): 0.4437,
        ("m5.large", "us-east-1b"): 0.0365,
    }


def test_spot_history_is_asked_from_now() -> None:
    client = _client("ec2")
    with Stubber(client) as stubber:
        stubber.add_response(
            "describe_spot_price_history",
            {"SpotPriceHistory": []},
            {"ProductDescriptions": ["Linux/UNIX"], "StartTime": datetime.fromtimestamp(NOW, tz=UTC)},
        )
        assert fetch_spot_prices(client, NOW) == {}


def _cache(clock: FakeClock, pricing: Any, ec2: Any, **kwargs: Any) -> PriceCache:
    return PriceCache("us-east-1", pricing=pricing, ec2=ec2, clock=clock, zones=["us-east-1a", "us-east-1b"], **kwargs)


def test_cache_fetches_once_and_serves_from_memory_for_12_hours() -> None:
    pricing, ec2, clock = _client("pricing"), _client("ec2"), FakeClock()
    with Stubber(pricing) as pricing_stub, Stubber(ec2) as ec2_stub:
        _stub_products(pricing_stub)
        _stub_spot(ec2_stub)
        cache = _cache(clock, pricing, ec2)
        assert cache.on_demand_price("m5.large") == 0.096
        assert cache.spot_price("m5.large", "us-east-1b") == 0.0365
        clock.value += REFRESH_SECONDS - 1
        # No stubbed responses remain: any call would raise, so these come from the cache.
        assert cache.on_demand_price("g5.xlarge") == 1.006
        assert cache.spot_price("m7g.large", "us-east-1a") == 0.0312
        assert cache.last_error is None


def test_cache_refreshes_after_12_hours() -> None:
    pricing, ec2, clock = _client("pricing"), _client("ec2"), FakeClock()
    with Stubber(pricing) as pricing_stub, Stubber(ec2) as ec2_stub:
        _stub_products(pricing_stub)
        _stub_spot(ec2_stub)
        cache = _cache(clock, pricing, ec2)
        cache.prices()
        newer = _products_pages()
        newer[0]["PriceList"][0] = newer[0]["PriceList"][0].replace("0.0960000000", "0.0900000000")
        expected = {"ServiceCode": "AmazonEC2", "Filters": on_demand_filters("us-east-1"), "FormatVersion": "aws_v1"}
        pricing_stub.add_response("get_products", newer[0], expected)
        pricing_stub.add_response("get_products", newer[1], {**expected, "NextToken": newer[0]["NextToken"]})
        _stub_spot(ec2_stub)
        clock.value += REFRESH_SECONDS
        assert cache.on_demand_price("m5.large") == 0.09
        pricing_stub.assert_no_pending_responses()
        ec2_stub.assert_no_pending_responses()


def test_a_failed_refresh_keeps_the_previous_prices_and_retries_later() -> None:
    pricing, ec2, clock = _client("pricing"), _client("ec2"), FakeClock()
    with Stubber(pricing) as pricing_stub, Stubber(ec2) as ec2_stub:
        _stub_products(pricing_stub)
        _stub_spot(ec2_stub)
        cache = _cache(clock, pricing, ec2, retry_seconds=300)
        before = cache.prices()

        clock.value += REFRESH_SECONDS
        pricing_stub.add_client_error("get_products", "ThrottlingException", "Rate exceeded")
        ec2_stub.add_client_error("describe_spot_price_history", "RequestLimitExceeded", "Request limit exceeded.")
        after = cache.prices()
        assert after == before
        assert cache.on_demand_price("m5.large") == 0.096  # within the retry delay: no new call
        assert cache.last_error is not None
        assert "ThrottlingException" in cache.last_error

        clock.value += 300
        _stub_products(pricing_stub)
        _stub_spot(ec2_stub)
        assert cache.prices() == before
        assert cache.last_error is None
        pricing_stub.assert_no_pending_responses()


def test_spot_failure_does_not_discard_fresh_on_demand_prices() -> None:
    pricing, ec2, clock = _client("pricing"), _client("ec2"), FakeClock()
    with Stubber(pricing) as pricing_stub, Stubber(ec2) as ec2_stub:
        _stub_products(pricing_stub)
        ec2_stub.add_client_error("describe_spot_price_history", "UnauthorizedOperation", "not allowed")
        cache = _cache(clock, pricing, ec2, initial=Prices(spot={("m5.large", "us-east-1a"): 0.05}))
        prices = cache.prices()
    assert prices.on_demand["m5.large"] == 0.096
    assert prices.spot == {("m5.large", "us-east-1a"): 0.05}
    assert cache.last_error is not None
    assert cache.last_error.startswith("spot price refresh failed")


def test_an_empty_price_list_counts_as_a_failure() -> None:
    pricing, ec2, clock = _client("pricing"), _client("ec2"), FakeClock()
    with Stubber(pricing) as pricing_stub, Stubber(ec2) as ec2_stub:
        pricing_stub.add_response("get_products", {"FormatVersion": "aws_v1", "PriceList": []})
        _stub_spot(ec2_stub)
        cache = _cache(clock, pricing, ec2, initial=Prices(on_demand={"m5.large": 0.1}))
        assert cache.prices().on_demand == {"m5.large": 0.1}
    assert cache.last_error is not None
    assert "no on-demand prices" in cache.last_error
