"""The live catalog: EC2's instance types (moto) priced by the price cache, cached per kubelet."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from nodewright.adapters.aws.catalog import LiveCatalog
from nodewright.adapters.aws.instance_types import fetch_offered_specs
from nodewright.adapters.aws.pricing import PriceCache, Prices
from nodewright.inmemory.clock import VirtualClock
from nodewright.model.nodeclass import EC2NodeClass, KubeletConfiguration


class UnreachablePricing:
    """A Pricing client that always fails, so the cache serves its initial prices."""

    def get_paginator(self, name: str) -> Any:
        raise ConnectionError("no route to the Price List API")


@pytest.fixture
def ec2() -> Iterator[Any]:
    with mock_aws():
        yield boto3.client("ec2", region_name="us-east-1")


def test_types_come_from_ec2_priced_by_the_cache_and_shaped_by_the_kubelet(ec2: Any) -> None:
    clock = VirtualClock(1_800_000_000)
    prices = PriceCache(
        "us-east-1",
        pricing=UnreachablePricing(),
        ec2=ec2,
        clock=clock,
        initial=Prices(on_demand={"m5.large": 0.096, "m5.xlarge": 0.192}),
    )
    fetches: list[int] = []

    def fetch(client: Any) -> Any:
        fetches.append(1)
        return fetch_offered_specs(client)

    catalog = LiveCatalog(ec2, prices, clock, zones=["us-east-1a"], fetch=fetch)
    default = {t.name: t for t in catalog.instance_types(None)}
    assert {"m5.large", "m5.xlarge"} <= set(default)
    assert default["m5.large"].allocatable["pods"] == 29_000
    tight = {
        t.name: t for t in catalog.instance_types(EC2NodeClass("small", kubelet=KubeletConfiguration(max_pods=10)))
    }
    assert tight["m5.large"].allocatable["pods"] == 10_000
    assert catalog.instance_types(None) is catalog.instance_types(None)  # cached while prices stand
    assert len(fetches) == 1
    clock.advance(13 * 3600)
    catalog.instance_types(None)
    assert len(fetches) == 2  # specs refreshed after 12 h
