"""The NodeClaim mirror through the provisioner and the consolidator.

Faked: the Kubernetes API (the in-memory cluster and the in-memory NodeClaim objects), EC2, DynamoDB
and time, as in test_provisioning. Observed: the NodeClaim objects in the cluster after each run
(spec, status, conditions), the writes the mirror sent, and its decisions.
"""

from __future__ import annotations

from nodewright.controllers.disruption import Consolidator
from nodewright.controllers.mirror import ClaimMirror
from nodewright.controllers.provisionoptions import StaticConfiguration
from nodewright.inmemory.claimobjects import InMemoryClaimObjects
from nodewright.model import labels as wk
from nodewright.model.command import CommandRecord
from nodewright.model.node import Node
from nodewright.model.nodeclaim import NodeClaim
from tests.controllers.test_provisioning import FixedCatalog, World, register


def mirrored(world: World, objects: InMemoryClaimObjects, *, nodepool_status: bool = False) -> World:
    real = world.provisioner

    def provisioner(**options: float):  # type: ignore[no-untyped-def]
        p = real(**options)
        p.mirror = world.mirror  # type: ignore[attr-defined]
        return p

    world.mirror = ClaimMirror(  # type: ignore[attr-defined]
        objects, world.clock, world.observer, nodepool_status=nodepool_status
    )
    world.provisioner = provisioner  # type: ignore[method-assign]
    return world


def initialized_node(world: World, **command: str) -> tuple[NodeClaim, Node]:
    """Two pods' claim launched, its node registered and initialized; with `command` fields (id,
    method, state, detail), a disruption command recorded on that node.
    """
    world.pending(2)
    world.run()
    (claim,) = world.store.claims()
    node = register(world, claim, ready=True)
    world.run(1)
    world.run(1)  # registered, then initialized
    if command:
        world.store.save_command(
            CommandRecord(
                id=command["id"],
                method=command["method"],
                reason=command["method"],
                candidates=(node.name,),
                instance_ids=(claim.instance_id,),
                state=command["state"],
                detail=command["detail"],
            )
        )
    return claim, node


def judge(world: World, objects: InMemoryClaimObjects) -> None:
    """One consolidator run's mirror sync, with a judging mirror (as the consolidator Lambda has)."""
    consolidator = Consolidator(
        cluster=world.cluster,
        cloud=world.cloud,
        claim_records=world.store,
        command_records=world.store,
        leases=world.store,
        offering_blocks=world.store,
        clock=world.clock,
        config=StaticConfiguration(world.pools),
        catalog=FixedCatalog(),
        observer=world.observer,
        launcher=world.provisioner().launcher,
        sleep=lambda seconds: None,
        mirror=ClaimMirror(objects, world.clock, world.observer, judge=True),
    )
    consolidator._sync_mirror()


def conditions(obj: dict[str, object]) -> dict[str, tuple[str, str]]:
    rows = obj["status"]["conditions"]  # type: ignore[index]
    return {c["type"]: (c["status"], c["reason"]) for c in rows}


def test_a_launched_claim_appears_as_a_nodeclaim_object_and_follows_its_node_up() -> None:
    objects = InMemoryClaimObjects()
    world = mirrored(World(), objects)
    world.pending(2)
    world.run()
    (claim,) = world.store.claims()
    obj = objects.objects[claim.name]

    assert obj["apiVersion"] == "nodewright.io/v1"
    assert obj["kind"] == "NodeClaim"
    labels = obj["metadata"]["labels"]
    assert labels[wk.INSTANCE_TYPE] == claim.instance_type
    assert labels[wk.CAPACITY_TYPE] == claim.capacity_type
    assert labels[wk.ZONE] == claim.zone
    assert labels[wk.NODEPOOL] == "default"
    assert obj["spec"]["nodeClassRef"] == {"group": "nodewright.io", "kind": "EC2NodeClass", "name": "default"}
    assert obj["spec"]["resources"]["requests"]["cpu"] == "1"  # two pods of 500m
    (types,) = [r for r in obj["spec"]["requirements"] if r["key"] == wk.INSTANCE_TYPE]
    assert types["operator"] == "In"
    assert types["values"] == list(claim.instance_type_options)
    assert obj["status"]["providerID"] == claim.provider_id
    assert conditions(obj)["Launched"] == ("True", "Launched")
    assert conditions(obj)["Registered"] == ("False", "NodeNotFound")
    assert conditions(obj)["Ready"][0] == "False"

    register(world, claim, ready=True)
    world.run(1)
    world.run(1)  # registered, then initialized
    obj = objects.objects[claim.name]
    assert world.store.claims()[0].state == "initialized"
    assert obj["status"]["nodeName"] == f"ip-{claim.instance_id}"
    assert obj["status"]["allocatable"] == {"cpu": "2", "memory": "8Gi", "pods": "29"}
    assert conditions(obj)["Registered"] == ("True", "Registered")
    assert conditions(obj)["Initialized"] == ("True", "Initialized")
    assert conditions(obj)["Ready"] == ("True", "Ready")
    assert "Consolidatable" not in conditions(obj)  # the judge's, not the claims' writer's

    judge(world, objects)
    obj = objects.objects[claim.name]
    assert conditions(obj)["Drifted"] == ("False", "NotDrifted")
    assert conditions(obj)["Consolidatable"] == ("True", "Consolidatable")  # consolidateAfter 0
    assert conditions(obj)["Ready"] == ("True", "Ready")
    writes = objects.requests["patch"]
    world.run(1)  # the claims' writer: nothing changed, and the verdicts stay
    judge(world, objects)
    assert objects.requests["patch"] == writes
    assert conditions(objects.objects[claim.name])["Consolidatable"] == ("True", "Consolidatable")


