"""The provisioner's housekeeping terminates and deletes only on evidence, not on tags or labels.

Faked: the Kubernetes API (in-memory cluster), EC2 (the fake cloud: every instance in it carries
the cluster tag, as `instances()` lists them), DynamoDB (in-memory store), time. Real: the
provisioner's pass and its housekeeping. Observed: which instances are terminated, which Nodes
deleted, and the decisions explaining what was left alone.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from nodewright.controllers.housekeeping import orphan_evidence
from nodewright.model import labels as wk
from nodewright.model.instance import Instance
from nodewright.model.node import Node
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.resources import Resources
from tests.builders import pod
from tests.controllers.test_provisioning import START, World

ORPHAN_AGE = START - 60


def foreign(instance_id: str, **tags: str) -> Instance:
    """A running instance launched outside Nodewright that carries the cluster tag (and `tags`)."""
    return Instance(instance_id, "m5.large", "us-east-1a", "on-demand", "running", ORPHAN_AGE, **tags)  # type: ignore[arg-type]


def ours(world: World, instance_id: str, profile: str = "nodewright-node") -> None:
    """One of Nodewright's running instances: its claim record and its Node."""
    claim = f"default-{instance_id[-10:]:0>10}"
    world.cloud.add_instance(
        Instance(
            instance_id,
            "m5.large",
            "us-east-1a",
            "on-demand",
            "running",
            START - 3600,
            claim,
            "default",
            instance_profile=profile,
        )
    )
    world.store.create_claim(
        NodeClaim(
            name=claim,
            nodepool="default",
            state="initialized",
            instance_type="m5.large",
            capacity_type="on-demand",
            zone="us-east-1a",
            price=0.1,
            instance_id=instance_id,
            provider_id=f"aws:///us-east-1a/{instance_id}",
            node_name=f"node-{instance_id}",
            created_at=START - 3600,
        )
    )


@pytest.mark.parametrize(
    ("tags", "missing"),
    [
        pytest.param({}, "not a claim name the functions issue", id="no-nodeclaim-tag"),
        pytest.param({"nodeclaim": "web-1"}, "not a claim name the functions issue", id="implausible-name"),
        pytest.param({"nodeclaim": "default-0123456789"}, "does not name a configured NodePool", id="no-nodepool-tag"),
        pytest.param(
            {"nodeclaim": "other-0123456789", "nodepool": "other"}, "configured NodePool", id="unknown-nodepool"
        ),
        pytest.param(
            {"nodeclaim": "default-0123456789", "nodepool": "default", "instance_profile": "someone-elses"},
            "instance profile",
            id="plausible-tags-another-profile",
        ),
    ],
)
def test_a_foreign_instance_with_the_cluster_tag_is_never_terminated(tags: dict[str, str], missing: str) -> None:
    world = World()
    ours(world, "i-0000000000000001")
    world.cloud.add_instance(foreign("i-foreign", **tags))
    world.run(5)
    assert world.cloud.instance("i-foreign").state == "running"  # type: ignore[union-attr]
    [left] = world.observer.of("orphan-left-alone")
    assert missing in str(left["missing"])
    assert world.observer.total("OrphansLeftAlone") == 1


def test_an_orphan_with_the_evidence_of_a_nodewright_launch_is_terminated() -> None:
    world = World()
    ours(world, "i-0000000000000001")
    orphan = foreign("i-orphan", nodeclaim="default-0123456789", nodepool="default")
    world.cloud.add_instance(replace(orphan, instance_profile="nodewright-node"))
    world.run(5)
    assert world.cloud.instance("i-orphan").state == "terminated"  # type: ignore[union-attr]


def test_a_node_with_a_forged_nodepool_label_is_not_deleted_as_stale() -> None:
    world = World()
    capacity = Resources.of(cpu="2", memory="8Gi", pods=29)
    labels = {wk.HOSTNAME: "theirs", wk.NW_NODEPOOL: "default", wk.NW_NODECLAIM: "default-0123456789"}
    # Its instance is not in Nodewright's listing (a managed node group's, say): no claim named it.
    node = Node(
        "theirs", labels, capacity=capacity, allocatable=capacity, provider_id="aws:///us-east-1a/i-0mng1", ready=True
    )
    world.cluster.add_node(node)
    world.cluster.bind(world.cluster.add_pod(pod("their-pod", cpu="100m")), "theirs")
    world.run(5)
    assert world.cluster.get_node("theirs") is not None
    assert world.cluster.lost_pods() == []


def test_a_claimed_instance_ec2_confirms_gone_has_its_claim_and_node_removed() -> None:
    world = World()
    ours(world, "i-0000000000000001")
    capacity = Resources.of(cpu="2", memory="8Gi", pods=29)
    world.cluster.add_node(
        Node(
            "node-i-0000000000000001",
            {wk.NW_NODEPOOL: "default"},
            capacity=capacity,
            allocatable=capacity,
            provider_id="aws:///us-east-1a/i-0000000000000001",
            ready=True,
        )
    )
    world.cloud.set_state("i-0000000000000001", "terminated")
    world.run(5)
    assert world.store.claims() == []
    assert world.cluster.get_node("node-i-0000000000000001") is None


def test_orphan_evidence_reads_the_claim_name_as_the_functions_issue_it() -> None:
    good = foreign("i-1", nodeclaim="default-0a1b2c3d4e", nodepool="default")
    assert orphan_evidence(good, {"default"}, set()) == ""
    assert orphan_evidence(good, {"default"}, {"p"}) != ""
    assert orphan_evidence(replace(good, nodeclaim="default-0A1B2C3D4E"), {"default"}, set()) != ""
