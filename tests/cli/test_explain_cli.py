"""`nodewright explain pod|node` and `nodewright status` end to end: moto over HTTP (CloudFormation
stack with the state table and the functions' log groups, DynamoDB, CloudWatch Logs) and the
in-memory cluster served over HTTP by the project's API emulator, reached with a kubeconfig.

What is real: the CLI entry point, the state table read by the functions' `DynamoStateStore`,
the stack's resources found through CloudFormation, the Logs Insights query and the parsing of
the Powertools records and REPORT lines it returns, the Kubernetes adapter over HTTP, the
engines re-run read-only. What is observed: the JSON answers and the table output.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import boto3
import pytest
from typer.testing import CliRunner

from nodewright.adapters.aws.state_store import DynamoStateStore
from nodewright.cli import app
from nodewright.cli import commands as _commands  # noqa: F401 - registers the commands
from nodewright.inmemory.apiserver import ApiServer
from nodewright.inmemory.cluster import InMemoryCluster
from nodewright.model import labels as wk
from nodewright.model.event import disruption_blocked, pod_nominated
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.requirements import Requirements
from nodewright.model.resources import Resources
from tests.builders import node, pod
from tests.cli.test_plan_cluster import write_kubeconfig
from tests.cli.test_uninstall import REGION, moto  # noqa: F401 - the moto server fixture

pytestmark = pytest.mark.integration

NAME = "demo"
STACK = {
    "Resources": {
        "StateTable": {
            "Type": "AWS::DynamoDB::Table",
            "Properties": {
                "AttributeDefinitions": [
                    {"AttributeName": "pk", "AttributeType": "S"},
                    {"AttributeName": "sk", "AttributeType": "S"},
                ],
                "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
                "BillingMode": "PAY_PER_REQUEST",
            },
        },
        "ProvisionerLogGroup": {"Type": "AWS::Logs::LogGroup", "Properties": {}},
        "ConsolidatorLogGroup": {"Type": "AWS::Logs::LogGroup", "Properties": {}},
    }
}


def _client(service: str) -> Any:
    return boto3.client(service, region_name=REGION)


def _stack_resource(logical: str) -> str:
    resources = _client("cloudformation").describe_stack_resources(StackName=f"Nodewright-{NAME}")["StackResources"]
    return str(next(r["PhysicalResourceId"] for r in resources if r["LogicalResourceId"] == logical))


def _log(group: str, lines: list[str], at: float) -> None:
    logs = _client("logs")
    logs.create_log_stream(logGroupName=group, logStreamName="2026/11/25/[$LATEST]a")
    logs.put_log_events(
        logGroupName=group,
        logStreamName="2026/11/25/[$LATEST]a",
        logEvents=[{"timestamp": int((at + i) * 1000), "message": line} for i, line in enumerate(lines)],
    )


def _record(service: str, kind: str, **fields: Any) -> str:
    return json.dumps({"level": "INFO", "message": kind, "service": service, "decision": kind, **fields})


def _world(endpoint: str, tmp_path: Path) -> tuple[ApiServer, Path, float]:
    _client("cloudformation").create_stack(StackName=f"Nodewright-{NAME}", TemplateBody=json.dumps(STACK))
    now = time.time()
    store = DynamoStateStore(_client("dynamodb"), _stack_resource("StateTable"))
    claim = NodeClaim(
        name="default-abc",
        nodepool="default",
        requirements=Requirements.parse([]),
        instance_type_options=("m5.large", "m5.xlarge"),
        requests=Resources.of(cpu="1", memory="2Gi"),
        pods=("default/web-0", "default/web-1"),
        state="launched",
        instance_type="m5.large",
        capacity_type="spot",
        zone="us-east-1a",
        price=0.04,
        instance_id="i-0abc",
        provider_id="aws:///us-east-1a/i-0abc",
        created_at=now - 40,
        launched_at=now - 38,
        reason="pending pods need capacity",
    )
    store.create_claim(claim)
    store.save_claim(claim)
    store.block_offerings([("spot", "c5.large", "us-east-1b")], now + 120)
    cluster = InMemoryCluster()
    for index in range(2):
        cluster.add_pod(pod(f"web-{index}", cpu="500m", memory="1Gi"))
    cluster.add_pod(pod("huge", cpu="5000", memory="1Gi"))
    busy = node("old-1", labels={wk.ZONE: "us-east-1a"})
    cluster.add_node(busy)
    cluster.bind(cluster.add_pod(pod("db-0", cpu="100m")), "old-1")
    _log(
        _stack_resource("ProvisionerLogGroup"),
        [
            _record("provisioner", "unschedulable", pod="default/huge", reason="no NodePool fits"),
            _record(
                "provisioner",
                "launch",
                nodeclaim="default-abc",
                pods=["default/web-0", "default/web-1"],
                instance_type_options=["m5.large", "m5.xlarge"],
                price=0.04,
                reason="pending pods need capacity",
                at=now - 38,
            ),
            "REPORT RequestId: 1 Duration: 50000.00 ms Billed Duration: 50001 ms Memory Size: 1024 MB "
            "Max Memory Used: 200 MB",
        ],
        now - 60,
    )
    _log(
        _stack_resource("ConsolidatorLogGroup"),
        [
            _record("consolidator", "disruption-rejected", node="old-1", reason="not managed by Nodewright"),
            "REPORT RequestId: 2 Duration: 2000.00 ms Billed Duration: 2000 ms Memory Size: 512 MB "
            "Max Memory Used: 100 MB",
        ],
        now - 30,
    )
    cluster.record(pod_nominated("default/web-0", nodeclaim="default-abc"), now - 37)
    cluster.record(disruption_blocked("old-1", "pod default/db-0 is annotated karpenter.sh/do-not-disrupt"), now - 5)
    server = ApiServer(cluster)
    return server, write_kubeconfig(tmp_path / "kubeconfig", server.start()), now


def _run(*args: str) -> Any:
    return CliRunner().invoke(app, [*args], catch_exceptions=False)


def test_explain_pod_names_the_claim_that_holds_it_and_the_pass_that_saw_it(moto: str, tmp_path: Path) -> None:  # noqa: F811
    server, config, now = _world(moto, tmp_path)
    try:
        held = _run("explain", "pod", "default/web-0", "--kubeconfig", str(config), "--name", NAME, "-o", "json")
        huge = _run("explain", "pod", "huge", "--kubeconfig", str(config), "--name", NAME, "-o", "json")
        table = _run("explain", "pod", "default/web-0", "--kubeconfig", str(config), "--name", NAME)
    finally:
        server.stop()

    assert held.exit_code == 0, held.output
    answer = json.loads(held.stdout)
    assert answer["state"] == "pending"
    assert answer["claim"]["name"] == "default-abc"
    assert answer["claim"]["instance_type"] == "m5.large"
    assert answer["node_ready_by"] == pytest.approx(now - 38 + 90, abs=1)
    assert [s["decision"] for s in answer["seen_by"]] == ["launch"]
    assert answer["sources"]["state_table"] == _stack_resource_name_prefix()
    assert "3 decision records" in answer["sources"]["logs"]
    assert [(e["reason"], e["note"]) for e in answer["events"]] == [
        ("Nominated", "Pod should schedule on: nodeclaim/default-abc")
    ]
    assert answer["sources"]["events"] == "1 about Pod default/web-0"

    assert huge.exit_code == 0, huge.output
    why = json.loads(huge.stdout)
    assert why["why_not_scheduled"]["schedulable"] is False
    assert why["why_not_scheduled"]["reason"]
    assert why["seen_by"] == [
        {"decision": "unschedulable", "at": pytest.approx(now - 60, abs=2), "reason": "no NodePool fits"}
    ]

    assert table.exit_code == 0, table.output
    assert "default-abc" in table.stdout
    assert "m5.large" in table.stdout


def _stack_resource_name_prefix() -> str:
    return _stack_resource("StateTable")


def test_explain_node_and_status(moto: str, tmp_path: Path) -> None:  # noqa: F811
    server, config, _ = _world(moto, tmp_path)
    try:
        foreign = _run("explain", "node", "old-1", "--kubeconfig", str(config), "--name", NAME, "-o", "json")
        missing = _run("explain", "node", "nope", "--kubeconfig", str(config), "--name", NAME)
        state = _run("status", "--kubeconfig", str(config), "--name", NAME, "-o", "json")
        table = _run("status", "--kubeconfig", str(config), "--name", NAME)
    finally:
        server.stop()

    assert foreign.exit_code == 0, foreign.output
    node_answer = json.loads(foreign.stdout)
    assert node_answer["next"] == "nothing: Nodewright did not launch this node and will not disrupt it"
    assert [e["reason"] for e in node_answer["events"]] == ["DisruptionBlocked"]
    assert missing.exit_code == 1
    assert "node nope is not in the cluster and no claim names it" in missing.output

    assert state.exit_code == 0, state.output
    answer = json.loads(state.stdout)
    assert set(answer["functions"]) == {"provisioner", "consolidator"}
    assert answer["functions"]["consolidator"]["decision"] == "disruption-rejected"
    assert answer["functions"]["consolidator"]["billed_ms"] == 2000.0
    assert answer["functions"]["provisioner"]["billed_ms"] == 50001.0
    assert [c["name"] for c in answer["claims_in_flight"]] == ["default-abc"]
    assert answer["capacity_errors"] == ["spot/c5.large/us-east-1b"]
    assert answer["cost"]["invocations"] == {"provisioner": 1, "consolidator": 1}
    assert answer["cost"]["gb_seconds"] == pytest.approx(50.001 + 1.0, abs=0.1)
    assert answer["cost"]["lambda_month"] > 0
    assert answer["cost"]["logs_month"] >= 0
    assert int(answer["sources"]["log_bytes"]) > 500  # the five records and REPORT lines
    assert table.exit_code == 0, table.output
    assert "claims in flight" in table.stdout


def test_explain_says_what_it_can_explain_and_which_cluster_it_needs() -> None:
    unknown = CliRunner().invoke(app, ["explain", "service", "web", "--kubeconfig", "/nonexistent"])
    nowhere = CliRunner().invoke(app, ["status"])

    assert unknown.exit_code == 1
    assert "'service' is neither pod nor node" in unknown.output
    assert nowhere.exit_code == 1
    assert "say which cluster: --cluster NAME, or --kubeconfig PATH [--context NAME]" in nowhere.output
