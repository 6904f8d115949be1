"""EC2 instance type discovery: DescribeInstanceTypes + DescribeInstanceTypeOfferings -> InstanceSpecs.

Role: the I/O half of the instance catalog. It reads every page of both APIs through an injected
EC2 client (boto3 in Lambda and the CLI, moto or a Stubber in tests), reduces each description to
an `InstanceSpec`, keeps only the types Nodewright can launch (Karpenter's rules, see
`is_supported`), and pairs each with the zones it is offered in. The capacity maths lives in
`nodewright.engine.catalog`; prices come from `nodewright.adapters.aws.pricing`;
`to_instance_types` joins the three.

Errors: botocore's ClientError / BotoCoreError propagate unchanged; callers decide whether to
fall back to a cached or offline catalog.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nodewright.adapters.aws.pricing import Prices
from nodewright.engine.catalog import InstanceSpec, KubeletConfiguration, build_instance_type
from nodewright.model.instancetype import InstanceType, Offering

# EC2 architecture names -> Kubernetes' (kubernetes.io/arch). i386-only, and the Mac variants
# (x86_64_mac, arm64_mac: dedicated hosts only) are not launchable as EKS nodes.
_ARCHITECTURES = {"x86_64": "amd64", "arm64": "arm64"}
_LAUNCHABLE_USAGE = frozenset({"on-demand", "spot"})


@dataclass(frozen=True, slots=True)
class OfferedSpec:
    """An instance type and the availability zones of the region that offer it, sorted."""

    spec: InstanceSpec
    zones: tuple[str, ...]


def is_supported(item: Mapping[str, Any]) -> bool:
    """True when Nodewright can launch this type as a Linux node, as Karpenter decides.

    It must run x86_64 or arm64 (not only i386 or Mac), support HVM virtualization (EKS AMIs are
    HVM only), and be sold on-demand or as spot (not only as capacity blocks or dedicated hosts).
    """
    processor = item.get("ProcessorInfo") or {}
    if not set(processor.get("SupportedArchitectures") or ()) & _ARCHITECTURES.keys():
        return False
    if "hvm" not in (item.get("SupportedVirtualizationTypes") or ()):
        return False
    return bool(set(item.get("SupportedUsageClasses") or ()) & _LAUNCHABLE_USAGE)


def spec_from_description(item: Mapping[str, Any]) -> InstanceSpec:
    """Reduce one DescribeInstanceTypes entry to an InstanceSpec (call `is_supported` first).

    Pod networking limits are the default network card's (what the VPC CNI uses); network
    bandwidth is the sum of the cards' baseline bandwidth (Karpenter's
    `instance-network-bandwidth`); EBS bandwidth is the maximum EBS-optimized bandwidth.
    """
    processor = item.get("ProcessorInfo") or {}
    architectures = processor.get("SupportedArchitectures") or ()
    network = item.get("NetworkInfo") or {}
    cards = network.get("NetworkCards") or []
    default_card = network.get("DefaultNetworkCardIndex", 0)
    max_enis = next(
        (c.get("MaximumNetworkInterfaces", 0) for c in cards if c.get("NetworkCardIndex") == default_card),
        network.get("MaximumNetworkInterfaces", 0),
    )
    bandwidth_mbps = round(sum(float(c.get("BaselineBandwidthInGbps") or 0) for c in cards) * 1000)

    gpus = (item.get("GpuInfo") or {}).get("Gpus") or []
    gpu = gpus[0] if gpus else {}
    accelerator = _accelerator(item)

    storage = item.get("InstanceStorageInfo") or {}
    nvme_gb = storage.get("TotalSizeInGB", 0) if storage.get("NvmeSupport") in ("required", "supported") else 0
    ebs = (item.get("EbsInfo") or {}).get("EbsOptimizedInfo") or {}
    efa = (network.get("EfaInfo") or {}).get("MaximumEfaInterfaces", 0) if network.get("EfaSupported") else 0

    return InstanceSpec(
        name=item["InstanceType"],
        vcpus=int((item.get("VCpuInfo") or {}).get("DefaultVCpus", 0)),
        memory_mib=int((item.get("MemoryInfo") or {}).get("SizeInMiB", 0)),
        arch="arm64" if "arm64" in architectures else "amd64",
        hypervisor=item.get("Hypervisor", ""),
        max_enis=int(max_enis),
        ipv4_per_eni=int(network.get("Ipv4AddressesPerInterface", 0)),
        gpu_name=gpu.get("Name", ""),
        gpu_manufacturer=gpu.get("Manufacturer", ""),
        gpu_count=sum(int(g.get("Count", 0)) for g in gpus),
        gpu_memory_mib=int((gpu.get("MemoryInfo") or {}).get("SizeInMiB", 0)),
        accelerator_name=accelerator[0],
        accelerator_manufacturer=accelerator[1],
        accelerator_count=accelerator[2],
        accelerator_core_count=accelerator[3],
        efa_count=int(efa),
        local_nvme_gb=int(nvme_gb),
        network_bandwidth_mbps=bandwidth_mbps,
        ebs_bandwidth_mbps=int(ebs.get("MaximumBandwidthInMbps", 0)),
        bare_metal=bool(item.get("BareMetal", False)),
        current_generation=bool(item.get("CurrentGeneration", False)),
        cpu_manufacturer=processor.get("Manufacturer", ""),
        encryption_in_transit=bool(network.get("EncryptionInTransitSupported", False)),
        supported_usage_classes=tuple(sorted(item.get("SupportedUsageClasses") or ())),
        sustained_clock_mhz=round(float(processor.get("SustainedClockSpeedInGhz") or 0) * 1000),
    )


def _accelerator(item: Mapping[str, Any]) -> tuple[str, str, int, int]:
    # NeuronInfo (Inferentia2, Trainium) is the current field; InferenceAcceleratorInfo is what
    # older descriptions (and inf1) carry. Neuron devices are always made by AWS.
    devices = (item.get("NeuronInfo") or {}).get("NeuronDevices") or []
    if devices:
        count = sum(int(d.get("Count", 0)) for d in devices)
        cores = sum(int(d.get("Count", 0)) * int((d.get("CoreInfo") or {}).get("Count", 0)) for d in devices)
        return devices[0].get("Name", ""), "AWS", count, cores
    accelerators = (item.get("InferenceAcceleratorInfo") or {}).get("Accelerators") or []
    if accelerators:
        first = accelerators[0]
        count = sum(int(a.get("Count", 0)) for a in accelerators)
        return first.get("Name", ""), first.get("Manufacturer", ""), count, 0
    return "", "", 0, 0


def describe_instance_types(ec2: Any) -> list[dict[str, Any]]:
    """Every DescribeInstanceTypes entry of the client's region (all pages)."""
    paginator = ec2.get_paginator("describe_instance_types")
    return [item for page in paginator.paginate() for item in page.get("InstanceTypes", [])]