def test_an_unchanged_claim_is_not_written_again_and_a_gone_claim_is_deleted() -> None:
    objects = InMemoryClaimObjects()
    world = mirrored(World(), objects)
    world.pending(2)
    world.run()
    (claim,) = world.store.claims()
    writes = objects.requests["create"] + objects.requests["patch"]

    world.run(1)
    world.run(1)

    assert objects.requests["create"] + objects.requests["patch"] == writes
    assert objects.requests["list"] == 1  # once per warm container

    world.cloud.terminate([claim.instance_id])
    world.run(1)  # housekeeping finds the instance gone and deletes the claim record
    assert world.store.claims() == []
    assert objects.objects == {}
    assert objects.requests["delete"] == 1


def test_without_the_crd_the_mirror_is_off_and_provisioning_goes_on() -> None:
    objects = InMemoryClaimObjects(installed=False)
    world = mirrored(World(), objects)
    world.pending(2)
    report = world.run()

    assert report["launched"]
    assert objects.objects == {}
    assert world.observer.of("mirror-off")
    world.run(1)
    assert objects.requests["list"] == 1  # not asked again before `recheck`


def test_a_write_that_fails_is_reported_and_retried_from_a_fresh_list() -> None:
    objects = InMemoryClaimObjects()
    world = mirrored(World(), objects)
    broken = objects.apply_claim_object

    def fail(*args: object, **kwargs: object) -> dict[str, object]:
        raise RuntimeError("etcdserver: request timed out")

    objects.apply_claim_object = fail  # type: ignore[method-assign]
    world.pending(2)
    report = world.run()
    assert report["launched"]
    assert world.observer.of("mirror-failed")

    objects.apply_claim_object = broken  # type: ignore[method-assign]
    world.run(1)
    assert set(objects.objects) == {c.name for c in world.store.claims()}
    assert objects.requests["list"] == 2


def test_a_running_consolidation_command_shows_as_disrupting_on_its_candidate() -> None:
    objects = InMemoryClaimObjects()
    world = mirrored(World(), objects)
    claim, _ = initialized_node(
        world, id="cmd-1", method="consolidation", state="tainted", detail="replace with a cheaper m5.large"
    )
    judge(world, objects)

    obj = objects.objects[claim.name]
    assert conditions(obj)["Disrupting"] == ("True", "Underutilized")
    assert "cmd-1" in next(c["message"] for c in obj["status"]["conditions"] if c["type"] == "Disrupting")
    assert conditions(obj)["Consolidatable"] == ("False", "NotConsolidatable")


def test_a_claim_whose_instance_is_gone_counts_as_a_terminated_node() -> None:
    world = World()
    world.pending(2)
    world.run()
    (claim,) = world.store.claims()
    world.cloud.terminate([claim.instance_id])
    world.run(1)

    assert [(n, v, d) for n, v, _, d in world.observer.metrics if n == "NodesTerminated"] == [
        ("NodesTerminated", 1, {"nodepool": "default"})
    ]


def test_nodepools_from_crds_get_karpenters_status_resources_and_conditions() -> None:
    objects = InMemoryClaimObjects()
    objects.nodepools["default"] = {"spec": {}}
    world = mirrored(World(), objects, nodepool_status=True)
    world.pending(2)
    world.run()
    (claim,) = world.store.claims()

    status = objects.nodepools["default"]["status"]
    launched = next(t for t in FixedCatalog().instance_types(None) if t.name == claim.instance_type)
    assert status["resources"]["nodes"] == "1"
    assert status["resources"]["cpu"] == str(launched.capacity["cpu"] // 1000)
    assert {c["type"]: c["status"] for c in status["conditions"]} == {
        "NodeClassReady": "True",
        "Ready": "True",
        "ValidationSucceeded": "True",
    }
    writes = objects.requests["patch nodepools/status"]

    world.run(1)
    assert objects.requests["patch nodepools/status"] == writes  # unchanged: not written again


def test_a_nodepool_the_cluster_does_not_hold_is_asked_again_only_when_its_status_changes() -> None:
    objects = InMemoryClaimObjects()  # the NodePool comes from the config table, not a CRD
    world = mirrored(World(), objects, nodepool_status=True)
    world.pending(2)
    world.run()  # before the launch (no node) and after it (one)
    assert objects.requests["patch nodepools/status"] == 2
    world.run(1)

    assert objects.nodepools == {}
    assert objects.requests["patch nodepools/status"] == 2


def test_the_judge_never_creates_an_object_the_claims_writer_has_not_written() -> None:
    objects = InMemoryClaimObjects()
    world = World()  # the provisioner mirrors nothing here
    initialized_node(world)

    judge(world, objects)

    assert objects.objects == {}
    assert objects.requests["create"] == 0
    assert objects.requests["patch"] == 1  # one attempt, answered "no such object"
