"""The references' launch request and Auto Mode's fee, lifetime and defaults.

Real: `launch` on planned claims from the reference scheduler; Auto Mode's fee table and NodePool
transformation on model values.
"""

from __future__ import annotations

import pytest

from nodewright.engine.scheduling import PlannedClaim, PoolCapacity, SchedulingInput
from nodewright.model.instancetype import InstanceType
from nodewright.model.nodepool import Disruption
from nodewright.reference import automode
from nodewright.reference.karpenter.launch import MAX_TYPES_SENT, launch
from nodewright.reference.karpenter.scheduler import schedule
from tests.builders import instance_type, node_pool, pod


def _claim(types: tuple[InstanceType, ...]) -> PlannedClaim:
    pools = (PoolCapacity(node_pool("default"), types),)
    (claim,) = schedule(SchedulingInput(pods=(pod("p", cpu="1"),), pools=pools)).claims
    return claim


def test_spot_is_launched_price_capacity_optimized_among_the_60_cheapest() -> None:
    types = tuple(
        instance_type(f"t{i}.large", cpu="2", memory="8Gi", price=0.1 + i / 1000, spot_price=0.04 + i / 1000)
        for i in range(80)
    )
    request = launch(_claim(types))
    assert request is not None
    assert (request.capacity_type, request.strategy) == ("spot", "price-capacity-optimized")
    assert len(request.types) == MAX_TYPES_SENT
    assert request.types[0] == "t0.large"
    assert request.offering.price == pytest.approx(0.04)


def test_on_demand_is_launched_lowest_price_and_dear_spot_is_dropped() -> None:
    cheap = instance_type("a1.large", cpu="2", memory="8Gi", price=0.05, spot_price=0.09)  # spot dearer
    other = instance_type("b1.large", cpu="2", memory="8Gi", price=0.08, spot_price=0.07)  # spot dearer too
    request = launch(_claim((cheap, other)))
    assert request is not None
    assert (request.capacity_type, request.strategy) == ("on-demand", "lowest-price")
    assert request.types == ("a1.large", "b1.large")


def test_the_fee_is_12_percent_of_on_demand_with_the_gpu_cuts() -> None:
    assert automode.fee_per_hour("m5.large", 0.096) == pytest.approx(0.01152)
    assert automode.fee_fraction("c7g.xlarge") == pytest.approx(0.12)
    assert automode.fee_fraction("g5.xlarge") == pytest.approx(0.078)
    assert automode.fee_fraction("p4d.24xlarge") == pytest.approx(0.048)
    assert automode.fee_fraction("trn1.32xlarge") == pytest.approx(0.048)
    assert automode.fee_fraction("gr6.4xlarge") == pytest.approx(0.12)  # not the G series


def test_auto_mode_caps_the_lifetime_at_21_days_and_defaults_to_balanced() -> None:
    forever = node_pool("a", expire_after=None)
    month = node_pool("b", expire_after=30 * 24 * 3600.0)
    empty = node_pool("c", disruption=Disruption("WhenEmpty", 30.0, ()))
    a, b, c = automode.nodepools((forever, month, empty))
    assert a.expire_after == b.expire_after == automode.LIFETIME_SECONDS
    assert a.disruption.consolidation_policy == "Balanced"
    assert c.disruption.consolidation_policy == "WhenEmpty"