def describe_offered_zones(ec2: Any) -> dict[str, tuple[str, ...]]:
    """Instance type name -> the availability zones offering it (all pages, zones sorted)."""
    paginator = ec2.get_paginator("describe_instance_type_offerings")
    zones: dict[str, set[str]] = {}
    for page in paginator.paginate(LocationType="availability-zone"):
        for offering in page.get("InstanceTypeOfferings", []):
            zones.setdefault(offering["InstanceType"], set()).add(offering["Location"])
    return {name: tuple(sorted(found)) for name, found in zones.items()}


def fetch_offered_specs(ec2: Any) -> list[OfferedSpec]:
    """The launchable instance types of the client's region with their zones, sorted by name.

    Types that `is_supported` rejects, or that no zone offers, are left out.
    """
    zones = describe_offered_zones(ec2)
    offered = [
        OfferedSpec(spec_from_description(item), zones[item["InstanceType"]])
        for item in describe_instance_types(ec2)
        if is_supported(item) and zones.get(item["InstanceType"])
    ]
    return sorted(offered, key=lambda o: o.spec.name)


def offerings_for(entry: OfferedSpec, prices: Prices, zones: Iterable[str] | None = None) -> list[Offering]:
    """On-demand and spot offerings of one type in its zones, wherever a price is known.

    As in Karpenter, an offering without a price is not offered: the scheduler cannot rank it.
    `zones` narrows to the zones the NodeClass's subnets are in.
    """
    wanted = set(zones) if zones is not None else None
    usage = entry.spec.supported_usage_classes
    on_demand = prices.on_demand.get(entry.spec.name)
    out: list[Offering] = []
    for zone in entry.zones:
        if wanted is not None and zone not in wanted:
            continue
        if on_demand is not None and "on-demand" in usage:
            out.append(Offering(zone, "on-demand", on_demand))
        spot = prices.spot.get((entry.spec.name, zone))
        if spot is not None and "spot" in usage:
            out.append(Offering(zone, "spot", spot))
    return out


def to_instance_types(
    entries: Sequence[OfferedSpec],
    prices: Prices,
    kubelet: KubeletConfiguration | None = None,
    *,
    zones: Iterable[str] | None = None,
) -> list[InstanceType]:
    """The schedulable InstanceTypes for `entries` at `prices`; types with no offering are dropped."""
    zone_set = tuple(zones) if zones is not None else None
    out: list[InstanceType] = []
    for entry in entries:
        offerings = offerings_for(entry, prices, zone_set)
        if offerings:
            out.append(build_instance_type(entry.spec, offerings, kubelet))
    return out
