"""Instance type discovery against moto's EC2 (in-process `mock_aws`).

moto serves the instance type descriptions and per-zone offerings AWS publishes, so these tests
read real shapes through real botocore pagination; nothing of ours is patched.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from nodewright.adapters.aws.instance_types import (
    OfferedSpec,
    describe_offered_zones,
    fetch_offered_specs,
    is_supported,
    spec_from_description,
    to_instance_types,
)
from nodewright.adapters.aws.pricing import Prices
from nodewright.engine.catalog import KubeletConfiguration
from nodewright.model import labels as wk


@pytest.fixture(scope="module")
def ec2() -> Iterator[Any]:
    with mock_aws():
        yield boto3.client("ec2", region_name="us-east-1")


@pytest.fixture(scope="module")
def offered(ec2: Any) -> dict[str, OfferedSpec]:
    return {entry.spec.name: entry for entry in fetch_offered_specs(ec2)}


def test_every_page_of_instance_types_is_read(offered: dict[str, OfferedSpec]) -> None:
    # DescribeInstanceTypes returns at most 100 per page; us-east-1 has well over 1,000 types.
    assert len(offered) > 1000
    assert {"m5.large", "m7g.large", "g5.xlarge", "inf2.xlarge", "p4d.24xlarge"} <= offered.keys()


def test_offerings_are_read_per_availability_zone(ec2: Any) -> None:
    zones = describe_offered_zones(ec2)
    assert len(zones) > 1000
    assert set(zones["m5.large"]) >= {"us-east-1a", "us-east-1b", "us-east-1c"}
    assert all(zone.startswith("us-east-1") for found in zones.values() for zone in found)


def test_m5_large_is_described_as_karpenter_sees_it(offered: dict[str, OfferedSpec]) -> None:
    entry = offered["m5.large"]
    spec = entry.spec
    assert (spec.vcpus, spec.memory_mib, spec.arch) == (2, 8192, "amd64")
    assert (spec.max_enis, spec.ipv4_per_eni) == (3, 10)
    assert (spec.hypervisor, spec.cpu_manufacturer, spec.network_bandwidth_mbps) == ("nitro", "Intel", 750)
    assert spec.gpu_count == 0
    assert "us-east-1a" in entry.zones


def test_graviton_gpu_and_neuron_types(offered: dict[str, OfferedSpec]) -> None:
    assert offered["m7g.large"].spec.arch == "arm64"
    g5 = offered["g5.xlarge"].spec
    assert (g5.gpu_name, g5.gpu_manufacturer, g5.gpu_count, g5.local_nvme_gb) == ("A10G", "NVIDIA", 1, 250)
    inf2 = offered["inf2.xlarge"].spec
    assert (inf2.accelerator_name, inf2.accelerator_manufacturer, inf2.accelerator_count) == ("Inferentia2", "AWS", 1)
    assert inf2.accelerator_core_count == 2


def test_multi_card_types_use_the_default_cards_eni_limit(offered: dict[str, OfferedSpec]) -> None:
    # p4d.24xlarge has 4 network cards of 15 ENIs each; the VPC CNI uses card 0's.
    p4d = offered["p4d.24xlarge"].spec
    assert p4d.max_enis == 15
    assert p4d.network_bandwidth_mbps == 400_000


def test_unlaunchable_types_are_left_out(ec2: Any, offered: dict[str, OfferedSpec]) -> None:
    [mac] = ec2.describe_instance_types(InstanceTypes=["mac1.metal"])["InstanceTypes"]
    assert not is_supported(mac)
    assert not [name for name in offered if name.startswith("mac")]
    assert all(entry.zones for entry in offered.values())
    assert all(entry.spec.arch in ("amd64", "arm64") for entry in offered.values())


@pytest.mark.parametrize(
    ("change", "supported"),
    [
        pytest.param({}, True, id="x86_64-hvm-on-demand"),
        pytest.param({"ProcessorInfo": {"SupportedArchitectures": ["i386"]}}, False, id="i386-only"),
        pytest.param({"ProcessorInfo": {"SupportedArchitectures": ["x86_64_mac"]}}, False, id="mac"),
        pytest.param({"SupportedVirtualizationTypes": ["paravirtual"]}, False, id="paravirtual-only"),
        pytest.param({"SupportedUsageClasses": ["capacity-block"]}, False, id="capacity-block-only"),
        pytest.param({"SupportedUsageClasses": ["spot"]}, True, id="spot-only"),
    ],
)
def test_is_supported(change: dict[str, Any], supported: bool) -> None:
    item = {
        "InstanceType": "x1.large",
        "ProcessorInfo": {"SupportedArchitectures": ["i386", "x86_64"]},
        "SupportedVirtualizationTypes": ["hvm"],
        "SupportedUsageClasses": ["on-demand", "spot"],
        **change,
    }
    assert is_supported(item) is supported


def test_a_sparse_description_still_converts() -> None:
    spec = spec_from_description({"InstanceType": "z9.large", "VCpuInfo": {"DefaultVCpus": 2}})
    assert (spec.name, spec.vcpus, spec.memory_mib, spec.max_enis, spec.arch) == ("z9.large", 2, 0, 0, "amd64")


def test_to_instance_types_offers_only_priced_offerings_in_wanted_zones(offered: dict[str, OfferedSpec]) -> None:
    prices = Prices(
        on_demand={"m5.large": 0.096, "m7g.large": 0.0816},
        spot={("m5.large", "us-east-1a"): 0.0389, ("m5.large", "us-east-1d"): 0.03},
    )
    entries = [offered["m5.large"], offered["m7g.large"], offered["g5.xlarge"]]
    types = {t.name: t for t in to_instance_types(entries, prices, zones=["us-east-1a", "us-east-1b"])}
    assert set(types) == {"m5.large", "m7g.large"}  # g5.xlarge has no price: not offered
    m5 = types["m5.large"]
    assert {(o.zone, o.capacity_type, o.price) for o in m5.offerings} == {
        ("us-east-1a", "on-demand", 0.096),
        ("us-east-1a", "spot", 0.0389),
        ("us-east-1b", "on-demand", 0.096),
    }
    assert m5.requirements[wk.ZONE].values == {"us-east-1a", "us-east-1b"}
    assert m5.allocatable.format()["memory"] == "6903Mi"


def test_to_instance_types_applies_the_kubelet_configuration(offered: dict[str, OfferedSpec]) -> None:
    prices = Prices(on_demand={"m5.large": 0.096})
    [m5] = to_instance_types([offered["m5.large"]], prices, KubeletConfiguration(max_pods=110))
    assert m5.capacity["pods"] == 110_000
