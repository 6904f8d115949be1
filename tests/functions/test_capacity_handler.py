"""Static NodePools and CapacityBuffers through the provisioner Lambda handler, against moto.

Faked: EC2 and DynamoDB by moto, SSM's public AMI parameters, the Kubernetes API by the in-memory
cluster, time by a virtual clock (the `world` of tests/functions/test_provisioner_handler_ec2.py).
Real: the handler with its Powertools decorators, the controller, the solver, `Ec2CloudProvider`
(CreateFleet) and `DynamoStateStore`. Observed: the instances moto holds, the claim records, and
the pods in the cluster.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from nodewright.controllers.observe import RecordingObserver
from nodewright.controllers.provisioning import Provisioner
from nodewright.controllers.provisionoptions import StaticConfiguration
from nodewright.model.capacitybuffer import CapacityBuffer, PodTemplate
from nodewright.model.resources import Resources
from tests.builders import pod
from tests.functions.test_provisioner_handler_ec2 import Ec2World, tags_of, world

if TYPE_CHECKING:
    from tests.functions.conftest import ExamplePlan

__all__ = ["world"]  # the fixture, shared with the EC2 handler tests


def configured(world: Ec2World, example_plan: ExamplePlan, **documents: Any) -> None:
    """The examples' EC2NodeClasses with the given NodePools and buffers; no pending pods."""
    for p in world.cluster.pods():
        world.cluster.remove_pod(p)
    world.config.current = StaticConfiguration(nodeclasses=example_plan.nodeclasses, **documents)


def test_the_handler_launches_a_static_pools_replicas_with_no_pending_pod_and_nothing_more(
    world: Ec2World, example_plan: ExamplePlan, invoke: Callable[[Provisioner, str], dict[str, Any]]
) -> None:
    default = next(p for p in example_plan.nodepools if p.name == "default")
    static = replace(default, name="static", replicas=3, limits=Resources.parse({"nodes": "4"}))
    configured(world, example_plan, nodepools=(static,))

    first = invoke(world.provisioner, "invocation-1")
    second = invoke(world.provisioner, "invocation-2")

    instances = world.instances()
    assert len(first["launched"]) == 3
    assert second["launched"] == []
    assert len(instances) == 3
    assert {tags_of(i)["karpenter.sh/nodepool"] for i in instances} == {"static"}
    claims = world.store.claims()
    assert [c.pods for c in claims] == [(), (), ()]
    # Each claim offered the pool's allowed types cheapest first; EC2 launched one of them.
    for claim, instance in zip(
        sorted(claims, key=lambda c: c.instance_id), sorted(instances, key=lambda i: i["InstanceId"]), strict=True
    ):
        assert instance["InstanceType"] in claim.instance_type_options


def test_the_handler_launches_room_for_a_capacitybuffer_and_creates_no_pod(
    world: Ec2World, example_plan: ExamplePlan, invoke: Callable[[Provisioner, str], dict[str, Any]]
) -> None:
    default = next(p for p in example_plan.nodepools if p.name == "default")
    chunk = PodTemplate("chunk", "default", pod("chunk", cpu="1", memory="2Gi"))
    buffer = CapacityBuffer("burst", "default", pod_template_ref="chunk", replicas=8)
    configured(world, example_plan, nodepools=(default,), capacitybuffers=(buffer,), podtemplates=(chunk,))

    first = invoke(world.provisioner, "invocation-1")
    second = invoke(world.provisioner, "invocation-2")

    assert first["launched"]
    assert second["launched"] == []  # the room is in flight: planned onto it, not launched again
    assert world.cluster.pods() == []
    observer = world.provisioner.observer
    assert isinstance(observer, RecordingObserver)
    assert [d["pods"] for d in observer.of("buffer-scale-up")] == [8]
