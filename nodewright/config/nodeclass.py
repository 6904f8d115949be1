"""EC2NodeClass documents (`karpenter.k8s.aws/v1`, `nodewright.io/v1`): validate into the model. Pure.

`parse_nodeclass` checks every field of Karpenter's v1 EC2NodeClass schema, including the CEL
rules its CRD carries (exactly one of role/instanceProfile, an alias is the only AMI term, id
terms stand alone, restricted tags, one root volume, iops/throughput only where EBS allows them),
and reports every problem through the cursor. The `kubelet` block (reserved resources, evictions
paired with grace periods, image GC thresholds ordered) is read by `kubelet.py`; the way back, a
model printed as a manifest, is `nodeclass_render.render_nodeclass`.

Placement groups, connection tracking, network interfaces, IP prefixes and CPU options go into
the launch template (`nodewright.adapters.aws.launch_template`); capacity reservation terms select
the reservations launched into (`nodewright.adapters.aws.reservations`). Fields Nodewright
validates but does not act on yet (`NOT_ACTED_ON`, and Windows AMIs) are kept in the model and
each warns that it is ignored, so a Karpenter manifest is accepted without hiding what Nodewright
will not do with it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from nodewright.config import fields as f
from nodewright.config.kubelet import parse_kubelet
from nodewright.config.problems import At, show
from nodewright.model.errors import InvalidValue
from nodewright.model.nodeclass import (
    AMI_FAMILIES,
    EBS,
    INSTANCE_MATCH_CRITERIA,
    INSTANCE_STORE_POLICIES,
    INTERFACE_TYPES,
    VOLUME_TYPES,
    AMIAlias,
    AMISelectorTerm,
    BlockDeviceMapping,
    ConnectionTracking,
    EC2NodeClass,
    MetadataOptions,
    NetworkInterface,
    PlacementGroupSelector,
    SelectorTerm,
)

MAX_TERMS = 30
MAX_BLOCK_DEVICES = 50
MAX_NETWORK_INTERFACES = 150
INT32_MAX = 2**31 - 1
MAX_VOLUME_BYTES = 64 * 10**12  # EBS's largest volume: 64 TB
RESTRICTED_TAG_PREFIXES = ("kubernetes.io/cluster/",)
RESTRICTED_TAGS = frozenset(
    {
        "karpenter.sh/nodepool",
        "karpenter.sh/nodeclaim",
        "karpenter.k8s.aws/ec2nodeclass",
        "eks:eks-cluster-name",
        "nodewright.io/nodepool",
        "nodewright.io/nodeclaim",
    }
)
ENABLED_DISABLED = ("enabled", "disabled")
HTTP_TOKENS = ("required", "optional")

SPEC_FIELDS = (
    "subnetSelectorTerms",
    "securityGroupSelectorTerms",
    "capacityReservationSelectorTerms",
    "amiSelectorTerms",
    "amiFamily",
    "role",
    "instanceProfile",
    "userData",
    "blockDeviceMappings",
    "instanceStorePolicy",
    "metadataOptions",
    "tags",
    "associatePublicIPAddress",
    "detailedMonitoring",
    "kubelet",
    "context",
    "placementGroupSelector",
    "connectionTracking",
    "networkInterfaces",
    "cpuOptions",
    "ipPrefixCount",
)
# Fields accepted and validated as Karpenter does, but not acted on yet: each warns that it is ignored.
# None today: capacityReservationSelectorTerms are acted on (nodewright.engine.reservations).
NOT_ACTED_ON: dict[str, str] = {}
WINDOWS_NOT_LAUNCHED = "Nodewright does not launch Windows nodes yet: NodePools using this EC2NodeClass launch nothing"
_SPEC_HINTS = {"amiSelector": "use amiSelectorTerms", "subnetSelector": "use subnetSelectorTerms"}
_SUBNET_TERM = ("tags", "id")
_SG_TERM = ("tags", "id", "name")
_CR_TERM = ("tags", "id", "ownerID", "instanceMatchCriteria")
_PLACEMENT_GROUP = ("name", "id")
_CONNECTION_TRACKING = ("tcpEstablishedTimeout", "udpStreamTimeout", "udpTimeout")
_NETWORK_INTERFACE = ("networkCardIndex", "deviceIndex", "interfaceType")
_CPU_OPTIONS = ("nestedVirtualization",)
_AMI_TERM = ("alias", "id", "name", "owner", "tags", "ssmParameter")
_AMI_SELECTING = ("alias", "id", "name", "tags", "ssmParameter")
_BDM = ("deviceName", "ebs", "rootVolume")
_EBS = (
    "volumeSize",
    "volumeType",
    "iops",
    "throughput",
    "encrypted",
    "kmsKeyID",
    "deleteOnTermination",
    "snapshotID",
    "volumeInitializationRate",
)
_METADATA = ("httpEndpoint", "httpProtocolIPv6", "httpPutResponseHopLimit", "httpTokens")


def _tag_key_rule(at: At, key: str) -> None:
    if not key:
        at.error("empty tag keys are not supported")
    elif key in RESTRICTED_TAGS or key.startswith(RESTRICTED_TAG_PREFIXES):
        at.error(f"tag {show(key)} is restricted: Nodewright sets it on the instances it launches")


def _selector_tags(at: At, value: Any) -> dict[str, str]:
    tags = f.string_map(at, value) or {}
    for key, text in tags.items():
        if not key:
            (at / key).error("empty tag keys are not supported")
        if not text:
            (at / key).error("empty tag values are not supported (use * to match any value)")
    if value is not None and not tags and isinstance(value, Mapping):
        at.error("must have at least one tag")
    return tags


# Karpenter's id patterns for subnets and security groups are unanchored (OpenAPI patterns search),
# so an id only has to contain subnet-... / sg-...: `.*` keeps `match` as lenient as the CRD.
_ID_PATTERNS = {"subnet": re.compile(r".*subnet-[0-9a-z]+"), "sg": re.compile(r".*sg-[0-9a-z]+")}


def _selector_term(
    allowed: tuple[str, ...], exclusive: tuple[str, ...], id_prefix: str
) -> Callable[[At, Any], SelectorTerm | None]:
    def read(at: At, value: Any) -> SelectorTerm | None:
        start = at.mark()
        term = f.kube_item(at, value, allowed)
        if term is None:
            return None
        present = [name for name in allowed if term.get(name) is not None]
        if not present:
            at.error(f"must set at least one of {', '.join(allowed)}")
        for alone in exclusive:
            if alone in present and len(present) > 1:
                at.error(f"{alone!r} cannot be combined with other fields in a term")
        tags = _selector_tags(at / "tags", term.get("tags"))
        ident = f.string(
            at / "id",
            term.get("id"),
            non_empty=True,
            pattern=_ID_PATTERNS[id_prefix],
            rule=f"is not an id of the form {id_prefix}-...",
        )
        name = f.string(at / "name", term.get("name"), non_empty=True) if "name" in allowed else None
        owner = f.string(at / "ownerID", term.get("ownerID"), non_empty=True) if "ownerID" in allowed else None
        if at.failed_since(start):
            return None
        return SelectorTerm(tags=tags, id=ident, name=name, owner_id=owner)

    return read


def _reservation_term(at: At, value: Any) -> SelectorTerm | None:
    start = at.mark()
    term = f.kube_item(at, value, _CR_TERM)
    if term is None:
        return None
    present = [name for name in _CR_TERM if term.get(name) is not None]
    if not any(term.get(name) is not None for name in ("tags", "id", "instanceMatchCriteria")):
        at.error("must set at least one of tags, id, instanceMatchCriteria")
    if "id" in present and len(present) > 1:
        at.error("'id' cannot be combined with other fields in a term")
    tags = _selector_tags(at / "tags", term.get("tags"))
    ident = f.string(
        at / "id",
        term.get("id"),
        pattern=re.compile(r"^cr-[0-9a-z]+$"),
        rule="is not a capacity reservation id (cr-...)",
    )
    owner = f.string(
        at / "ownerID", term.get("ownerID"), pattern=re.compile(r"^[0-9]{12}$"), rule="is not a 12-digit AWS account id"
    )
    criteria = f.string(at / "instanceMatchCriteria", term.get("instanceMatchCriteria"), enum=INSTANCE_MATCH_CRITERIA)
    if at.failed_since(start):
        return None
    return SelectorTerm(tags=tags, id=ident, owner_id=owner, instance_match_criteria=criteria)


def _placement_group(at: At, value: Any) -> PlacementGroupSelector | None:
    start = at.mark()
    selector = f.kube_obj(at, value, _PLACEMENT_GROUP)
    if selector is None:
        return None
    name = f.string(at / "name", selector.get("name"), non_empty=True)
    ident = f.string(
        at / "id",
        selector.get("id"),
        pattern=re.compile(r"^pg-[0-9a-z]+$"),
        rule="is not a placement group id (pg-...)",
    )
    if (selector.get("name") is None) == (selector.get("id") is None):
        at.error("must set exactly one of name, id")
    if at.failed_since(start):
        return None
    return PlacementGroupSelector(name=name, id=ident)


def _connection_tracking(at: At, value: Any) -> ConnectionTracking | None:
    start = at.mark()
    tracking = f.kube_obj(at, value, _CONNECTION_TRACKING)
    if tracking is None:
        return None
    if all(tracking.get(name) is None for name in _CONNECTION_TRACKING):
        at.error(f"must set at least one of {', '.join(_CONNECTION_TRACKING)}")
    parsed = ConnectionTracking(
        tcp_established_timeout=f.integer(
            at / "tcpEstablishedTimeout", tracking.get("tcpEstablishedTimeout"), minimum=60, maximum=432000
        ),
        udp_stream_timeout=f.integer(
            at / "udpStreamTimeout", tracking.get("udpStreamTimeout"), minimum=60, maximum=180
        ),
        udp_timeout=f.integer(at / "udpTimeout", tracking.get("udpTimeout"), minimum=30, maximum=60),
    )
    return None if at.failed_since(start) else parsed


def _nested_virtualization(at: At, value: Any) -> str | None:
    options = f.kube_obj(at, value, _CPU_OPTIONS)
    if options is None:
        return None
    return f.string(at / "nestedVirtualization", options.get("nestedVirtualization"), enum=ENABLED_DISABLED)


def _network_interface(at: At, value: Any) -> NetworkInterface | None:
    start = at.mark()
    entry = f.kube_item(at, value, _NETWORK_INTERFACE)
    if entry is None:
        return None
    card = f.integer(at / "networkCardIndex", f.required(at, entry, "networkCardIndex"), minimum=0, maximum=INT32_MAX)
    device = f.integer(at / "deviceIndex", f.required(at, entry, "deviceIndex"), minimum=0, maximum=INT32_MAX)
    kind = f.string(at / "interfaceType", f.required(at, entry, "interfaceType"), enum=INTERFACE_TYPES)
    if card is None or device is None or kind is None or at.failed_since(start):
        return None
    return NetworkInterface(network_card_index=card, device_index=device, interface_type=kind)


def _network_interfaces(at: At, value: Any) -> tuple[NetworkInterface, ...] | None:
    interfaces = f.items(at, value, _network_interface, max_items=MAX_NETWORK_INTERFACES)
    if not interfaces:
        return interfaces
    if not any(
        i.network_card_index == 0 and i.device_index == 0 and i.interface_type == "interface" for i in interfaces
    ):
        at.error("must include the primary interface (networkCardIndex 0, deviceIndex 0, interfaceType interface)")
    seen: set[tuple[int, int]] = set()
    efa_cards: set[int] = set()
    for index, interface in enumerate(interfaces):
        slot = (interface.network_card_index, interface.device_index)
        if slot in seen:
            (at / index).error(
                f"networkCardIndex {slot[0]} with deviceIndex {slot[1]} is already used by another interface"
            )
        seen.add(slot)
        if interface.interface_type == "efa-only":
            if interface.network_card_index in efa_cards:
                (at / index).error(
                    f"network card {interface.network_card_index} already has an efa-only interface "
                    "(at most one per card)"
                )
            efa_cards.add(interface.network_card_index)
    return interfaces


def _ami_term(at: At, value: Any) -> AMISelectorTerm | None:
    start = at.mark()
    term = f.kube_item(at, value, _AMI_TERM)
    if term is None:
        return None
    present = [name for name in _AMI_TERM if term.get(name) is not None]
    # owner only narrows a name or tags term: on its own it selects nothing.
    if not any(name in present for name in _AMI_SELECTING):
        at.error(f"must set at least one of {', '.join(_AMI_SELECTING)}")
    for alone in ("alias", "id", "ssmParameter"):
        if alone in present and len(present) > 1:
            at.error(f"{alone!r} cannot be combined with other fields in a term")
    alias: AMIAlias | None = None
    alias_text = f.string(at / "alias", term.get("alias"), non_empty=True, max_length=30)
    if alias_text is not None:
        try:
            alias = AMIAlias.parse(alias_text)
        except InvalidValue as error:
            (at / "alias").error(str(error))
    ident = f.string(
        at / "id", term.get("id"), pattern=re.compile(r"^ami-[0-9a-z]+$"), rule="is not an AMI id (ami-...)"
    )
    name = f.string(at / "name", term.get("name"), non_empty=True)
    owner = f.string(at / "owner", term.get("owner"), non_empty=True)
    ssm = f.string(at / "ssmParameter", term.get("ssmParameter"), non_empty=True)
    tags = _selector_tags(at / "tags", term.get("tags"))
    if at.failed_since(start):
        return None
    return AMISelectorTerm(alias=alias, id=ident, name=name, owner=owner, tags=tags, ssm_parameter=ssm)


def _volume_size(at: At, value: Any) -> int | None:
    if value is None:
        return None
    if not isinstance(value, str):
        f.wrong_type(at, str, value)
        return None
    milli = f.quantity(at, value)
    if milli is None:
        return None
    size = milli // 1000
    if size < 2**30 or size > MAX_VOLUME_BYTES:
        at.error(f"{show(value)} is outside the EBS volume size range 1Gi-64T")
        return None
    return size


def _ebs(at: At, value: Any) -> EBS | None:
    start = at.mark()
    ebs = f.kube_obj(at, value, _EBS)
    if ebs is None:
        return None
    volume_type = f.string(at / "volumeType", ebs.get("volumeType"), enum=VOLUME_TYPES)
    iops = f.integer(at / "iops", ebs.get("iops"), minimum=100, maximum=256000)
    throughput = f.integer(at / "throughput", ebs.get("throughput"), minimum=125, maximum=2000)
    rate = f.integer(at / "volumeInitializationRate", ebs.get("volumeInitializationRate"), minimum=100, maximum=300)
    if iops is not None and volume_type not in ("io1", "io2", "gp3"):
        (at / "iops").error("iops can only be set for volumeType io1, io2 or gp3")
    if throughput is not None and volume_type != "gp3":
        (at / "throughput").error("throughput can only be set for volumeType gp3")
    parsed = EBS(
        volume_size=_volume_size(at / "volumeSize", ebs.get("volumeSize")),
        volume_type=volume_type,
        iops=iops,
        throughput=throughput,
        encrypted=f.boolean(at / "encrypted", ebs.get("encrypted")),
        kms_key_id=f.string(at / "kmsKeyID", ebs.get("kmsKeyID"), non_empty=True),
        delete_on_termination=f.boolean(at / "deleteOnTermination", ebs.get("deleteOnTermination")),
        snapshot_id=f.string(at / "snapshotID", ebs.get("snapshotID"), non_empty=True),
        volume_initialization_rate=rate,
    )
    if ebs.get("volumeSize") is None and ebs.get("snapshotID") is None:
        at.error("must set volumeSize or snapshotID (the size of a volume made from a snapshot is the snapshot's)")
    if parsed.volume_initialization_rate is not None and parsed.snapshot_id is None:
        (at / "volumeInitializationRate").error("can only be set together with snapshotID")
    return None if at.failed_since(start) else parsed


def _block_device(at: At, value: Any) -> BlockDeviceMapping | None:
    start = at.mark()
    bdm = f.kube_item(at, value, _BDM)
    if bdm is None:
        return None
    device = f.string(
        at / "deviceName",
        f.required(at, bdm, "deviceName"),
        pattern=re.compile(r"^/dev/[a-z0-9/]+$|^xvd[a-z0-9]+$|^[a-z]+[0-9]*$"),
        rule="is not a device name such as /dev/xvda",
    )
    ebs = _ebs(at / "ebs", bdm.get("ebs"))
    root = f.boolean(at / "rootVolume", bdm.get("rootVolume"))
    if at.failed_since(start):
        return None
    return BlockDeviceMapping(device_name=device, ebs=ebs, root_volume=bool(root))


def _metadata_options(at: At, value: Any) -> MetadataOptions | None:
    options = f.kube_obj(at, value, _METADATA)
    if options is None:
        return MetadataOptions() if value is None else None
    default = MetadataOptions()
    endpoint = f.string(at / "httpEndpoint", options.get("httpEndpoint"), enum=ENABLED_DISABLED)
    ipv6 = f.string(at / "httpProtocolIPv6", options.get("httpProtocolIPv6"), enum=ENABLED_DISABLED)
    hops = f.integer(at / "httpPutResponseHopLimit", options.get("httpPutResponseHopLimit"), minimum=1, maximum=64)
    tokens = f.string(at / "httpTokens", options.get("httpTokens"), enum=HTTP_TOKENS)
    return MetadataOptions(
        http_endpoint=endpoint or default.http_endpoint,
        http_protocol_ipv6=ipv6 or default.http_protocol_ipv6,
        http_put_response_hop_limit=hops if hops is not None else default.http_put_response_hop_limit,
        http_tokens=tokens or default.http_tokens,
    )


def parse_nodeclass(
    at: At, name: str, metadata: Mapping[str, Any], spec_value: Any, api_version: str
) -> EC2NodeClass | None:
    """Validate an EC2NodeClass's spec; None when anything is wrong.

    `at` points at the document root; every problem is reported through it.
    """
    at_spec = at / "spec"
    spec = f.kube_obj(at_spec, spec_value, SPEC_FIELDS, hints=_SPEC_HINTS)
    if spec is None:
        if spec_value is None:
            at_spec.error("is required")
        return None
    subnets = f.items(
        at_spec / "subnetSelectorTerms",
        f.required(at_spec, spec, "subnetSelectorTerms"),
        _selector_term(_SUBNET_TERM, ("id",), "subnet"),
        min_items=1,
        max_items=MAX_TERMS,
    )
    groups = f.items(
        at_spec / "securityGroupSelectorTerms",
        f.required(at_spec, spec, "securityGroupSelectorTerms"),
        _selector_term(_SG_TERM, ("id", "name"), "sg"),
        min_items=1,
        max_items=MAX_TERMS,
    )
    reservations = f.items(
        at_spec / "capacityReservationSelectorTerms",
        spec.get("capacityReservationSelectorTerms"),
        _reservation_term,
        max_items=MAX_TERMS,
    )
    amis = f.items(
        at_spec / "amiSelectorTerms",
        f.required(at_spec, spec, "amiSelectorTerms"),
        _ami_term,
        min_items=1,
        max_items=MAX_TERMS,
    )
    ami_family = f.string(at_spec / "amiFamily", spec.get("amiFamily"), enum=AMI_FAMILIES)
    raw_value = spec.get("amiSelectorTerms")
    raw_terms: list[Any] = raw_value if isinstance(raw_value, list) else []
    has_alias = any(isinstance(t, Mapping) and t.get("alias") is not None for t in raw_terms)
    if has_alias and len(raw_terms) > 1:
        (at_spec / "amiSelectorTerms").error("a term with an alias must be the only amiSelectorTerms entry")
    alias = next((t.alias for t in amis or () if t.alias is not None), None)
    if not has_alias and spec.get("amiSelectorTerms") is not None and spec.get("amiFamily") is None:
        (at_spec / "amiFamily").error("is required when amiSelectorTerms has no alias")
    # With an alias, amiFamily may restate the alias's family, or be Custom: the AMI comes from
    # the alias and the user data is the user's own, unchanged (Karpenter's custom-family-with-alias).
    if alias is not None and ami_family is not None and ami_family not in (alias.ami_family, "Custom"):
        (at_spec / "amiFamily").error(
            f"{show(ami_family)} does not match the alias: with alias {show(str(alias))}, amiFamily must be "
            f'{show(alias.ami_family)} or "Custom" if set'
        )
    if alias is not None and alias.ami_family.startswith("Windows"):
        (at_spec / "amiSelectorTerms" / 0 / "alias").warn(WINDOWS_NOT_LAUNCHED)
    elif alias is None and ami_family is not None and ami_family.startswith("Windows"):
        (at_spec / "amiFamily").warn(WINDOWS_NOT_LAUNCHED)
    role = f.string(at_spec / "role", spec.get("role"), non_empty=True, max_length=64)
    profile = f.string(at_spec / "instanceProfile", spec.get("instanceProfile"), non_empty=True, max_length=128)
    if (spec.get("role") is None) == (spec.get("instanceProfile") is None):
        at_spec.error("must set exactly one of role, instanceProfile")
    devices = f.items(
        at_spec / "blockDeviceMappings", spec.get("blockDeviceMappings"), _block_device, max_items=MAX_BLOCK_DEVICES
    )
    if devices is not None and sum(d.root_volume for d in devices) > 1:
        (at_spec / "blockDeviceMappings").error("at most one mapping may set rootVolume")
    nodeclass = EC2NodeClass(
        name=name,
        subnet_selector_terms=subnets or (),
        security_group_selector_terms=groups or (),
        ami_selector_terms=amis or (),
        ami_family=ami_family,
        role=role,
        instance_profile=profile,
        user_data=f.string(at_spec / "userData", spec.get("userData")),
        block_device_mappings=devices or (),
        metadata_options=_metadata_options(at_spec / "metadataOptions", spec.get("metadataOptions"))
        or MetadataOptions(),
        tags=f.string_map(at_spec / "tags", spec.get("tags"), key_rule=_tag_key_rule) or {},
        associate_public_ip_address=f.boolean(
            at_spec / "associatePublicIPAddress", spec.get("associatePublicIPAddress")
        ),
        detailed_monitoring=bool(f.boolean(at_spec / "detailedMonitoring", spec.get("detailedMonitoring"))),
        kubelet=parse_kubelet(at_spec / "kubelet", spec.get("kubelet")),
        instance_store_policy=f.string(
            at_spec / "instanceStorePolicy", spec.get("instanceStorePolicy"), enum=INSTANCE_STORE_POLICIES
        ),
        capacity_reservation_selector_terms=reservations or (),
        context=f.string(at_spec / "context", spec.get("context"), non_empty=True),
        placement_group_selector=_placement_group(
            at_spec / "placementGroupSelector", spec.get("placementGroupSelector")
        ),
        connection_tracking=_connection_tracking(at_spec / "connectionTracking", spec.get("connectionTracking")),
        network_interfaces=_network_interfaces(at_spec / "networkInterfaces", spec.get("networkInterfaces")) or (),
        nested_virtualization=_nested_virtualization(at_spec / "cpuOptions", spec.get("cpuOptions")),
        ip_prefix_count=f.integer(at_spec / "ipPrefixCount", spec.get("ipPrefixCount"), minimum=0, maximum=INT32_MAX),
        api_version=api_version,
        resource_version=str(metadata.get("resourceVersion") or ""),
    )
    for field_name, message in NOT_ACTED_ON.items():
        if spec.get(field_name) not in (None, [], {}):
            (at_spec / field_name).warn(message)
    return None if at.failed_since() else nodeclass
