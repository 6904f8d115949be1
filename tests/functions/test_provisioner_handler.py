"""The provisioner Lambda handler, end to end through its real entry point.

Faked: the Kubernetes API (in-memory cluster), EC2 (the fake cloud provider) and time (a virtual
clock the loop's sleep advances). Real: the handler with its Powertools decorators, the controller,
the solver, and the DynamoDB state store on moto. Observed: what was launched and recorded.
Fixtures (moto, the examples as a plan, `invoke`) are in conftest.py.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from nodewright.adapters.aws.state_store import DynamoStateStore
from nodewright.controllers.assembly import build_provisioner
from nodewright.controllers.observe import RecordingObserver
from nodewright.controllers.provisioning import Provisioner
from nodewright.inmemory.clock import VirtualClock
from nodewright.inmemory.cloud import FakeCloudProvider
from nodewright.inmemory.cluster import InMemoryCluster

if TYPE_CHECKING:
    from tests.functions.conftest import ExamplePlan


def test_the_handler_launches_the_plan_records_every_claim_and_launches_nothing_more(
    dynamodb: Any, example_plan: ExamplePlan, invoke: Callable[[Provisioner, str], dict[str, Any]]
) -> None:
    planned, expected = example_plan.planned, example_plan.expected
    clock = VirtualClock(time.time())
    cluster = InMemoryCluster(clock)
    cluster.add_pods(planned.pending)
    for daemonset in planned.daemonsets:
        cluster.add_daemonset(daemonset)
    cloud = FakeCloudProvider(clock)
    store = DynamoStateStore(dynamodb, "state")
    provisioner = build_provisioner(
        cluster=cluster,
        cloud=cloud,
        store=store,
        clock=clock,
        config=example_plan.configuration,
        catalog=example_plan.catalog,
        observer=RecordingObserver(),
        sleep=clock.advance,
    )

    first = invoke(provisioner, "invocation-1")
    launched = len(cloud.launched)
    second = invoke(provisioner, "invocation-2")

    claims = store.claims()
    assert not expected.unschedulable
    assert second["launched"] == []
    assert len(cloud.launched) == launched == len(expected.claims) == len(claims)
    assert sorted(sorted(c.pods) for c in claims) == sorted(sorted(p.key for p in c.pods) for c in expected.claims)
    planned_types = collections.Counter((c.instance_type.name, c.offering.capacity_type) for c in expected.claims)
    launched_types = collections.Counter((i.instance_type, i.capacity_type) for i in cloud.instances())
    assert launched_types == planned_types
    assert all(c.state == "launched" and c.instance_id for c in claims)
    assert first["passes"] == 1
