"""NodePools whose EC2NodeClass names a node role the deployment may not pass.

Faked: the Kubernetes API, EC2, DynamoDB and time, as in test_provisioning; the NodePool status
goes to the in-memory NodeClaim objects. Observed: what launched (and with which NodeClass), the
decision record, the Event on the NodePool and the NodePool's conditions.
"""

from __future__ import annotations

from nodewright.config.noderoles import NodeRoles
from nodewright.controllers.assembly import build_provisioner
from nodewright.controllers.mirror import ClaimMirror
from nodewright.controllers.noderoles import RoleCheckedConfiguration
from nodewright.controllers.provisioning import Provisioner
from nodewright.controllers.provisionoptions import StaticConfiguration
from nodewright.inmemory.claimobjects import InMemoryClaimObjects
from nodewright.model import labels as wk
from nodewright.model.event import ObjectRef
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodepool import NodeClassRef
from tests.builders import node_pool
from tests.controllers.test_provisioning import FixedCatalog, World

ROLES = NodeRoles.of("arn:aws:iam::111122223333:role/Nodewright-demo-NodeRole", ["KarpenterNodeRole-demo"])
POOLS = (
    node_pool("karpenter", node_class_ref=NodeClassRef("karpenter")),
    node_pool("outsider", node_class_ref=NodeClassRef("outsider")),
)
NODECLASSES = {
    "karpenter": EC2NodeClass("karpenter", role="arn:aws:iam::111122223333:role/KarpenterNodeRole-demo"),
    "outsider": EC2NodeClass("outsider", role="SomeOtherRole"),
}


def checked_world() -> tuple[World, RoleCheckedConfiguration, InMemoryClaimObjects]:
    world = World(pools=POOLS)
    config = RoleCheckedConfiguration(
        StaticConfiguration(POOLS, NODECLASSES), ROLES, world.cluster, world.clock, world.observer
    )
    objects = InMemoryClaimObjects()
    for pool in POOLS:
        objects.nodepools[pool.name] = {"spec": {}}
    mirror = ClaimMirror(objects, world.clock, world.observer, nodepool_status=True)
    mirror.refused = config.refused

    def provisioner(**options: float) -> Provisioner:
        return build_provisioner(
            cluster=world.cluster,
            cloud=world.cloud,
            store=world.store,
            clock=world.clock,
            config=config,
            catalog=FixedCatalog(),
            observer=world.observer,
            sleep=world.clock.advance,
            mirror=mirror,
        )

    world.provisioner = provisioner  # type: ignore[method-assign]
    return world, config, objects


def test_a_listed_role_launches_and_a_role_outside_the_list_holds_its_nodepool_back() -> None:
    world, _, objects = checked_world()
    world.pending(2, prefix="ok", node_selector={wk.NODEPOOL: "karpenter"})
    world.pending(2, prefix="refused", node_selector={wk.NODEPOOL: "outsider"})
    world.run()

    assert {c.nodepool for c in world.store.claims()} == {"karpenter"}
    (refused,) = world.observer.of("nodepool-refused")
    assert refused["nodepool"] == "outsider"
    assert "'SomeOtherRole'" in refused["reason"]
    assert "nodeRoles" in refused["reason"]
    (event,) = world.cluster.events(ObjectRef.nodepool("outsider"))
    assert (event.event.type, event.event.reason) == ("Warning", "NodeRoleNotAllowed")
    assert "SomeOtherRole" in event.event.note
    conditions = {c["type"]: c for c in objects.nodepools["outsider"]["status"]["conditions"]}
    assert conditions["NodeClassReady"]["status"] == "False"
    assert conditions["NodeClassReady"]["reason"] == "NodeRoleNotAllowed"
    assert "SomeOtherRole" in conditions["Ready"]["message"]
    ready = {c["type"]: c["status"] for c in objects.nodepools["karpenter"]["status"]["conditions"]}
    assert ready == {"NodeClassReady": "True", "Ready": "True", "ValidationSucceeded": "True"}


def test_a_refused_nodepool_is_reported_once_per_container_not_every_pass() -> None:
    world, config, _ = checked_world()
    world.pending(1, node_selector={wk.NODEPOOL: "outsider"})
    world.run()
    world.run()
    config.load()
    assert len(world.observer.of("nodepool-refused")) == 1
    assert world.store.claims() == []
