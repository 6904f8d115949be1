"""EC2 launch templates: what every instance of a (NodeClass, AMI, user data) combination boots with.

Role: build the LaunchTemplateData for a resolved NodeClass (AMI, user data, security groups,
instance profile, block devices, instance metadata options, monitoring, network interfaces with
public IP, IP prefixes and connection tracking, placement group, CPU options) and make sure
a template with exactly that content exists, once per process. A NodeClass has one template per
AMI it launches: per architecture and per variant (standard, nvidia, neuron), so a claim whose
options mix GPU and standard types gets one template for each, all in the same CreateFleet.

Naming: `nodewright/<cluster>/<hash of the data>`. The name is a pure function of the content, so
two Lambdas needing the same template agree on it without coordination, a changed NodeClass
(new AMI, new user data, new security groups) gets a new template instead of mutating one in use,
and "create if missing" is one CreateLaunchTemplate call whose "already exists" answer means
another caller won the race: either way the template is there.

Ownership: each template is tagged `nodewright.io/cluster=<cluster>` (the IAM policy only lets us
create, use and delete templates carrying it) plus the NodeClass name and the NodeClass's tags.

Defaults (Karpenter's): IMDSv2 required with hop limit 1, and, when the NodeClass lists no block
devices, a 20 GiB encrypted gp3 root volume on /dev/xvda (Bottlerocket: a 4 GiB OS volume on
/dev/xvda and a 20 GiB data volume on /dev/xvdb).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from nodewright.adapters.aws.retry import Backoff, error_code
from nodewright.model.nodeclass import (
    EBS,
    RESERVATION_CAPACITY_BLOCK,
    BlockDeviceMapping,
    EC2NodeClass,
    MetadataOptions,
)

log = logging.getLogger(__name__)

CLUSTER_TAG = "nodewright.io/cluster"
NODECLASS_TAG = "nodewright.io/nodeclass"
_GIB = 2**30
_DEFAULT_EBS = EBS(volume_size=20 * _GIB, volume_type="gp3", encrypted=True, delete_on_termination=True)
DEFAULT_BLOCK_DEVICES: Mapping[str, tuple[BlockDeviceMapping, ...]] = {
    "Bottlerocket": (
        BlockDeviceMapping(
            "/dev/xvda", EBS(volume_size=4 * _GIB, volume_type="gp3", encrypted=True, delete_on_termination=True)
        ),
        BlockDeviceMapping("/dev/xvdb", _DEFAULT_EBS, root_volume=True),
    ),
}
DEFAULT_ROOT_DEVICE = "/dev/xvda"
_ALREADY_EXISTS = "InvalidLaunchTemplateName.AlreadyExistsException"
NOT_FOUND_CODES = frozenset(
    {
        "InvalidLaunchTemplateName.NotFoundException",
        "InvalidLaunchTemplateId.NotFound",
        "InvalidLaunchTemplateId.Malformed",
    }
)


def ebs_spec(ebs: EBS) -> dict[str, Any]:
    """The LaunchTemplateData Ebs block for one volume (only the fields that are set)."""
    out: dict[str, Any] = {}
    for key, value in (
        ("VolumeSize", ebs.volume_size_gib),
        ("VolumeType", ebs.volume_type),
        ("Iops", ebs.iops),
        ("Throughput", ebs.throughput),
        ("Encrypted", ebs.encrypted),
        ("KmsKeyId", ebs.kms_key_id),
        ("DeleteOnTermination", ebs.delete_on_termination),
        ("SnapshotId", ebs.snapshot_id),
        ("VolumeInitializationRate", ebs.volume_initialization_rate),
    ):
        if value is not None:
            out[key] = value
    return out


def block_device_mappings(nodeclass: EC2NodeClass) -> list[dict[str, Any]]:
    """The NodeClass's block devices, or its AMI family's defaults when it lists none."""
    family = nodeclass.effective_ami_family
    if nodeclass.block_device_mappings:
        mappings: Sequence[BlockDeviceMapping] = nodeclass.block_device_mappings
    elif family == "Custom":
        return []  # a custom AMI brings its own devices; guessing names could shadow them
    else:
        mappings = DEFAULT_BLOCK_DEVICES.get(family, (BlockDeviceMapping(DEFAULT_ROOT_DEVICE, _DEFAULT_EBS, True),))
    out: list[dict[str, Any]] = []
    for mapping in mappings:
        entry: dict[str, Any] = {"DeviceName": mapping.device_name or DEFAULT_ROOT_DEVICE}
        if mapping.ebs is not None:
            entry["Ebs"] = ebs_spec(mapping.ebs)
        out.append(entry)
    return out


def metadata_options(options: MetadataOptions) -> dict[str, Any]:
    """LaunchTemplateData MetadataOptions (IMDSv2 required by default)."""
    return {
        "HttpEndpoint": options.http_endpoint,
        "HttpProtocolIpv6": options.http_protocol_ipv6,
        "HttpPutResponseHopLimit": options.http_put_response_hop_limit,
        "HttpTokens": options.http_tokens,
    }


def instance_profile_spec(profile: str) -> dict[str, str]:
    """IamInstanceProfile by ARN when given one, else by name."""
    return {"Arn": profile} if profile.startswith("arn:") else {"Name": profile}


def connection_tracking_spec(nodeclass: EC2NodeClass) -> dict[str, int] | None:
    """ConnectionTrackingSpecification of an interface: the timeouts the NodeClass sets, or None."""
    tracking = nodeclass.connection_tracking
    if tracking is None:
        return None
    pairs = (
        ("TcpEstablishedTimeout", tracking.tcp_established_timeout),
        ("UdpStreamTimeout", tracking.udp_stream_timeout),
        ("UdpTimeout", tracking.udp_timeout),
    )
    return {key: value for key, value in pairs if value is not None} or None


def network_interfaces(
    nodeclass: EC2NodeClass, security_groups: Sequence[str], ip_family: str = "ipv4"
) -> list[dict[str, Any]] | None:
    """The launch template's NetworkInterfaces, or None when the default interface will do.

    One entry per `networkInterfaces` item, else one primary interface when a setting only an
    interface can carry is given (public IP, connection tracking, IP prefixes). Every interface gets
    the security groups (EC2 refuses SecurityGroupIds next to NetworkInterfaces); an `efa-only`
    interface has no IP address, so it gets no public IP, prefixes or connection tracking (EC2
    refuses the launch otherwise). `ipPrefixCount` means IPv6 prefixes on an IPv6 cluster.
    """
    tracking = connection_tracking_spec(nodeclass)
    prefix_key = "Ipv6PrefixCount" if ip_family == "ipv6" else "Ipv4PrefixCount"
    if nodeclass.network_interfaces:
        slots = [(i.network_card_index, i.device_index, i.interface_type) for i in nodeclass.network_interfaces]
    elif (nodeclass.associate_public_ip_address, tracking, nodeclass.ip_prefix_count) != (None, None, None):
        slots = [(0, 0, "")]
    else:
        return None
    out: list[dict[str, Any]] = []
    for card, device, kind in slots:
        interface: dict[str, Any] = {"DeviceIndex": device, "Groups": list(security_groups)}
        if kind:
            interface["NetworkCardIndex"] = card
            interface["InterfaceType"] = kind
        if kind != "efa-only":
            optional = (
                ("AssociatePublicIpAddress", nodeclass.associate_public_ip_address),
                (prefix_key, nodeclass.ip_prefix_count),
                ("ConnectionTrackingSpecification", tracking),
            )
            interface.update({key: value for key, value in optional if value is not None})
        out.append(interface)
    return out


def placement_spec(nodeclass: EC2NodeClass) -> dict[str, str] | None:
    """Placement of the NodeClass's placement group, by name or id as written (EC2 resolves either)."""
    group = nodeclass.placement_group_selector
    if group is None:
        return None
    return {"GroupName": group.name} if group.name is not None else {"GroupId": str(group.id)}


