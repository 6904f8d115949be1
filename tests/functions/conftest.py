"""Fixtures of the Lambda handler tests: moto, the bundled examples as a plan, and a handler call.

- `aws`: one moto `mock_aws` context for the test (DynamoDB, EC2 and anything else share it);
  `dynamodb`: the state table in it.
- `example_plan`: the examples (examples/nodepools and examples/workloads) scaled to 1,000
  pending pods, with what `nodewright plan -f examples/` computes for them: the scheduling input, its solution, the
  NodePools and EC2NodeClasses, and the instance types per EC2NodeClass (`catalog`).
- `invoke`: run the real handler entry point (Powertools decorators included) once with a given
  provisioner, as one Lambda invocation with 30 s left.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from functions.provisioner import handler as provisioner_handler
from nodewright.adapters.aws.state_store import create_table
from nodewright.cli.plan import build_input
from nodewright.config.documents import EC2NODECLASS, NODEPOOL
from nodewright.config.workloads import PlanInput, read_workloads
from nodewright.controllers.provisioning import Provisioner
from nodewright.controllers.provisionoptions import StaticConfiguration
from nodewright.engine.scheduling import SchedulingInput, SchedulingResult, solve
from nodewright.model.instancetype import InstanceType
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodepool import NodePool

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
PENDING = 1000


class Context:
    """The parts of a Lambda context the handler and Powertools read."""

    function_name = "nodewright-provisioner"
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:nodewright-provisioner"

    def __init__(self, request_id: str) -> None:
        self.aws_request_id = request_id

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


class PlanCatalog:
    """The instance types `plan` used, per EC2NodeClass (kubelet settings shape allocatable)."""

    def __init__(self, types: dict[str, list[InstanceType]]) -> None:
        self.types = types

    def instance_types(self, nodeclass: EC2NodeClass | None) -> list[InstanceType]:
        return self.types[nodeclass.name if nodeclass is not None else "default"]


@dataclass(frozen=True)
class ExamplePlan:
    """The examples as pending pods, and the plan `nodewright plan` prints for them."""

    planned: PlanInput
    scheduling: SchedulingInput
    expected: SchedulingResult
    nodepools: tuple[NodePool, ...]
    nodeclasses: dict[str, EC2NodeClass]
    catalog: PlanCatalog

    @property
    def configuration(self) -> StaticConfiguration:
        return StaticConfiguration(self.nodepools, self.nodeclasses)


def example_input() -> PlanInput:
    files = sorted(p for folder in ("nodepools", "workloads") for p in (EXAMPLES / folder).rglob("*.yaml"))
    texts = [(str(p), p.read_text()) for p in files]
    # Scale the inflate deployment so the examples hold 1,000 pending pods (at a quarter cpu each,
    # within the example NodePools' limits, so the whole plan is launchable).
    texts = [(s, t.replace("replicas: 20", "replicas: 936").replace('cpu: "1"', 'cpu: "250m"')) for s, t in texts]
    planned = read_workloads(texts)
    assert planned.ok, planned.problems
    assert len(planned.pending) == PENDING
    return planned


@pytest.fixture(scope="session")
def example_plan() -> ExamplePlan:
    """Computed once per session: every part is immutable."""
    planned = example_input()
    scheduling = build_input(planned, None, ZONES)
    types = {pool.nodepool.node_class_ref.name: list(pool.instance_types) for pool in scheduling.pools}
    return ExamplePlan(
        planned=planned,
        scheduling=scheduling,
        expected=solve(scheduling),
        nodepools=tuple(d.model for d in planned.config.of_kind(NODEPOOL) if isinstance(d.model, NodePool)),
        nodeclasses={
            d.name: d.model for d in planned.config.of_kind(EC2NODECLASS) if isinstance(d.model, EC2NodeClass)
        },
        catalog=PlanCatalog(types),
    )


@pytest.fixture
def aws() -> Iterator[None]:
    with mock_aws():
        yield


@pytest.fixture
def dynamodb(aws: None) -> Any:
    client = boto3.client("dynamodb", region_name="us-east-1")
    create_table(client, "state")
    return client


@pytest.fixture
def invoke() -> Iterator[Callable[[Provisioner, str], dict[str, Any]]]:
    def run(provisioner: Provisioner, request_id: str) -> dict[str, Any]:
        provisioner_handler.configure(provisioner)
        return provisioner_handler.handler({}, Context(request_id))

    try:
        yield run
    finally:
        provisioner_handler.configure(None)
