"""Preferred pod anti-affinity through the provisioner Lambda handler: it buys no node per replica.

Faked: the Kubernetes API (in-memory cluster), EC2 (the fake cloud provider) and time (a virtual
clock). Real: the handler with its Powertools decorators, the controller, the solver and the
DynamoDB state store on moto, the examples' default NodePool and EC2NodeClass read as `nodewright
plan` reads them. Observed: the instances launched and the claims recorded with their pods.

Sixty 100m replicas prefer to be apart (hostname); four 1-cpu replicas must be apart. Karpenter
treats the preference as required and opens a node per replica; kube-scheduler never buys a node
for a preference. The provisioner keeps a preference only while it adds at most a quarter to the
plan (`engine/scheduling/preferences.py`), so the sixty share the nodes the required four need,
and the required anti-affinity still holds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

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
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodepool import NodePool
from tests.functions.conftest import ZONES, PlanCatalog

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def deployment(name: str, replicas: int, cpu: str, kind: str) -> str:
    """A Deployment whose replicas are anti-affine on hostname, `kind` being required or preferred."""
    term = f"{{labelSelector: {{matchLabels: {{app: {name}}}}}, topologyKey: kubernetes.io/hostname}}"
    rule = f"[{term}]" if kind == "required" else f"[{{weight: 100, podAffinityTerm: {term}}}]"
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: apps}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers: [{{name: app, image: app, resources: {{requests: {{cpu: {cpu}, memory: 128Mi}}}}}}]
      affinity: {{podAntiAffinity: {{{kind}DuringSchedulingIgnoredDuringExecution: {rule}}}}}
"""


def test_preferred_anti_affinity_shares_the_nodes_the_batch_needs_and_required_stays_apart(
    dynamodb: Any, invoke: Callable[[Provisioner, str], dict[str, Any]]
) -> None:
    texts = [
        (str(EXAMPLES / "nodepools" / "default.yaml"), (EXAMPLES / "nodepools" / "default.yaml").read_text()),
        ("tiny.yaml", deployment("tiny", 60, "100m", "preferred")),
        ("quorum.yaml", deployment("quorum", 4, "1", "required")),
    ]
    planned = read_workloads(texts)
    assert planned.ok, planned.problems
    scheduling = build_input(planned, None, ZONES)
    catalog = PlanCatalog({pool.nodepool.node_class_ref.name: list(pool.instance_types) for pool in scheduling.pools})
    nodepools = tuple(d.model for d in planned.config.of_kind(NODEPOOL) if isinstance(d.model, NodePool))
    nodeclasses = {d.name: d.model for d in planned.config.of_kind(EC2NODECLASS) if isinstance(d.model, EC2NodeClass)}
    clock = VirtualClock(time.time())
    cluster = InMemoryCluster(clock)
    cluster.add_pods(planned.pending)
    cloud = FakeCloudProvider(clock)
    store = DynamoStateStore(dynamodb, "state")

    def sleep(seconds: float) -> None:
        clock.advance(seconds)

    provisioner = build_provisioner(
        cluster=cluster,
        cloud=cloud,
        store=store,
        clock=clock,
        config=StaticConfiguration(nodepools, nodeclasses),
        catalog=catalog,
        observer=RecordingObserver(),
        sleep=sleep,
    )

    invoke(provisioner, "invocation-1")

    claims = store.claims()
    placed = [key for claim in claims for key in claim.pods]
    assert sorted(placed) == sorted(p.key for p in planned.pending), "every pod is planned onto a claim, once"
    # Four claims hold one quorum replica each (required: never relaxed); the tiny replicas fill them.
    quorum_per_claim = [sum(1 for key in claim.pods if "/quorum-" in key) for claim in claims]
    assert sorted(q for q in quorum_per_claim if q) == [1, 1, 1, 1]
    assert len(cloud.launched) == len(claims) <= 6, "not a node per preferring replica (that would be 60 or more)"
    assert sum(1 for claim in claims for key in claim.pods if "/tiny-" in key) == 60