def reservation_fields(
    nodeclass: EC2NodeClass, reservation_id: str = "", reservation_type: str = "", *, interruptible: bool = False
) -> dict[str, Any]:
    """LaunchTemplateData fields for capacity reservations, as Karpenter sets them.

    A launch into a reservation targets it by id with preference `capacity-reservations-only`
    (open and targeted reservations alike), and a capacity block also needs market type
    `capacity-block`, an interruptible reservation `interruptible-capacity-reservation`. Any
    other launch of a NodeClass that selects reservations gets preference
    `none`: an on-demand instance must not fill an open reservation Nodewright counts for its
    reserved offerings. NodeClasses without reservation terms keep EC2's default (no field).
    """
    if reservation_id:
        fields: dict[str, Any] = {
            "CapacityReservationSpecification": {
                "CapacityReservationPreference": "capacity-reservations-only",
                "CapacityReservationTarget": {"CapacityReservationId": reservation_id},
            }
        }
        if reservation_type == RESERVATION_CAPACITY_BLOCK:
            fields["InstanceMarketOptions"] = {"MarketType": "capacity-block"}
        elif interruptible:
            fields["InstanceMarketOptions"] = {"MarketType": "interruptible-capacity-reservation"}
        return fields
    if nodeclass.capacity_reservation_selector_terms:
        return {"CapacityReservationSpecification": {"CapacityReservationPreference": "none"}}
    return {}


