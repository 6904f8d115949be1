"""An EC2NodeClass model printed back as a manifest (`render_nodeclass`). Pure.

The inverse of `nodeclass.parse_nodeclass`: parsing the rendered manifest gives the same model
(tested in tests/config/test_nodeclass_documents.py), with defaults written out and durations and
sizes in Kubernetes' notation.
"""

from typing import Any

from nodewright.config.kubelet import render_kubelet
from nodewright.model.nodeclass import (
    EBS,
    AMISelectorTerm,
    EC2NodeClass,
    SelectorTerm,
)


def _render_term(term: SelectorTerm, owner_field: str = "ownerID") -> dict[str, Any]:
    out: dict[str, Any] = {}
    if term.tags:
        out["tags"] = dict(term.tags)
    if term.id is not None:
        out["id"] = term.id
    if term.name is not None:
        out["name"] = term.name
    if term.owner_id is not None:
        out[owner_field] = term.owner_id
    if term.instance_match_criteria is not None:
        out["instanceMatchCriteria"] = term.instance_match_criteria
    return out


def _render_ami_term(term: AMISelectorTerm) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if term.alias is not None:
        out["alias"] = str(term.alias)
    for key, value in (
        ("id", term.id),
        ("name", term.name),
        ("owner", term.owner),
        ("ssmParameter", term.ssm_parameter),
    ):
        if value is not None:
            out[key] = value
    if term.tags:
        out["tags"] = dict(term.tags)
    return out


def _render_size(size: int) -> str:
    # Exact forms only, so the printed size parses back to the same number of bytes.
    for suffix, unit in (("Ti", 2**40), ("T", 10**12), ("Gi", 2**30), ("G", 10**9)):
        if size % unit == 0:
            return f"{size // unit}{suffix}"
    return str(size)


def _render_ebs(ebs: EBS) -> dict[str, Any]:
    pairs: tuple[tuple[str, Any], ...] = (
        ("volumeSize", _render_size(ebs.volume_size) if ebs.volume_size is not None else None),
        ("volumeType", ebs.volume_type),
        ("iops", ebs.iops),
        ("throughput", ebs.throughput),
        ("encrypted", ebs.encrypted),
        ("kmsKeyID", ebs.kms_key_id),
        ("deleteOnTermination", ebs.delete_on_termination),
        ("snapshotID", ebs.snapshot_id),
        ("volumeInitializationRate", ebs.volume_initialization_rate),
    )
    return {key: value for key, value in pairs if value is not None}


def _render_network(nodeclass: EC2NodeClass) -> dict[str, Any]:
    out: dict[str, Any] = {}
    group = nodeclass.placement_group_selector
    if group is not None:
        out["placementGroupSelector"] = {"name": group.name} if group.name is not None else {"id": group.id}
    tracking = nodeclass.connection_tracking
    if tracking is not None:
        pairs = (
            ("tcpEstablishedTimeout", tracking.tcp_established_timeout),
            ("udpStreamTimeout", tracking.udp_stream_timeout),
            ("udpTimeout", tracking.udp_timeout),
        )
        out["connectionTracking"] = {key: value for key, value in pairs if value is not None}
    if nodeclass.network_interfaces:
        out["networkInterfaces"] = [
            {"networkCardIndex": i.network_card_index, "deviceIndex": i.device_index, "interfaceType": i.interface_type}
            for i in nodeclass.network_interfaces
        ]
    if nodeclass.nested_virtualization is not None:
        out["cpuOptions"] = {"nestedVirtualization": nodeclass.nested_virtualization}
    if nodeclass.ip_prefix_count is not None:
        out["ipPrefixCount"] = nodeclass.ip_prefix_count
    return out


def render_nodeclass(nodeclass: EC2NodeClass) -> dict[str, Any]:
    """The manifest of an EC2NodeClass model; parsing it gives an equal model."""
    spec: dict[str, Any] = {
        "subnetSelectorTerms": [_render_term(t) for t in nodeclass.subnet_selector_terms],
        "securityGroupSelectorTerms": [_render_term(t) for t in nodeclass.security_group_selector_terms],
        "amiSelectorTerms": [_render_ami_term(t) for t in nodeclass.ami_selector_terms],
    }
    if nodeclass.capacity_reservation_selector_terms:
        spec["capacityReservationSelectorTerms"] = [
            _render_term(t) for t in nodeclass.capacity_reservation_selector_terms
        ]
    optional: tuple[tuple[str, Any], ...] = (
        ("amiFamily", nodeclass.ami_family),
        ("role", nodeclass.role),
        ("instanceProfile", nodeclass.instance_profile),
        ("userData", nodeclass.user_data),
        ("instanceStorePolicy", nodeclass.instance_store_policy),
        ("associatePublicIPAddress", nodeclass.associate_public_ip_address),
        ("context", nodeclass.context),
    )
    spec.update({key: value for key, value in optional if value is not None})
    if nodeclass.block_device_mappings:
        spec["blockDeviceMappings"] = [
            {
                **({"deviceName": d.device_name} if d.device_name is not None else {}),
                **({"ebs": _render_ebs(d.ebs)} if d.ebs is not None else {}),
                **({"rootVolume": True} if d.root_volume else {}),
            }
            for d in nodeclass.block_device_mappings
        ]
    options = nodeclass.metadata_options
    spec["metadataOptions"] = {
        "httpEndpoint": options.http_endpoint,
        "httpProtocolIPv6": options.http_protocol_ipv6,
        "httpPutResponseHopLimit": options.http_put_response_hop_limit,
        "httpTokens": options.http_tokens,
    }
    if nodeclass.tags:
        spec["tags"] = dict(nodeclass.tags)
    if nodeclass.detailed_monitoring:
        spec["detailedMonitoring"] = True
    if nodeclass.kubelet is not None:
        spec["kubelet"] = render_kubelet(nodeclass.kubelet)
    spec.update(_render_network(nodeclass))
    return {
        "apiVersion": nodeclass.api_version,
        "kind": "EC2NodeClass",
        "metadata": {"name": nodeclass.name},
        "spec": spec,
    }
