"""The provisioner handler on a GPU workload whose pods ask for devices through DRA claims.

Faked: the Kubernetes API (the in-memory cluster, holding the DeviceClass and the claim template
as the API server would), EC2 (the fake cloud provider) and time. Real: the handler, the
controller, the solver and the DynamoDB state store on moto. Observed: the instance types launched.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from nodewright.adapters.aws.state_store import DynamoStateStore
from nodewright.cli.plan import build_input
from nodewright.config.documents import EC2NODECLASS, NODEPOOL
from nodewright.config.workloads import read_workloads
from nodewright.controllers.assembly import build_provisioner
from nodewright.controllers.observe import RecordingObserver
from nodewright.controllers.provisioning import Provisioner
from nodewright.controllers.provisionoptions import StaticConfiguration
from nodewright.inmemory.clock import VirtualClock
from nodewright.inmemory.cloud import FakeCloudProvider
from nodewright.inmemory.cluster import InMemoryCluster
from nodewright.model.dra import KINDS
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodepool import NodePool
from tests.functions.conftest import PlanCatalog

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "dra"


def test_the_handler_launches_only_types_that_publish_the_claimed_devices(
    dynamodb: Any, invoke: Callable[[Provisioner, str], dict[str, Any]]
) -> None:
    files = [
        EXAMPLES / "devices.yaml",
        EXAMPLES / "inference.yaml",
        EXAMPLES / "nodepool.yaml",
        EXAMPLES.parent / "nodepools" / "default.yaml",
    ]
    planned = read_workloads([(str(p), p.read_text()) for p in files])
    assert planned.ok, planned.problems
    scheduling = build_input(planned, None, ("us-east-1a", "us-east-1b", "us-east-1c"))
    clock = VirtualClock(time.time())
    cluster = InMemoryCluster(clock)
    for path in files:
        for document in yaml.safe_load_all(path.read_text()):
            if document and document["kind"] in KINDS:
                cluster.devices.put(document)
    cluster.add_pods(planned.pending)
    for pod in planned.pending:
        cluster.mark_unschedulable(pod)
    cloud = FakeCloudProvider(clock)
    store = DynamoStateStore(dynamodb, "state")
    provisioner = build_provisioner(
        cluster=cluster,
        cloud=cloud,
        store=store,
        clock=clock,
        config=StaticConfiguration(
            tuple(d.model for d in planned.config.of_kind(NODEPOOL) if isinstance(d.model, NodePool)),
            {d.name: d.model for d in planned.config.of_kind(EC2NODECLASS) if isinstance(d.model, EC2NodeClass)},
        ),
        catalog=PlanCatalog(
            {pool.nodepool.node_class_ref.name: list(pool.instance_types) for pool in scheduling.pools}
        ),
        observer=RecordingObserver(),
        sleep=clock.advance,
    )

    invoke(provisioner, "invocation-1")

    claims = store.claims()
    assert sorted(p for c in claims for p in c.pods) == sorted(p.key for p in planned.pending)
    assert cloud.instances()
    # Only L40S types publish the devices the template's selector asks for.
    assert {i.instance_type.partition(".")[0] for i in cloud.instances()} == {"g6e"}