def template_data(
    *,
    nodeclass: EC2NodeClass,
    image_id: str,
    user_data_b64: str,
    security_groups: Sequence[str],
    instance_profile: str,
    ip_family: str = "ipv4",
) -> dict[str, Any]:
    """The LaunchTemplateData for one AMI of a resolved NodeClass.

    Subnet and instance type are left to the fleet's overrides. The security groups go on the
    network interfaces when the NodeClass needs explicit ones (`network_interfaces`), else on
    SecurityGroupIds. Placement group, CPU options (nested virtualization) are set when given.
    """
    data: dict[str, Any] = {
        "ImageId": image_id,
        "UserData": user_data_b64,
        "IamInstanceProfile": instance_profile_spec(instance_profile),
        "MetadataOptions": metadata_options(nodeclass.metadata_options),
        "Monitoring": {"Enabled": nodeclass.detailed_monitoring},
    }
    devices = block_device_mappings(nodeclass)
    if devices:
        data["BlockDeviceMappings"] = devices
    groups = sorted(security_groups)
    interfaces = network_interfaces(nodeclass, groups, ip_family)
    if interfaces is not None:
        data["NetworkInterfaces"] = interfaces
    else:
        data["SecurityGroupIds"] = groups
    placement = placement_spec(nodeclass)
    if placement is not None:
        data["Placement"] = placement
    if nodeclass.nested_virtualization is not None:
        data["CpuOptions"] = {"NestedVirtualization": nodeclass.nested_virtualization}
    return data


def template_name(cluster: str, data: Mapping[str, Any]) -> str:
    """`nodewright/<cluster>/<first 20 hex digits of the data's SHA-256>`."""
    digest = hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    return f"nodewright/{cluster}/{digest[:20]}"


class LaunchTemplates:
    """Creates launch templates on first use and remembers which exist.

    Contract: `ensure` returns the template's name once a template of that content exists
    (creating it, or finding that a concurrent caller did). `forget` drops a name from the cache,
    for when a launch reports the template missing (deleted by `prune` elsewhere); the next
    `ensure` recreates it. Not thread-safe: one per Lambda container.
    """

    def __init__(self, ec2: Any, cluster: str, *, backoff: Backoff | None = None) -> None:
        self._ec2 = ec2
        self._cluster = cluster
        self._backoff = backoff or Backoff()
        self._known: set[str] = set()

    def ensure(self, data: Mapping[str, Any], *, nodeclass: EC2NodeClass) -> str:
        """The name of a template holding `data`, created if missing."""
        name = template_name(self._cluster, data)
        if name in self._known:
            return name
        tags = {**nodeclass.tags, NODECLASS_TAG: nodeclass.name, CLUSTER_TAG: self._cluster}
        request = {
            "LaunchTemplateName": name,
            "LaunchTemplateData": dict(data),
            "TagSpecifications": [
                {"ResourceType": "launch-template", "Tags": [{"Key": k, "Value": v} for k, v in sorted(tags.items())]}
            ],
        }
        try:
            self._backoff.call(lambda: self._ec2.create_launch_template(**request))
        except Exception as error:
            if error_code(error) != _ALREADY_EXISTS:
                raise
        self._known.add(name)
        return name

    def forget(self, name: str) -> None:
        """Drop `name` from the cache so the next `ensure` re-creates it."""
        self._known.discard(name)

    def delete(self, name: str) -> None:
        """Delete a template; one already gone counts as deleted."""
        self._known.discard(name)
        try:
            self._backoff.call(lambda: self._ec2.delete_launch_template(LaunchTemplateName=name))
        except Exception as error:
            if error_code(error) not in NOT_FOUND_CODES:
                raise

    def prune(self, now: float, older_than: float) -> list[str]:
        """Delete this cluster's templates created more than `older_than` seconds before `now`.

        For the housekeeping pass: templates are cheap to recreate, and EC2 caps them per region.
        Returns the names deleted.
        """
        paginator = self._ec2.get_paginator("describe_launch_templates")
        filters = [{"Name": f"tag:{CLUSTER_TAG}", "Values": [self._cluster]}]
        stale: list[str] = []
        for page in self._backoff.call(lambda: list(paginator.paginate(Filters=filters))):
            for template in page.get("LaunchTemplates", []):
                created = template.get("CreateTime")
                stamp = created.timestamp() if isinstance(created, datetime) else now
                if now - stamp > older_than:
                    stale.append(str(template["LaunchTemplateName"]))
        for name in stale:
            self.delete(name)
        if stale:
            log.info("deleted %d stale launch templates", len(stale))
        return stale
