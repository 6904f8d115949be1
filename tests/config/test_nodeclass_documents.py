"""EC2NodeClass documents: every v1 field reads into the model; Karpenter's CRD rules are enforced
and each violation is reported with its path.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from nodewright.config.documents import parse_manifest
from nodewright.config.files import read_paths
from nodewright.config.nodeclass_render import render_nodeclass
from nodewright.model.nodeclass import (
    EBS,
    AMIAlias,
    ConnectionTracking,
    EC2NodeClass,
    MetadataOptions,
    NetworkInterface,
    PlacementGroupSelector,
)
from nodewright.model.resources import Resources

FIXTURES = Path(__file__).parent / "fixtures"
EXAMPLES = Path(__file__).parents[2] / "examples" / "nodepools"

BASE: dict[str, Any] = {
    "apiVersion": "karpenter.k8s.aws/v1",
    "kind": "EC2NodeClass",
    "metadata": {"name": "default"},
    "spec": {
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
        "role": "KarpenterNodeRole-test",
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "test"}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "test"}}],
    },
}


def nodeclass_with(**spec: Any) -> dict[str, Any]:
    """BASE with spec fields replaced (a value of `...` removes the field)."""
    body = copy.deepcopy(BASE)
    for key, value in spec.items():
        if value is ...:
            del body["spec"][key]
        else:
            body["spec"][key] = value
    return body


def model_of(body: dict[str, Any]) -> EC2NodeClass:
    (document,) = parse_manifest(body, source="t.yaml").require()
    assert isinstance(document.model, EC2NodeClass)
    return document.model


def test_the_base_nodeclass_gets_karpenters_defaults() -> None:
    nodeclass = model_of(BASE)

    assert nodeclass.alias == AMIAlias("al2023", "latest")
    assert nodeclass.effective_ami_family == "AL2023"
    assert nodeclass.metadata_options == MetadataOptions(
        http_endpoint="enabled", http_protocol_ipv6="disabled", http_put_response_hop_limit=1, http_tokens="required"
    )
    assert nodeclass.detailed_monitoring is False
    assert nodeclass.kubelet is None


def test_every_field_of_a_full_nodeclass_is_read() -> None:
    loaded = read_paths([FIXTURES / "valid" / "on-demand.yaml"])
    nodeclass = loaded.of_kind("EC2NodeClass")[0].model
    assert isinstance(nodeclass, EC2NodeClass)

    assert nodeclass.api_version == "nodewright.io/v1"
    assert nodeclass.ami_family == "AL2023"
    assert nodeclass.ami_selector_terms[0].name == "my-golden-al2023-*"
    assert nodeclass.ami_selector_terms[0].owner == "123456789012"
    assert nodeclass.ami_selector_terms[1].id == "ami-0123456789abcdef0"
    assert nodeclass.instance_profile == "KarpenterNodeInstanceProfile"
    assert nodeclass.role is None
    assert nodeclass.subnet_selector_terms[0].id == "subnet-0123456789abcdef0"
    assert nodeclass.subnet_selector_terms[1].tags == {"Name": "private-*"}
    assert nodeclass.security_group_selector_terms[0].name == "eks-cluster-sg-my-cluster"
    assert nodeclass.associate_public_ip_address is False
    assert nodeclass.detailed_monitoring is True
    assert nodeclass.user_data == "[settings.kubernetes]\nmax-pods = 110\n"
    assert nodeclass.metadata_options.http_put_response_hop_limit == 2
    assert nodeclass.metadata_options.http_tokens == "required"
    root = nodeclass.root_volume
    assert root is not None
    assert root.device_name == "/dev/xvda"
    assert root.ebs == EBS(
        volume_size=100 * 2**30,
        volume_type="gp3",
        iops=3000,
        throughput=125,
        encrypted=True,
        kms_key_id="arn:aws:kms:us-east-1:123456789012:key/abc",
    )
    data = nodeclass.block_device_mappings[1].ebs
    assert data is not None
    assert data.volume_size == 10**12
    assert data.volume_size_gib == 932
    assert data.snapshot_id == "snap-0123"
    kubelet = nodeclass.kubelet
    assert kubelet is not None
    assert kubelet.max_pods == 110
    assert kubelet.pods_per_core == 4
    assert kubelet.cluster_dns == ("10.100.0.10",)
    assert kubelet.cpu_cfs_quota is True
    assert kubelet.kube_reserved == Resources.of(cpu="200m", memory="500Mi", ephemeral_storage="1Gi")
    assert kubelet.system_reserved == Resources.of(cpu="100m", memory="200Mi")
    assert kubelet.eviction_hard == {"memory.available": "5%", "nodefs.available": "10%"}
    assert kubelet.eviction_soft == {"memory.available": "500Mi"}
    assert kubelet.eviction_soft_grace_period == {"memory.available": 60.0}
    assert kubelet.eviction_max_pod_grace_period == 60
    assert (kubelet.image_gc_high_threshold_percent, kubelet.image_gc_low_threshold_percent) == (85, 80)


@pytest.mark.parametrize(
    ("alias", "family"),
    [
        pytest.param("al2023@latest", "AL2023", id="al2023-latest"),
        pytest.param("al2@latest", "AL2", id="al2-latest"),
        pytest.param("bottlerocket@v1.20.0", "Bottlerocket", id="bottlerocket-pinned"),
        pytest.param("al2023@v20240807", "AL2023", id="al2023-pinned"),
        pytest.param("windows2022@latest", "Windows2022", id="windows-latest"),
        pytest.param("windows2025@latest", "Windows2025", id="windows2025-latest"),
    ],
)
def test_an_alias_implies_its_ami_family(alias: str, family: str) -> None:
    nodeclass = model_of(nodeclass_with(amiSelectorTerms=[{"alias": alias}]))

    assert nodeclass.effective_ami_family == family
    assert str(nodeclass.alias) == alias


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(
            {"role": ...},
            "EC2NodeClass/default: spec: must set exactly one of role, instanceProfile",
            id="neither-role-nor-profile",
        ),
        pytest.param(
            {"instanceProfile": "profile"},
            "EC2NodeClass/default: spec: must set exactly one of role, instanceProfile",
            id="both-role-and-profile",
        ),
        pytest.param(
            {"amiSelectorTerms": [{"alias": "ubuntu@latest"}]},
            "EC2NodeClass/default: spec.amiSelectorTerms[0].alias: alias family 'ubuntu' is not one of "
            "al2, al2023, bottlerocket, windows2019, windows2022, windows2025",
            id="unknown-alias-family",
        ),
        pytest.param(
            {"amiSelectorTerms": [{"alias": "al2023"}]},
            "EC2NodeClass/default: spec.amiSelectorTerms[0].alias: 'al2023' is not of the form family@version "
            "(e.g. al2023@latest)",
            id="alias-without-version",
        ),
        pytest.param(
            {"amiSelectorTerms": [{"alias": "windows2022@v1"}]},
            "EC2NodeClass/default: spec.amiSelectorTerms[0].alias: alias 'windows2022@v1': Windows families only "
            "support version 'latest'",
            id="pinned-windows-alias",
        ),
        pytest.param(
            {"amiSelectorTerms": [{"alias": "al2023@latest"}, {"id": "ami-123"}]},
            "EC2NodeClass/default: spec.amiSelectorTerms: a term with an alias must be the only amiSelectorTerms entry",
            id="alias-with-other-terms",
        ),
        pytest.param(
            {"amiSelectorTerms": [{"alias": "al2023@latest", "tags": {"a": "b"}}]},
            "EC2NodeClass/default: spec.amiSelectorTerms[0]: 'alias' cannot be combined with other fields in a term",
            id="alias-with-tags",
        ),
        pytest.param(
            {"amiSelectorTerms": [{"name": "my-ami-*"}]},
            "EC2NodeClass/default: spec.amiFamily: is required when amiSelectorTerms has no alias",
            id="no-alias-no-family",
        ),
        pytest.param(
            {"amiFamily": "Bottlerocket"},
            'EC2NodeClass/default: spec.amiFamily: "Bottlerocket" does not match the alias: with alias '
            '"al2023@latest", amiFamily must be "AL2023" or "Custom" if set',
            id="family-contradicts-alias",
        ),
        pytest.param(
            {"amiSelectorTerms": [{}], "amiFamily": "AL2023"},
            "EC2NodeClass/default: spec.amiSelectorTerms[0]: must set at least one of alias, id, name, tags, "
            "ssmParameter",
            id="empty-ami-term",
        ),
        pytest.param(
            {"subnetSelectorTerms": []},
            "EC2NodeClass/default: spec.subnetSelectorTerms: must have at least 1 item",
            id="no-subnet-terms",
        ),
        pytest.param(
            {"subnetSelectorTerms": [{"id": "subnet-1", "tags": {"a": "b"}}]},
            "EC2NodeClass/default: spec.subnetSelectorTerms[0]: 'id' cannot be combined with other fields in a term",
            id="subnet-id-with-tags",
        ),
        pytest.param(
            {"securityGroupSelectorTerms": [{"tags": {"Name": ""}}]},
            "EC2NodeClass/default: spec.securityGroupSelectorTerms[0].tags.Name: empty tag values are not supported "
            "(use * to match any value)",
            id="empty-tag-value",
        ),
        pytest.param(
            {"securityGroupSelectorTerms": ...},
            "EC2NodeClass/default: spec.securityGroupSelectorTerms: is required",
            id="missing-security-groups",
        ),
        pytest.param(
            {"tags": {"kubernetes.io/cluster/test": "owned"}},
            'EC2NodeClass/default: spec.tags["kubernetes.io/cluster/test"]: tag "kubernetes.io/cluster/test" is '
            "restricted: Nodewright sets it on the instances it launches",
            id="restricted-tag",
        ),
        pytest.param(
            {"metadataOptions": {"httpTokens": "sometimes"}},
            'EC2NodeClass/default: spec.metadataOptions.httpTokens: "sometimes" is not one of required, optional',
            id="bad-http-tokens",
        ),
        pytest.param(
            {"metadataOptions": {"httpPutResponseHopLimit": 65}},
            "EC2NodeClass/default: spec.metadataOptions.httpPutResponseHopLimit: must be at most 64, got 65",
            id="hop-limit-too-high",
        ),
        pytest.param(
            {"blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": 100}}]},
            "EC2NodeClass/default: spec.blockDeviceMappings[0].ebs.volumeSize: must be a string, got integer 100",
            id="volume-size-not-a-quantity-string",
        ),
        pytest.param(
            {"blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "100Ti"}}]},
            'EC2NodeClass/default: spec.blockDeviceMappings[0].ebs.volumeSize: "100Ti" is outside the EBS volume size '
            "range 1Gi-64T",
            id="volume-too-large",
        ),
        pytest.param(
            {
                "blockDeviceMappings": [
                    {"deviceName": "/dev/xvda", "ebs": {"volumeSize": "20Gi", "volumeType": "gp2", "throughput": 200}}
                ]
            },
            "EC2NodeClass/default: spec.blockDeviceMappings[0].ebs.throughput: throughput can only be set for "
            "volumeType gp3",
            id="throughput-on-gp2",
        ),
        pytest.param(
            {"blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "20Gi", "volumeType": "gp4"}}]},
            'EC2NodeClass/default: spec.blockDeviceMappings[0].ebs.volumeType: "gp4" is not one of '
            "standard, io1, io2, gp2, sc1, st1, gp3",
            id="unknown-volume-type",
        ),
        pytest.param(
            {
                "blockDeviceMappings": [
                    {"deviceName": "/dev/xvda", "rootVolume": True},
                    {"deviceName": "/dev/xvdb", "rootVolume": True},
                ]
            },
            "EC2NodeClass/default: spec.blockDeviceMappings: at most one mapping may set rootVolume",
            id="two-root-volumes",
        ),
        pytest.param(
            {"kubelet": {"imageGCHighThresholdPercent": 50, "imageGCLowThresholdPercent": 60}},
            "EC2NodeClass/default: spec.kubelet.imageGCHighThresholdPercent: must be greater than "
            "imageGCLowThresholdPercent (60), got 50",
            id="image-gc-thresholds-inverted",
        ),
        pytest.param(
            {"kubelet": {"evictionSoft": {"memory.available": "1Gi"}}},
            'EC2NodeClass/default: spec.kubelet.evictionSoft["memory.available"]: needs a matching '
            "evictionSoftGracePeriod entry",
            id="soft-eviction-without-grace",
        ),
        pytest.param(
            {"kubelet": {"evictionHard": {"memory.free": "1Gi"}}},
            'EC2NodeClass/default: spec.kubelet.evictionHard["memory.free"]: "memory.free" is not one of '
            "memory.available, nodefs.available, nodefs.inodesFree, imagefs.available, imagefs.inodesFree, "
            "pid.available",
            id="unknown-eviction-signal",
        ),
        pytest.param(
            {"kubelet": {"kubeReserved": {"gpu": "1"}}},
            'EC2NodeClass/default: spec.kubelet.kubeReserved.gpu: "gpu" is not one of cpu, memory, '
            "ephemeral-storage, pid",
            id="unknown-reserved-resource",
        ),
        pytest.param(
            {"kubelet": {"clusterDNS": ["dns.local"]}},
            'EC2NodeClass/default: spec.kubelet.clusterDNS[0]: "dns.local" is not an IP address',
            id="cluster-dns-not-an-ip",
        ),
        pytest.param(
            {"kubelet": {"maxPods": -1}},
            "EC2NodeClass/default: spec.kubelet.maxPods: must be at least 0, got -1",
            id="negative-max-pods",
        ),
        pytest.param(
            {"detailedMonitoring": "yes please"},
            'EC2NodeClass/default: spec.detailedMonitoring: must be a boolean, got string "yes please"',
            id="non-boolean",
        ),
    ],
)
def test_an_invalid_nodeclass_is_reported_with_its_path_and_rule(spec: dict[str, Any], expected: str) -> None:
    loaded = parse_manifest(nodeclass_with(**spec), source="classes.yaml")

    assert [p.detail for p in loaded.problems] == [expected]


@pytest.mark.parametrize(
    "path",
    sorted([*FIXTURES.glob("valid/*.yaml"), *EXAMPLES.glob("*.yaml")]),
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_a_rendered_nodeclass_model_parses_back_to_an_equal_model(path: Path) -> None:
    for document in read_paths([path]).of_kind("EC2NodeClass"):
        assert isinstance(document.model, EC2NodeClass)

        assert model_of(render_nodeclass(document.model)) == document.model


def warnings_of(body: dict[str, Any]) -> list[str]:
    return [w.detail for w in parse_manifest(body, source="t.yaml").warnings]


def test_custom_family_with_an_alias_takes_the_ami_from_the_alias_and_keeps_its_own_user_data() -> None:
    body = nodeclass_with(
        amiFamily="Custom", amiSelectorTerms=[{"alias": "bottlerocket@latest"}], userData="#!/bin/bash\necho mine\n"
    )

    nodeclass = model_of(body)

    assert nodeclass.alias == AMIAlias("bottlerocket", "latest")
    assert nodeclass.effective_ami_family == "Custom"  # user data passed through, no default devices
    assert nodeclass.user_data == "#!/bin/bash\necho mine\n"
    assert warnings_of(body) == []


@pytest.mark.parametrize(
    ("spec", "path"),
    [
        pytest.param(
            {"amiSelectorTerms": [{"alias": "windows2025@latest"}]}, "spec.amiSelectorTerms[0].alias", id="alias"
        ),
        pytest.param(
            {"amiSelectorTerms": [{"alias": "windows2019@latest"}], "amiFamily": "Windows2019"},
            "spec.amiSelectorTerms[0].alias",
            id="alias-and-family",
        ),
        pytest.param(
            {"amiSelectorTerms": [{"id": "ami-0123456789abcdef0"}], "amiFamily": "Windows2025"},
            "spec.amiFamily",
            id="family",
        ),
    ],
)
def test_a_windows_nodeclass_is_accepted_with_a_warning_that_windows_nodes_are_not_launched(
    spec: dict[str, Any], path: str
) -> None:
    body = nodeclass_with(**spec)

    assert model_of(body).effective_ami_family.startswith("Windows")
    assert warnings_of(body) == [
        f"EC2NodeClass/default: {path}: Nodewright does not launch Windows nodes yet: NodePools using this "
        "EC2NodeClass launch nothing"
    ]


def test_network_placement_and_reservation_fields_are_kept_without_a_warning() -> None:
    body = nodeclass_with(
        capacityReservationSelectorTerms=[
            {"instanceMatchCriteria": "open"},
            {"tags": {"team": "ml"}, "ownerID": "123456789012", "instanceMatchCriteria": "targeted"},
            {"id": "cr-0123456789abcdef0"},
        ],
        placementGroupSelector={"name": "training"},
        connectionTracking={"tcpEstablishedTimeout": 3600, "udpStreamTimeout": 120, "udpTimeout": 30},
        networkInterfaces=[
            {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
            {"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "efa-only"},
        ],
        cpuOptions={"nestedVirtualization": "enabled"},
        ipPrefixCount=2,
    )

    nodeclass = model_of(body)

    terms = nodeclass.capacity_reservation_selector_terms
    assert [t.instance_match_criteria for t in terms] == ["open", "targeted", None]
    assert terms[1].owner_id == "123456789012"
    assert nodeclass.placement_group_selector == PlacementGroupSelector(name="training")
    assert nodeclass.connection_tracking == ConnectionTracking(3600, 120, 30)
    assert nodeclass.network_interfaces == (
        NetworkInterface(0, 0, "interface"),
        NetworkInterface(1, 0, "efa-only"),
    )
    assert (nodeclass.nested_virtualization, nodeclass.ip_prefix_count) == ("enabled", 2)
    assert warnings_of(body) == []  # reservations are selected and launched into
    assert model_of(render_nodeclass(nodeclass)) == nodeclass


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(
            {"capacityReservationSelectorTerms": [{"instanceMatchCriteria": "any"}]},
            'spec.capacityReservationSelectorTerms[0].instanceMatchCriteria: "any" is not one of open, targeted',
            id="match-criteria-enum",
        ),
        pytest.param(
            {"capacityReservationSelectorTerms": [{"id": "cr-0abc", "instanceMatchCriteria": "open"}]},
            "spec.capacityReservationSelectorTerms[0]: 'id' cannot be combined with other fields in a term",
            id="reservation-id-with-criteria",
        ),
        pytest.param(
            {"capacityReservationSelectorTerms": [{"ownerID": "123456789012"}]},
            "spec.capacityReservationSelectorTerms[0]: must set at least one of tags, id, instanceMatchCriteria",
            id="reservation-owner-alone",
        ),
        pytest.param(
            {"capacityReservationSelectorTerms": [{"tags": {"a": "b"}, "ownerID": "1234"}]},
            'spec.capacityReservationSelectorTerms[0].ownerID: "1234" is not a 12-digit AWS account id',
            id="reservation-owner-not-an-account",
        ),
        pytest.param(
            {"placementGroupSelector": {"name": "a", "id": "pg-0abc"}},
            "spec.placementGroupSelector: must set exactly one of name, id",
            id="placement-group-name-and-id",
        ),
        pytest.param(
            {"placementGroupSelector": {}},
            "spec.placementGroupSelector: must set exactly one of name, id",
            id="placement-group-empty",
        ),
        pytest.param(
            {"placementGroupSelector": {"id": "training"}},
            'spec.placementGroupSelector.id: "training" is not a placement group id (pg-...)',
            id="placement-group-bad-id",
        ),
        pytest.param(
            {"connectionTracking": {}},
            "spec.connectionTracking: must set at least one of tcpEstablishedTimeout, udpStreamTimeout, udpTimeout",
            id="connection-tracking-empty",
        ),
        pytest.param(
            {"connectionTracking": {"udpTimeout": 61}},
            "spec.connectionTracking.udpTimeout: must be at most 60, got 61",
            id="udp-timeout-above-60",
        ),
        pytest.param(
            {"connectionTracking": {"tcpEstablishedTimeout": 59}},
            "spec.connectionTracking.tcpEstablishedTimeout: must be at least 60, got 59",
            id="tcp-timeout-below-60",
        ),
        pytest.param(
            {"networkInterfaces": [{"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "interface"}]},
            "spec.networkInterfaces: must include the primary interface (networkCardIndex 0, deviceIndex 0, "
            "interfaceType interface)",
            id="no-primary-interface",
        ),
        pytest.param(
            {
                "networkInterfaces": [
                    {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
                    {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "efa-only"},
                ]
            },
            "spec.networkInterfaces[1]: networkCardIndex 0 with deviceIndex 0 is already used by another interface",
            id="duplicate-slot",
        ),
        pytest.param(
            {
                "networkInterfaces": [
                    {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
                    {"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "efa-only"},
                    {"networkCardIndex": 1, "deviceIndex": 1, "interfaceType": "efa-only"},
                ]
            },
            "spec.networkInterfaces[2]: network card 1 already has an efa-only interface (at most one per card)",
            id="two-efa-on-one-card",
        ),
        pytest.param(
            {"networkInterfaces": [{"networkCardIndex": 0, "deviceIndex": 0}]},
            "spec.networkInterfaces[0].interfaceType: is required",
            id="interface-type-required",
        ),
        pytest.param(
            {"networkInterfaces": [{"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "efa"}]},
            'spec.networkInterfaces[0].interfaceType: "efa" is not one of interface, efa-only',
            id="interface-type-enum",
        ),
    ],
)
def test_the_fields_nodewright_ignores_are_still_validated_as_karpenters_crd_does(
    spec: dict[str, Any], expected: str
) -> None:
    loaded = parse_manifest(nodeclass_with(**spec), source="classes.yaml")

    assert [p.detail for p in loaded.problems] == [f"EC2NodeClass/default: {expected}"]
    assert loaded.documents == ()


def test_a_misspelt_kubelet_field_is_a_warning_that_names_the_field_it_resembles() -> None:
    body = nodeclass_with(kubelet={"maxPod": 110})

    (document,) = parse_manifest(body, source="t.yaml").require()

    assert warnings_of(body) == [
        'EC2NodeClass/default: spec.kubelet.maxPod: unknown field, ignored (did you mean "maxPods"?)'
    ]
    assert document.to_manifest()["spec"]["kubelet"] == {}  # dropped, as the API server drops it
