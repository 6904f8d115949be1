"""EC2NodeClasses: how a NodePool's instances are launched on AWS (AMI, network, disks, kubelet). Pure.

The fields follow Karpenter's `karpenter.k8s.aws/v1` EC2NodeClass, so existing manifests mean
the same here. Parsing and validation of documents live in `nodewright.config`; this module only
holds the values and the small derivations launch code needs (the AMI family an alias implies,
the root volume).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from nodewright.model.errors import InvalidValue
from nodewright.model.resources import Resources

AMI_FAMILIES = ("AL2", "AL2023", "Bottlerocket", "Windows2019", "Windows2022", "Windows2025", "Custom")
# alias family (lower case, as written in `al2023@latest`) -> amiFamily it implies
ALIAS_FAMILIES = MappingProxyType(
    {
        "al2": "AL2",
        "al2023": "AL2023",
        "bottlerocket": "Bottlerocket",
        "windows2019": "Windows2019",
        "windows2022": "Windows2022",
        "windows2025": "Windows2025",
    }
)
VOLUME_TYPES = ("standard", "io1", "io2", "gp2", "sc1", "st1", "gp3")
INSTANCE_STORE_POLICIES = ("RAID0",)
INSTANCE_MATCH_CRITERIA = ("open", "targeted")
INTERFACE_TYPES = ("interface", "efa-only")
# Version part of an alias: "latest" or a release name such as v20240807 or v1.20.0.
_ALIAS_VERSION = re.compile(r"^(latest|v[0-9][0-9A-Za-z.\-]*)$")


@dataclass(frozen=True, slots=True)
class AMIAlias:
    """A pinned or floating AMI release, written `family@version` (e.g. `al2023@latest`)."""

    family: str
    version: str

    @classmethod
    def parse(cls, text: str) -> AMIAlias:
        """Build from `family@version`; raise InvalidValue naming the rule that failed."""
        family, sep, version = text.partition("@")
        if not sep or not family or not version:
            raise InvalidValue(f"{text!r} is not of the form family@version (e.g. al2023@latest)")
        if family not in ALIAS_FAMILIES:
            raise InvalidValue(f"alias family {family!r} is not one of {', '.join(ALIAS_FAMILIES)}")
        if not _ALIAS_VERSION.match(version):
            raise InvalidValue(f"alias version {version!r} is not 'latest' or a release such as v20240807")
        if family.startswith("windows") and version != "latest":
            # Windows AMIs are only published as SSM "latest" parameters; there is no pinning.
            raise InvalidValue(f"alias {text!r}: Windows families only support version 'latest'")
        return cls(family, version)

    @property
    def ami_family(self) -> str:
        """The amiFamily this alias implies (al2023 -> AL2023)."""
        return ALIAS_FAMILIES[self.family]

    def __str__(self) -> str:
        return f"{self.family}@{self.version}"


@dataclass(frozen=True, slots=True)
class SelectorTerm:
    """One subnet / security group / capacity reservation selector term: match by tags, id or name.

    Terms are ORed; within a term, every tag must match (a tag value `*` matches any value).
    `instance_match_criteria` (open or targeted) only appears in capacity reservation terms.
    """

    tags: Mapping[str, str] = field(default_factory=dict)
    id: str | None = None
    name: str | None = None
    owner_id: str | None = None
    instance_match_criteria: str | None = None


@dataclass(frozen=True, slots=True)
class AMISelectorTerm:
    """One amiSelectorTerms entry: an alias alone, or id, or name/owner/tags, or an SSM parameter."""

    alias: AMIAlias | None = None
    id: str | None = None
    name: str | None = None
    owner: str | None = None
    tags: Mapping[str, str] = field(default_factory=dict)
    ssm_parameter: str | None = None


@dataclass(frozen=True, slots=True)
class EBS:
    """EBS settings of one block device; `volume_size` is in bytes (written as a quantity, e.g. 100Gi)."""

    volume_size: int | None = None
    volume_type: str | None = None
    iops: int | None = None
    throughput: int | None = None
    encrypted: bool | None = None
    kms_key_id: str | None = None
    delete_on_termination: bool | None = None
    snapshot_id: str | None = None
    volume_initialization_rate: int | None = None

    @property
    def volume_size_gib(self) -> int | None:
        """The size in whole GiB (rounded up), as EC2's launch template wants it."""
        if self.volume_size is None:
            return None
        return -(-self.volume_size // 2**30)


@dataclass(frozen=True, slots=True)
class BlockDeviceMapping:
    """One block device of the launched instance; at most one mapping is the root volume."""

    device_name: str | None = None
    ebs: EBS | None = None
    root_volume: bool = False


@dataclass(frozen=True, slots=True)
class MetadataOptions:
    """Instance metadata service settings; defaults are Karpenter's (IMDSv2 only, hop limit 1)."""

    http_endpoint: str = "enabled"
    http_protocol_ipv6: str = "disabled"
    http_put_response_hop_limit: int = 1
    http_tokens: str = "required"


@dataclass(frozen=True, slots=True)
class KubeletConfiguration:
    """Kubelet settings passed to nodes through user data (moved here from the NodePool in v1).

    `kube_reserved`/`system_reserved` are resource lists; eviction thresholds stay as written
    ("100Mi" or "10%") because a percentage only resolves against a node's capacity;
    `eviction_soft_grace_period` values are seconds.
    """

    max_pods: int | None = None
    pods_per_core: int | None = None
    kube_reserved: Resources | None = None
    system_reserved: Resources | None = None
    eviction_hard: Mapping[str, str] = field(default_factory=dict)
    eviction_soft: Mapping[str, str] = field(default_factory=dict)
    eviction_soft_grace_period: Mapping[str, float] = field(default_factory=dict)
    eviction_max_pod_grace_period: int | None = None
    cluster_dns: tuple[str, ...] = ()
    cpu_cfs_quota: bool | None = None
    image_gc_high_threshold_percent: int | None = None
    image_gc_low_threshold_percent: int | None = None


RESERVATION_DEFAULT = "default"
RESERVATION_CAPACITY_BLOCK = "capacity-block"
RESERVATION_TYPES = (RESERVATION_DEFAULT, RESERVATION_CAPACITY_BLOCK)


@dataclass(frozen=True, slots=True)
class CapacityReservation:
    """One capacity reservation a NodeClass's `capacityReservationSelectorTerms` selected: an
    item of Karpenter's EC2NodeClass `status.capacityReservations`, plus what EC2 says is left.

    `reservation_type` is `default` (an On-Demand Capacity Reservation) or `capacity-block`;
    `instance_match_criteria` is `open` or `targeted` (Nodewright targets both by id);
    `available` is EC2's AvailableInstanceCount when it was read; `end_time` is epoch seconds
    (None: no end, which a capacity block never has); `interruptible`: EC2 may take its
    instances back with a warning (an interruptible ODCR, launched with its own market type).
    """

    id: str
    instance_type: str
    zone: str
    owner_id: str
    instance_match_criteria: str = "targeted"
    reservation_type: str = RESERVATION_DEFAULT
    available: int = 0
    end_time: float | None = None
    interruptible: bool = False


@dataclass(frozen=True, slots=True)
class PlacementGroupSelector:
    """The placement group instances launch into, by name or by id (exactly one is set)."""

    name: str | None = None
    id: str | None = None


@dataclass(frozen=True, slots=True)
class ConnectionTracking:
    """Idle connection tracking timeouts (seconds) of the launched network interfaces; None is EC2's default."""

    tcp_established_timeout: int | None = None
    udp_stream_timeout: int | None = None
    udp_timeout: int | None = None


@dataclass(frozen=True, slots=True)
class NetworkInterface:
    """One network interface of the launched instance: which card and device slot, and its type."""

    network_card_index: int
    device_index: int
    interface_type: str = "interface"


@dataclass(frozen=True, slots=True)
class EC2NodeClass:
    """An EC2NodeClass (Karpenter v1 schema). Exactly one of `role` and `instance_profile` is set."""

    name: str
    subnet_selector_terms: tuple[SelectorTerm, ...] = ()
    security_group_selector_terms: tuple[SelectorTerm, ...] = ()
    ami_selector_terms: tuple[AMISelectorTerm, ...] = ()
    ami_family: str | None = None
    role: str | None = None
    instance_profile: str | None = None
    user_data: str | None = None
    block_device_mappings: tuple[BlockDeviceMapping, ...] = ()
    metadata_options: MetadataOptions = MetadataOptions()
    tags: Mapping[str, str] = field(default_factory=dict)
    associate_public_ip_address: bool | None = None
    detailed_monitoring: bool = False
    kubelet: KubeletConfiguration | None = None
    instance_store_policy: str | None = None
    capacity_reservation_selector_terms: tuple[SelectorTerm, ...] = ()
    context: str | None = None
    placement_group_selector: PlacementGroupSelector | None = None
    connection_tracking: ConnectionTracking | None = None
    network_interfaces: tuple[NetworkInterface, ...] = ()
    # cpuOptions.nestedVirtualization ("enabled", "disabled"; None: EC2's default) and ipPrefixCount
    # (IPv4 prefixes, IPv6 on an IPv6 cluster, on every interface that has addresses).
    nested_virtualization: str | None = None
    ip_prefix_count: int | None = None
    api_version: str = "karpenter.k8s.aws/v1"
    resource_version: str = ""

    @property
    def alias(self) -> AMIAlias | None:
        """The AMI alias, when the AMI is chosen by one (it is then the only term)."""
        for term in self.ami_selector_terms:
            if term.alias is not None:
                return term.alias
        return None

    @property
    def effective_ami_family(self) -> str:
        """The AMI family that decides user data and device names: amiFamily, else the alias's."""
        if self.ami_family is not None:
            return self.ami_family
        alias = self.alias
        return alias.ami_family if alias is not None else "Custom"

    @property
    def root_volume(self) -> BlockDeviceMapping | None:
        """The mapping marked rootVolume, if any."""
        for mapping in self.block_device_mappings:
            if mapping.root_volume:
                return mapping
        return None
