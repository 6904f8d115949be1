"""The features Karpenter's examples/v1 exercise, on this project's own documents (fixtures/karpenter-v1/features.yaml).

test_karpenter_examples.py runs Karpenter's files when a checkout is at hand; this test needs
none. Each document is read through `parse_yaml` and must be valid, draw no warning but the
Windows one, and mean what Karpenter means by it.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from nodewright.config import Loaded, parse_yaml
from nodewright.model.nodeclass import AMIAlias, EC2NodeClass
from nodewright.model.nodepool import NodePool
from nodewright.model.resources import Resources

FEATURES = Path(__file__).parent / "fixtures" / "karpenter-v1" / "features.yaml"


@cache
def loaded() -> Loaded:
    return parse_yaml(FEATURES.read_text(), "features.yaml")


def pool(name: str) -> NodePool:
    (document,) = (d for d in loaded().documents if d.key == f"NodePool/{name}")
    assert isinstance(document.model, NodePool)
    return document.model


def nodeclass(name: str) -> EC2NodeClass:
    (document,) = (d for d in loaded().documents if d.key == f"EC2NodeClass/{name}")
    assert isinstance(document.model, EC2NodeClass)
    return document.model


def test_every_feature_document_is_valid_and_only_windows_warns() -> None:
    assert [str(p) for p in loaded().problems] == []
    assert [(w.document, w.path) for w in loaded().warnings] == [
        ("EC2NodeClass/windows2025-alias", "spec.amiSelectorTerms[0].alias")
    ]
    assert len(loaded().documents) == 16


def test_a_cpu_limit_and_a_generation_floor() -> None:
    limited = pool("cpu-limit")

    assert limited.limits == Resources.of(cpu=100)
    assert limited.requirements["karpenter.k8s.aws/instance-generation"].has("3")
    assert not limited.requirements["karpenter.k8s.aws/instance-generation"].has("2")


def test_large_instances_by_cpu_and_memory_floors() -> None:
    requirements = pool("large-types").requirements

    assert requirements["karpenter.k8s.aws/instance-cpu"].has("32")
    assert not requirements["karpenter.k8s.aws/instance-cpu"].has("31")
    assert requirements["karpenter.k8s.aws/instance-memory"].has("262144")


def test_a_node_lifetime_with_grace_and_empty_only_consolidation() -> None:
    lifetime = pool("lifetime")

    assert (lifetime.expire_after, lifetime.termination_grace_period) == (168 * 3600, 24 * 3600)
    assert lifetime.disruption.consolidation_policy == "WhenEmpty"
    assert lifetime.disruption.consolidate_after == 60


def test_min_values_on_several_keys_and_a_pinned_alias() -> None:
    requirements = pool("min-values").requirements

    assert requirements["karpenter.k8s.aws/instance-family"].min_values == 5
    assert requirements["node.kubernetes.io/instance-type"].min_values == 10
    assert nodeclass("pinned-alias").alias == AMIAlias("al2023", "v20250101")


def test_one_architecture_per_pool() -> None:
    arch = pool("arm64-only").requirements["kubernetes.io/arch"]

    assert (arch.has("arm64"), arch.has("amd64")) == (True, False)


def test_custom_amis_by_id_keep_their_family_and_user_data() -> None:
    by_id = nodeclass("ami-ids")

    assert [t.id for t in by_id.ami_selector_terms] == ["ami-0aaaaaaaaaaaaaaaa", "ami-0bbbbbbbbbbbbbbbb"]
    assert by_id.effective_ami_family == "AL2"
    assert by_id.user_data is not None
    assert by_id.user_data.startswith("#!/bin/bash")


def test_user_data_in_each_family_format_is_kept_as_written() -> None:
    assert "application/node.eks.aws" in (nodeclass("nodeadm-userdata").user_data or "")
    assert "[settings.kubernetes]" in (nodeclass("bottlerocket-volumes").user_data or "")


def test_custom_family_with_an_alias_or_with_ids() -> None:
    with_alias = nodeclass("custom-with-alias")
    with_ids = nodeclass("custom-with-ids")

    assert (with_alias.effective_ami_family, with_alias.alias) == ("Custom", AMIAlias("al2", "latest"))
    assert (with_ids.effective_ami_family, with_ids.alias) == ("Custom", None)


def test_block_devices_instance_store_raid_and_several_volumes() -> None:
    bottlerocket = nodeclass("bottlerocket-volumes").block_device_mappings
    volumes = nodeclass("three-volumes")

    assert [(d.device_name, d.ebs.volume_size_gib if d.ebs else None) for d in bottlerocket] == [
        ("/dev/xvda", 4),
        ("/dev/xvdb", 40),
    ]
    assert nodeclass("raid0").instance_store_policy == "RAID0"
    assert volumes.root_volume is not None
    assert volumes.root_volume.device_name == "/dev/xvda"
    assert [d.ebs.volume_type if d.ebs else None for d in volumes.block_device_mappings] == ["gp3", "io2", None]
    snapshot = volumes.block_device_mappings[2].ebs
    assert snapshot is not None
    assert (snapshot.snapshot_id, snapshot.volume_initialization_rate) == (
        "snap-0123456789abcdef0",
        200,
    )


def test_a_windows2025_alias_implies_its_family() -> None:
    assert nodeclass("windows2025-alias").effective_ami_family == "Windows2025"
