"""The provisioner Lambda handler, end to end through its real entry point.

Faked: the Kubernetes API (in-memory cluster), EC2 (the fake cloud provider) and time (a virtual
clock the loop's sleep advances). Real: the handler with its Powertools decorators, the controller,
the solver, and the DynamoDB state store on moto. Observed: what was launched and recorded.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from functions.provisioner import handler as provisioner_handler
from nodewright.adapters.aws.state_store import DynamoStateStore, create_table
from nodewright.cli.plan import build_input
from nodewright.config.documents import EC2NODECLASS, NODEPOOL
from nodewright.config.workloads import read_workloads
from nodewright.controllers.observe import RecordingObserver
from nodewright.controllers.provisioning import Provisioner, StaticConfiguration
from nodewright.engine.scheduling import solve
from nodewright.model.instancetype import InstanceType
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.sim.clock import VirtualClock
from nodewright.sim.cloud import FakeCloudProvider
from nodewright.sim.cluster import InMemoryCluster

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")


class Context:
    function_name = "nodewright-provisioner"
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:nodewright-provisioner"

    def __init__(self, request_id: str) -> None:
        self.aws_request_id = request_id

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


def example_input() -> Any:
    texts = [(str(p), p.read_text()) for p in sorted(EXAMPLES.rglob("*.yaml"))]
    # Scale the inflate deployment so the examples hold 1,000 pending pods (at a quarter cpu each,
    # within the example NodePools' limits, so the whole plan is launchable).
    texts = [(s, t.replace("replicas: 20", "replicas: 936").replace('cpu: "1"', 'cpu: "250m"')) for s, t in texts]
    planned = read_workloads(texts)
    assert planned.ok, planned.problems
    assert len(planned.pending) == 1000
    return planned


class OfflineCatalog:
    def __init__(self, types: dict[str, list[InstanceType]]) -> None:
        self.types = types

    def instance_types(self, nodeclass: EC2NodeClass | None) -> list[InstanceType]:
        return self.types[nodeclass.name if nodeclass is not None else "default"]


@pytest.fixture
def dynamodb() -> Iterator[Any]:
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_table(client, "state")
        yield client


def test_the_handler_launches_the_plan_records_every_claim_and_launches_nothing_more(dynamodb: Any) -> None:
    planned = example_input()
    scheduling = build_input(planned, None, ZONES)
    expected = solve(scheduling)
    clock = VirtualClock(time.time())
    cluster = InMemoryCluster(clock)
    cluster.add_pods(planned.pending)
    for daemonset in planned.daemonsets:
        cluster.add_daemonset(daemonset)
    cloud = FakeCloudProvider(clock)
    store = DynamoStateStore(dynamodb, "state")
    nodepools = [d.model for d in planned.config.of_kind(NODEPOOL)]
    nodeclasses = {d.name: d.model for d in planned.config.of_kind(EC2NODECLASS)}
    # The same instance types `plan` used, per EC2NodeClass (kubelet settings shape allocatable).
    types = {pool.nodepool.node_class_ref.name: list(pool.instance_types) for pool in scheduling.pools}
    observer = RecordingObserver()
    provisioner = Provisioner(
        cluster=cluster,
        cloud=cloud,
        store=store,
        clock=clock,
        config=StaticConfiguration(tuple(nodepools), nodeclasses),  # type: ignore[arg-type]
        catalog=OfflineCatalog(types),
        observer=observer,
        sleep=clock.advance,
    )
    provisioner_handler.configure(provisioner)
    try:
        first = provisioner_handler.handler({}, Context("invocation-1"))
        launched = len(cloud.launched)
        second = provisioner_handler.handler({}, Context("invocation-2"))
    finally:
        provisioner_handler.configure(None)

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
