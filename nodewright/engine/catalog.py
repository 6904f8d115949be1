"""Instance type capacity maths: from an EC2 instance description to a schedulable InstanceType. Pure.

Role: turn the facts EC2 publishes about an instance type (`InstanceSpec`) plus where and how it
can be bought (`Offering`s) into the `InstanceType` the scheduler packs pods onto: its capacity,
its overhead (kube-reserved + system-reserved + eviction thresholds), hence its allocatable, and
the labels (as Requirements) a node of that type carries. No I/O, no clock, no AWS SDK: the AWS
adapters (`nodewright.adapters.aws.instance_types`, `pricing`) and the offline snapshot loader
(`nodewright.adapters.offline_catalog`) fetch the inputs and call `build_instance_type`.

Theory of operation (Karpenter's AWS provider formulas, see reference/karpenter-facts.md):

    capacity.cpu     = vCPUs
    capacity.memory  = MiB - ceil(7.5% of MiB) (VM/hypervisor overhead) - 64 MiB on arm64
    capacity.pods    = kubelet maxPods if set, else ENIs x (IPv4 per ENI - 1) + 2 when pod density
                       is ENI-limited (the VPC CNI default), else 110; then at most
                       podsPerCore x vCPUs when podsPerCore is set
    capacity.ephemeral-storage = the NodeClass's root volume (or RAID0 local NVMe); default 20Gi
    kube-reserved    = cpu: 6% of core 1, 1% of core 2, 0.5% of cores 3-4, 0.25% of each core above
                       4; memory: 11 MiB x pods + 255 MiB; ephemeral-storage: 1Gi
    eviction         = memory.available 100Mi, nodefs.available 10% (of ephemeral-storage)
    allocatable      = capacity - kube-reserved - system-reserved - eviction

The kubelet settings are the EC2NodeClass's `KubeletConfiguration` (nodewright.model.nodeclass).
They override per resource / per signal (`kubeReserved: {cpu: 200m}` replaces only
the cpu default), as Karpenter merges them. Where evictionHard and evictionSoft both name a
signal, the larger threshold counts, because the node must keep both free.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Any

from nodewright.model import labels as wk
from nodewright.model.errors import InvalidValue
from nodewright.model.instancetype import InstanceType, Offering
from nodewright.model.nodeclass import EC2NodeClass, KubeletConfiguration
from nodewright.model.quantity import parse_quantity, to_milli
from nodewright.model.requirements import Requirement, Requirements
from nodewright.model.resources import (
    AMD_GPU,
    AWS_NEURON,
    CPU,
    EPHEMERAL_STORAGE,
    HABANA_GAUDI,
    MEMORY,
    NVIDIA_GPU,
    PODS,
    Resources,
)

__all__ = [
    "DEFAULT_EPHEMERAL_STORAGE",
    "InstanceSpec",
    "KubeletConfiguration",
    "build_instance_type",
    "capacity",
    "eni_limited_pods",
    "ephemeral_storage",
    "kube_reserved_cpu_milli",
    "max_pods",
    "memory_capacity_mib",
    "overhead",
    "region_of",
    "requirements",
]

MIB = 2**20
GIB = 2**30
VM_MEMORY_OVERHEAD_PERMILLE = 75  # 7.5%, Karpenter's default vmMemoryOverheadPercent
ARM64_MEMORY_OVERHEAD_MIB = 64
DEFAULT_EPHEMERAL_STORAGE = 20 * 2**30  # bytes: Karpenter's default EBS volume for every AMI family
# The device each AMI family's kubelet keeps its data on (Bottlerocket: a separate data volume).
_EPHEMERAL_DEVICE = MappingProxyType({"Bottlerocket": "/dev/xvdb"})
_DEFAULT_EPHEMERAL_DEVICE = "/dev/xvda"
DEFAULT_MAX_PODS = 110  # the kubelet's default when pod density is not ENI-limited
AWS_NEURON_CORE = "aws.amazon.com/neuroncore"
AWS_EFA = "vpc.amazonaws.com/efa"

# Kube-reserved cpu tiers as (first millicore, last millicore, share in 1/10000): Karpenter takes
# them from Bottlerocket/EKS AMI so the scheduler reserves what the node's kubelet will reserve.
_CPU_RESERVED_TIERS = ((0, 1000, 600), (1000, 2000, 100), (2000, 4000, 50), (4000, 1 << 62, 25))

# Eviction signals that reduce allocatable, and the resource each one is measured against.
_EVICTION_SIGNALS = MappingProxyType({"memory.available": MEMORY, "nodefs.available": EPHEMERAL_STORAGE})
_DEFAULT_EVICTION_HARD = MappingProxyType({"memory.available": "100Mi", "nodefs.available": "10%"})
_RESERVABLE = (CPU, MEMORY, EPHEMERAL_STORAGE)

# "m5.large" -> category "m", generation "5"; "u-6tb1.metal" -> "u", "1"; "inf2.xlarge" -> "inf", "2".
_INSTANCE_TYPE_SCHEME = re.compile(r"^([a-z]+)(-[0-9]+tb)?([0-9]+).*\.")
# Zone -> region for standard, Local and Wavelength zones ("us-east-1-bos-1a" -> "us-east-1").
_REGION_OF_ZONE = re.compile(r"^([a-z]+(?:-[a-z]+)+-\d+)")

# Labels an instance type always defines: where it has no value (no GPU, no local NVMe) it gets
# DoesNotExist, so a pod asking `instance-gpu-count Exists` never lands on an m5.
_OPTIONAL_LABELS = (
    wk.INSTANCE_GPU_NAME,
    wk.INSTANCE_GPU_MANUFACTURER,
    wk.INSTANCE_GPU_COUNT,
    wk.INSTANCE_GPU_MEMORY,
    wk.INSTANCE_ACCELERATOR_NAME,
    wk.INSTANCE_ACCELERATOR_MANUFACTURER,
    wk.INSTANCE_ACCELERATOR_COUNT,
    wk.INSTANCE_LOCAL_NVME,
    wk.INSTANCE_CPU_SUSTAINED_CLOCK_SPEED_MHZ,
    wk.INSTANCE_CPU_MANUFACTURER,
    wk.INSTANCE_NETWORK_BANDWIDTH,
    wk.INSTANCE_EBS_BANDWIDTH,
)

# GPU manufacturer (lower case, as EC2 reports it) -> the device plugin's extended resource.
_GPU_RESOURCES = MappingProxyType({"nvidia": NVIDIA_GPU, "amd": AMD_GPU, "habana": HABANA_GAUDI})


@dataclass(frozen=True, slots=True)
class InstanceSpec:
    """What EC2 says about one instance type, reduced to what scheduling and labels need.

    Built by the AWS adapter from DescribeInstanceTypes, or read back from the offline snapshot
    (`to_record`/`from_record`). `arch` is Kubernetes' name (amd64 or arm64), `max_enis` and
    `ipv4_per_eni` are the default network card's limits (the ones the VPC CNI uses), memory
    figures are MiB, bandwidths Mbps, local NVMe GB. Manufacturer and accelerator names keep
    EC2's spelling; labels lower-case them.
    """

    name: str
    vcpus: int
    memory_mib: int
    arch: str = "amd64"
    hypervisor: str = "nitro"
    max_enis: int = 0
    ipv4_per_eni: int = 0
    gpu_name: str = ""
    gpu_manufacturer: str = ""
    gpu_count: int = 0
    gpu_memory_mib: int = 0
    accelerator_name: str = ""
    accelerator_manufacturer: str = ""
    accelerator_count: int = 0
    accelerator_core_count: int = 0
    efa_count: int = 0
    local_nvme_gb: int = 0
    network_bandwidth_mbps: int = 0
    ebs_bandwidth_mbps: int = 0
    bare_metal: bool = False
    current_generation: bool = True
    cpu_manufacturer: str = ""
    encryption_in_transit: bool = False
    supported_usage_classes: tuple[str, ...] = ("on-demand", "spot")
    sustained_clock_mhz: int = 0  # ProcessorInfo.SustainedClockSpeedInGhz x 1000; 0 when EC2 gives none

    @property
    def family(self) -> str:
        """The part before the dot: "m5" for m5.large."""
        return self.name.partition(".")[0]

    @property
    def size(self) -> str:
        """The part after the dot: "large" for m5.large."""
        return self.name.partition(".")[2]

    def to_record(self) -> dict[str, Any]:
        """A compact JSON-able dict: the name plus every field that differs from its default."""
        record: dict[str, Any] = {"name": self.name}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name != "name" and value != f.default:
                record[f.name] = list(value) if isinstance(value, tuple) else value
        return record

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> InstanceSpec:
        """Inverse of `to_record`; unknown keys (added by newer snapshots) are ignored."""
        known = {f.name for f in fields(cls)}
        kwargs = {k: v for k, v in record.items() if k in known}
        if "supported_usage_classes" in kwargs:
            kwargs["supported_usage_classes"] = tuple(kwargs["supported_usage_classes"])
        return cls(**kwargs)


def eni_limited_pods(spec: InstanceSpec, reserved_enis: int = 0) -> int:
    """The pods the VPC CNI can address: usable ENIs x (IPv4 per ENI - 1, the ENI's own IP) + 2.

    The + 2 is for the host-network pods (aws-node, kube-proxy) that need no pod IP. An instance
    with no usable ENI can host no pods.
    """
    usable = spec.max_enis - reserved_enis
    if usable <= 0 or spec.ipv4_per_eni <= 0:
        return 0
    return usable * (spec.ipv4_per_eni - 1) + 2


def max_pods(spec: InstanceSpec, kubelet: KubeletConfiguration | None = None, *, eni_limited: bool = True) -> int:
    """The node's pod capacity: maxPods override, else ENI-limited or 110, capped by podsPerCore."""
    kubelet = kubelet or _DEFAULT_KUBELET
    if kubelet.max_pods is not None:
        count = kubelet.max_pods
    elif eni_limited:
        count = eni_limited_pods(spec)
    else:
        count = DEFAULT_MAX_PODS
    if kubelet.pods_per_core:
        count = min(count, kubelet.pods_per_core * spec.vcpus)
    return count


def memory_capacity_mib(spec: InstanceSpec) -> int:
    """Memory the OS sees: EC2's figure less the 7.5% VM overhead (rounded up), less 64 MiB on arm64."""
    overhead = -(-spec.memory_mib * VM_MEMORY_OVERHEAD_PERMILLE // 1000)
    arm_overhead = ARM64_MEMORY_OVERHEAD_MIB if spec.arch == "arm64" else 0
    return max(spec.memory_mib - overhead - arm_overhead, 0)


def kube_reserved_cpu_milli(vcpus: int) -> int:
    """The default kube-reserved cpu in millicores for a node with `vcpus` cores (tiered)."""
    cpu = vcpus * 1000
    total = 0
    for start, end, share in _CPU_RESERVED_TIERS:
        if cpu > start:
            total += (min(cpu, end) - start) * share // 10000
    return total


def ephemeral_storage(spec: InstanceSpec, node_class: EC2NodeClass | None = None) -> int:
    """Bytes of ephemeral-storage a node gets, as Karpenter derives it from the EC2NodeClass.

    instanceStorePolicy RAID0 -> the local NVMe disks (decimal GB); else the mapping marked
    rootVolume; else (Custom AMIs) the last mapping, or the AMI family's kubelet data device;
    else Karpenter's 20Gi default volume.
    """
    if node_class is None:
        return DEFAULT_EPHEMERAL_STORAGE
    if node_class.instance_store_policy == "RAID0" and spec.local_nvme_gb > 0:
        return spec.local_nvme_gb * 10**9
    mappings = node_class.block_device_mappings
    root = node_class.root_volume
    if root is not None and root.ebs is not None and root.ebs.volume_size is not None:
        return root.ebs.volume_size
    if mappings:
        family = node_class.effective_ami_family
        if family == "Custom":
            last = mappings[-1].ebs
            return last.volume_size if last is not None and last.volume_size is not None else DEFAULT_EPHEMERAL_STORAGE
        device = _EPHEMERAL_DEVICE.get(family, _DEFAULT_EPHEMERAL_DEVICE)
        for mapping in mappings:
            if mapping.device_name == device and mapping.ebs is not None and mapping.ebs.volume_size is not None:
                return mapping.ebs.volume_size
    return DEFAULT_EPHEMERAL_STORAGE


def capacity(
    spec: InstanceSpec,
    kubelet: KubeletConfiguration | None = None,
    *,
    eni_limited: bool = True,
    ephemeral_storage_bytes: int = DEFAULT_EPHEMERAL_STORAGE,
) -> Resources:
    """The node's capacity: cpu, memory, pods, ephemeral-storage and accelerator devices."""
    values = {
        CPU: spec.vcpus * 1000,
        MEMORY: memory_capacity_mib(spec) * MIB * 1000,
        PODS: max_pods(spec, kubelet, eni_limited=eni_limited) * 1000,
        EPHEMERAL_STORAGE: ephemeral_storage_bytes * 1000,
    }
    gpu_resource = _GPU_RESOURCES.get(spec.gpu_manufacturer.lower())
    if gpu_resource is not None and spec.gpu_count > 0:
        values[gpu_resource] = spec.gpu_count * 1000
    if spec.accelerator_count > 0 and spec.accelerator_manufacturer.lower() == "aws":
        # Inferentia and Trainium devices are served by the Neuron device plugin.
        values[AWS_NEURON] = spec.accelerator_count * 1000
        if spec.accelerator_core_count > 0:
            values[AWS_NEURON_CORE] = spec.accelerator_core_count * 1000
    if spec.efa_count > 0:
        values[AWS_EFA] = spec.efa_count * 1000
    return Resources(values)


def overhead(capacity: Resources, vcpus: int, kubelet: KubeletConfiguration | None = None) -> Resources:
    """kube-reserved + system-reserved + eviction thresholds for a node with this capacity."""
    kubelet = kubelet or _DEFAULT_KUBELET
    pods = capacity[PODS] // 1000
    kube_defaults = {
        CPU: kube_reserved_cpu_milli(vcpus),
        MEMORY: (11 * pods + 255) * MIB * 1000,
        EPHEMERAL_STORAGE: GIB * 1000,
    }
    kube_reserved = {**kube_defaults, **_reserved(kubelet.kube_reserved)}
    system_reserved = _reserved(kubelet.system_reserved)
    return Resources(kube_reserved) + Resources(system_reserved) + _eviction(capacity, kubelet)


def _reserved(reserved: Resources | None) -> dict[str, int]:
    # "pid" and other non-schedulable entries are reserved by the kubelet but reduce no allocatable.
    return {name: value for name, value in (reserved or {}).items() if name in _RESERVABLE}


def _eviction(capacity: Resources, kubelet: KubeletConfiguration) -> Resources:
    hard = {**_DEFAULT_EVICTION_HARD, **kubelet.eviction_hard}
    out: dict[str, int] = {}
    for thresholds, where in ((hard, "evictionHard"), (kubelet.eviction_soft, "evictionSoft")):
        for signal, raw in thresholds.items():
            resource = _EVICTION_SIGNALS.get(signal)
            if resource is None:
                continue  # inode and imagefs signals do not reduce allocatable
            value = _threshold(raw, capacity[resource], f"kubelet.{where}.{signal}")
            out[resource] = max(out.get(resource, 0), value)
    return Resources(out)


def _threshold(raw: str, capacity_milli: int, where: str) -> int:
    text = str(raw).strip()
    if text.endswith("%"):
        try:
            percent = parse_quantity(text[:-1])
        except InvalidValue:
            raise InvalidValue(f"{where}: {raw!r} is not a percentage") from None
        if not 0 <= percent <= 100:
            raise InvalidValue(f"{where}: {raw!r} is not between 0% and 100%")
        exact = percent * capacity_milli / 100
        return -((-exact.numerator) // exact.denominator)
    try:
        return to_milli(text)
    except InvalidValue as error:
        raise InvalidValue(f"{where}: {error}") from None


def region_of(zone: str) -> str:
    """The region a zone belongs to ("us-east-1a" -> "us-east-1"); the zone itself if unparseable."""
    match = _REGION_OF_ZONE.match(zone)
    return match[1] if match else zone


def requirements(spec: InstanceSpec, offerings: Iterable[Offering], region: str | None = None) -> Requirements:
    """The labels a node of this type carries, as single-valued Requirements.

    Zone and capacity type are `In` the values of the available offerings; labels the type has no
    value for (GPU, accelerator, local NVMe) are DoesNotExist.
    """
    available = [o for o in offerings if o.available]
    zones = sorted({o.zone for o in available})
    if region is None:
        regions = sorted({region_of(z) for z in zones})
        region = regions[0] if len(regions) == 1 else None
    values: dict[str, list[str]] = {
        wk.INSTANCE_TYPE: [spec.name],
        wk.ARCH: [spec.arch],
        wk.OS: ["linux"],
        wk.ZONE: zones,
        wk.CAPACITY_TYPE: sorted({o.capacity_type for o in available}),
        wk.INSTANCE_CPU: [str(spec.vcpus)],
        wk.INSTANCE_MEMORY: [str(spec.memory_mib)],
        wk.INSTANCE_HYPERVISOR: [spec.hypervisor],
        wk.INSTANCE_ENCRYPTION_IN_TRANSIT: [str(spec.encryption_in_transit).lower()],
        # "c7i-flex.large" is a flex type; Nodewright launches shared tenancy only.
        wk.INSTANCE_CAPABILITY_FLEX: [str(spec.family.endswith("-flex")).lower()],
        wk.INSTANCE_TENANCY: ["default"],
    }
    if region is not None:
        values[wk.REGION] = [region]
    family, _, size = spec.name.partition(".")
    if size:
        values[wk.INSTANCE_FAMILY] = [family]
        values[wk.INSTANCE_SIZE] = [size]
    scheme = _INSTANCE_TYPE_SCHEME.match(spec.name)
    if scheme is not None:
        values[wk.INSTANCE_CATEGORY] = [scheme[1]]
        values[wk.INSTANCE_GENERATION] = [scheme[3]]
    if spec.cpu_manufacturer:
        values[wk.INSTANCE_CPU_MANUFACTURER] = [spec.cpu_manufacturer.lower()]
    if spec.network_bandwidth_mbps > 0:
        values[wk.INSTANCE_NETWORK_BANDWIDTH] = [str(spec.network_bandwidth_mbps)]
    if spec.ebs_bandwidth_mbps > 0:
        values[wk.INSTANCE_EBS_BANDWIDTH] = [str(spec.ebs_bandwidth_mbps)]
    if spec.gpu_count > 0:
        values[wk.INSTANCE_GPU_NAME] = [spec.gpu_name.lower()]
        values[wk.INSTANCE_GPU_MANUFACTURER] = [spec.gpu_manufacturer.lower()]
        values[wk.INSTANCE_GPU_COUNT] = [str(spec.gpu_count)]
        values[wk.INSTANCE_GPU_MEMORY] = [str(spec.gpu_memory_mib)]
    if spec.accelerator_count > 0:
        values[wk.INSTANCE_ACCELERATOR_NAME] = [spec.accelerator_name.lower()]
        values[wk.INSTANCE_ACCELERATOR_MANUFACTURER] = [spec.accelerator_manufacturer.lower()]
        values[wk.INSTANCE_ACCELERATOR_COUNT] = [str(spec.accelerator_count)]
    if spec.local_nvme_gb > 0:
        values[wk.INSTANCE_LOCAL_NVME] = [str(spec.local_nvme_gb)]
    if spec.sustained_clock_mhz > 0:
        values[wk.INSTANCE_CPU_SUSTAINED_CLOCK_SPEED_MHZ] = [str(spec.sustained_clock_mhz)]
    reqs = [Requirement(key, False, frozenset(vals)) for key, vals in values.items()]
    reqs += [Requirement(key, False, frozenset()) for key in _OPTIONAL_LABELS if key not in values]
    return Requirements(reqs)


def build_instance_type(
    spec: InstanceSpec,
    offerings: Sequence[Offering],
    kubelet: KubeletConfiguration | None = None,
    *,
    region: str | None = None,
    eni_limited: bool = True,
    ephemeral_storage_bytes: int = DEFAULT_EPHEMERAL_STORAGE,
    price_estimated: bool = False,
) -> InstanceType:
    """The schedulable InstanceType for `spec`, offered as `offerings`.

    `eni_limited=False` models a cluster whose CNI does not limit pods by ENI (prefix delegation
    off, custom CNI): pods default to 110. `ephemeral_storage_bytes` is what
    `ephemeral_storage(spec, node_class)` says the NodeClass gives nodes (default 20Gi).
    `region` defaults to the region of the offered zones.
    """
    cap = capacity(spec, kubelet, eni_limited=eni_limited, ephemeral_storage_bytes=ephemeral_storage_bytes)
    return InstanceType(
        name=spec.name,
        requirements=requirements(spec, offerings, region),
        capacity=cap,
        overhead=overhead(cap, spec.vcpus, kubelet),
        offerings=tuple(offerings),
        price_estimated=price_estimated,
    )


_DEFAULT_KUBELET = KubeletConfiguration()
