"""Flood: 10,000 forged, stale and duplicate messages through the real interruption handler, with
real events among them.

Role: anyone allowed to send to the interruption queue can fill it. This benchmark delivers such a
flood as the event source would (batches of 10, in queue order) to the real handler
(functions/interruption/handler.py: Powertools batch processing, idempotency on DynamoDB, the
parser, the verification, the controller) over moto (EC2, DynamoDB) and the Kubernetes adapter
over HTTP against the API emulator serving an in-memory cluster, and checks:

* nothing is lost: no record is handed back failed, and every message is accounted for, by kind
  (forged for an instance that is not Nodewright's: `ForeignInstanceMessages`; stale or
  contradicted by EC2: `MessagesDropped`; a continuation with no drain record:
  `ContinuationsRejected`; a repeat of a message already handled: not acted on again);
* nothing moves: the targeted Nodewright node keeps its instance, its Node, its pods (a
  `minAvailable: all` budget holds them), no Node of a running instance is deleted;
* no real event is starved: real state changes (the instance really stopping, confirmed by EC2)
  at a quarter, half and three quarters of the queue are each acted on in the batch that carries
  them (cordoned, replacement asked for, drained), and the report says after how many seconds of
  handling.

The flood (per 10 messages, from a fixed seed): 4 fresh spot warnings for instance ids that are not
Nodewright's, 2 stale spot warnings (10 minutes old) for the targeted node, 1 forged `terminated`
state change for it (EC2 says running), 1 forged continuation for it, 2 repeats of a message sent
before. The handler runs in this process one batch after another (one Lambda's view); with the
event source's maximum concurrency N, N such invocations share the queue.

Run: `python -m bench.hostile_flood` (10,000 messages), `--messages N` for fewer.
tests/functions/test_hostile_input.py floods 300 through the same handler in the suite.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from bench.harness.kube_manifests import DUMMY_CA

BATCH = 10
IDEMPOTENCY = "nodewright-idempotency"
STATE = "nodewright-state"
ZONE = "us-east-1a"
SPOT_WARNING = "EC2 Spot Instance Interruption Warning"
STATE_CHANGE = "EC2 Instance State-change Notification"


class Context:
    """The parts of a Lambda context the handler and Powertools read (60 s left per batch)."""

    function_name = "nodewright-interruption"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:nodewright-interruption"
    aws_request_id = "3f1c0a2e-7b4d-4e6a-9c8f-1d2e3f4a5b6c"

    def get_remaining_time_in_millis(self) -> int:
        return 60_000


@dataclass
class Flood:
    """The messages in queue order, what each category should come to, and the real events' places."""

    bodies: list[dict[str, Any]] = field(default_factory=list)
    expected: dict[str, int] = field(default_factory=dict)
    real: dict[int, str] = field(default_factory=dict)  # position in the queue -> real instance id


@dataclass
class Result:
    messages: int
    seconds: float
    cpu_seconds: float
    batch_seconds: list[float]
    counts: dict[str, float]
    expected: dict[str, int]
    failed: int
    real_handled_after: dict[str, float]
    problems: list[str]


def stamp(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def event(detail_type: str, instance_id: str, at: float, detail: dict[str, Any], event_id: str = "") -> dict[str, Any]:
    return {
        "version": "0",
        "id": event_id or str(uuid.uuid4()),
        "detail-type": detail_type,
        "source": "aws.ec2",
        "account": "123456789012",
        "time": stamp(at),
        "region": "us-east-1",
        "resources": [f"arn:aws:ec2:us-east-1:123456789012:instance/{instance_id}"],
        "detail": {"instance-id": instance_id, **detail},
    }


def sqs_event(bodies: Sequence[dict[str, Any]], now: float) -> dict[str, Any]:
    """One event-source batch, each record as SQS hands it to Lambda."""
    records = []
    for body in bodies:
        sent = str(int(now * 1000))
        records.append(
            {
                "messageId": str(uuid.uuid4()),
                "receiptHandle": uuid.uuid4().hex,
                "body": json.dumps(body, separators=(",", ":")),
                "attributes": {
                    "ApproximateReceiveCount": "1",
                    "SentTimestamp": sent,
                    "SenderId": "AIDAIENQZJOLO23YVJ4VO",
                    "ApproximateFirstReceiveTimestamp": sent,
                },
                "messageAttributes": {},
                "md5OfBody": "",
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:nodewright-interruptions",
                "awsRegion": "us-east-1",
            }
        )
    return {"Records": records}


def flood(messages: int, target: str, node: str, real: Sequence[str], now: float, seed: int) -> Flood:
    """The queue's contents (module docstring), the real events placed at 1/4, 1/2 and 3/4."""
    from nodewright.engine.interruption import Continuation, continuation_event
    from nodewright.engine.interruption.actions import DRAIN_NOW

    rng = random.Random(seed)
    out = Flood(expected={"foreign": 0, "dropped": 0, "rejected": 0, "repeats": 0})
    places = {messages * (i + 1) // (len(real) + 1): instance_id for i, instance_id in enumerate(real)}
    for position in range(messages):
        if position in places:
            instance_id = places[position]
            out.real[position] = instance_id
            out.bodies.append(event(STATE_CHANGE, instance_id, now - 1, {"state": "stopping"}))
            continue
        slot = position % BATCH
        if slot < 4:
            foreign = f"i-{rng.getrandbits(68):017x}"
            out.bodies.append(event(SPOT_WARNING, foreign, now - 1, {"instance-action": "terminate"}))
            out.expected["foreign"] += 1
        elif slot < 6:
            out.bodies.append(event(SPOT_WARNING, target, now - 600, {"instance-action": "terminate"}))
            out.expected["dropped"] += 1
        elif slot == 6:
            out.bodies.append(event(STATE_CHANGE, target, now - 1, {"state": "terminated"}))
            out.expected["dropped"] += 1
        elif slot == 7:
            cont = Continuation(node, target, DRAIN_NOW, deadline=now, started=now - 60, origin="SpotInterruption")
            attempt = f"{uuid.uuid4()}#{target}#{rng.randrange(1, 5)}"
            out.bodies.append(continuation_event(cont, event_id=attempt, now=now))
            out.expected["rejected"] += 1
        else:
            earlier = [b for i, b in enumerate(out.bodies) if i not in out.real]
            out.bodies.append(rng.choice(earlier) if earlier else out.bodies[-1])
            out.expected["repeats"] += 1
    return out


@contextmanager
def account() -> Iterator[tuple[Any, Any]]:
    """moto's EC2 and DynamoDB with the idempotency and state tables."""
    import boto3
    from moto import mock_aws

    from nodewright.adapters.aws.state_store import create_table

    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        dynamodb.create_table(
            TableName=IDEMPOTENCY,
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        create_table(dynamodb, STATE)
        yield boto3.client("ec2", region_name="us-east-1"), dynamodb


def run(messages: int = 10_000, seed: int = 29) -> Result:
    """Deliver the flood and check it (module docstring)."""
    import boto3

    from functions.interruption import handler as interruption_handler
    from nodewright.adapters.aws.ec2 import Ec2CloudProvider
    from nodewright.adapters.aws.state_store import DynamoStateStore
    from nodewright.adapters.idempotency import EventDeduplicator
    from nodewright.adapters.kube.client import from_cluster_info
    from nodewright.adapters.kube.cluster import KubeCluster
    from nodewright.adapters.kube.store import KINDS
    from nodewright.controllers.interruption import InterruptionController
    from nodewright.controllers.observe import RecordingObserver
    from nodewright.controllers.provisionoptions import StaticConfiguration
    from nodewright.inmemory.apiserver import ApiServer
    from nodewright.inmemory.clock import VirtualClock
    from nodewright.inmemory.cluster import InMemoryCluster
    from nodewright.inmemory.signals import RecordingContinuations, RecordingTrigger
    from nodewright.model import labels as wk
    from nodewright.model.cluster import ClusterInfo
    from nodewright.model.node import Node
    from nodewright.model.nodeclaim import NodeClaim
    from nodewright.model.nodepool import NodePool
    from nodewright.model.pod import Pod
    from nodewright.model.resources import Resources
    from nodewright.model.selectors import LabelSelector
    from nodewright.model.workloads import PodDisruptionBudget

    with account() as (ec2, dynamodb):
        clock = VirtualClock(time.time())
        cluster = InMemoryCluster(clock)
        store = DynamoStateStore(dynamodb, STATE)

        def launch(name: str, pods: int) -> str:
            reply = ec2.run_instances(
                ImageId="ami-12c6146b",
                InstanceType="m5.xlarge",
                MinCount=1,
                MaxCount=1,
                Placement={"AvailabilityZone": ZONE},
            )
            instance_id = str(reply["Instances"][0]["InstanceId"])
            provider_id = f"aws:///{ZONE}/{instance_id}"
            claim = f"default-{instance_id[-10:]}"
            store.create_claim(
                NodeClaim(
                    name=claim, nodepool="default", state="initialized", instance_type="m5.xlarge",
                    capacity_type="on-demand", zone=ZONE, price=0.192, instance_id=instance_id,
                    provider_id=provider_id, node_name=name, created_at=clock.now() - 3600,
                )
            )  # fmt: skip
            capacity = Resources.of(cpu="4", memory="16Gi", pods=58)
            labels = {wk.HOSTNAME: name, wk.NODEPOOL: "default", wk.NW_NODEPOOL: "default", wk.NW_NODECLAIM: claim}
            cluster.add_node(
                Node(name, labels, capacity=capacity, allocatable=capacity, provider_id=provider_id, ready=True)
            )
            for i in range(pods):
                resources = Resources.of(cpu="100m", memory="128Mi", pods=1)
                added = cluster.add_pod(
                    Pod(
                        "default",
                        f"{name}-{i}",
                        labels={"app": name},
                        requests=resources,
                        owner_kind="ReplicaSet",
                        owner_name=name,
                    )
                )
                cluster.bind(added, name)
            return instance_id

        target = launch("target", 10)
        selector = LabelSelector.parse({"matchLabels": {"app": "target"}})
        cluster.add_pdb(PodDisruptionBudget("default", "target", selector, min_available=10))
        real = [launch(f"real-{i}", 2) for i in range(3)]
        launch("bystander", 0)
        ec2.stop_instances(InstanceIds=real)  # real events: these instances really are stopping

        server = ApiServer(cluster)
        server.start()
        kube = KubeCluster.connect(
            from_cluster_info(ClusterInfo("emulated", server.url, DUMMY_CA, "1.31"), lambda: "token"),
            barrier=lambda: {kind: server.latest(kind) for kind in KINDS},
        )
        observer = RecordingObserver()
        trigger = RecordingTrigger(clock)
        controller = InterruptionController(
            cluster=kube,
            claim_records=store,
            drain_records=store,
            offering_blocks=store,
            cloud=Ec2CloudProvider(
                ec2,
                boto3.client("ssm", region_name="us-east-1"),
                ClusterInfo("my-cluster", "https://example.invalid", DUMMY_CA, "1.31"),
                instance_profile="my-cluster-nodewright-node",
                clock=clock,
            ),
            clock=clock,
            config=StaticConfiguration((NodePool(name="default"),)),
            observer=observer,
            continuations=RecordingContinuations(clock),
            provisioner=trigger,
        )
        interruption_handler.configure(EventDeduplicator(controller.process, table=IDEMPOTENCY))
        queue = flood(messages, target, "target", real, clock.now(), seed)
        by_real = {v: k for k, v in queue.real.items()}
        names = {instance_id: f"real-{i}" for i, instance_id in enumerate(real)}
        batch_seconds: list[float] = []
        handled_after: dict[str, float] = {}
        failed = 0
        start, cpu = time.perf_counter(), time.process_time()
        try:
            for first in range(0, len(queue.bodies), BATCH):
                began = time.perf_counter()
                response = interruption_handler.handler(
                    sqs_event(queue.bodies[first : first + BATCH], clock.now()), Context()
                )
                batch_seconds.append(time.perf_counter() - began)
                failed += len(response.get("batchItemFailures") or ())
                for instance_id, position in by_real.items():
                    if first <= position < first + BATCH:
                        handled_after[instance_id] = time.perf_counter() - start
                clock.advance(0.05)
            seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        finally:
            interruption_handler.configure(None)
            kube.close()
            server.stop()

        counts = {
            name: observer.total(name)
            for name in ("InterruptionsReceived", "ForeignInstanceMessages", "MessagesDropped", "ContinuationsRejected")
        }
        problems: list[str] = []
        if failed:
            problems.append(f"{failed} records handed back failed")
        got = {
            "foreign": counts["ForeignInstanceMessages"],
            "dropped": counts["MessagesDropped"],
            "rejected": counts["ContinuationsRejected"],
        }
        for key, value in got.items():
            if value != queue.expected[key]:
                problems.append(f"{key}: {value:.0f} counted, {queue.expected[key]} sent")
        first_time = messages - queue.expected["repeats"] - queue.expected["rejected"]
        if counts["InterruptionsReceived"] != first_time:
            problems.append(f"{counts['InterruptionsReceived']:.0f} events handled, {first_time} first deliveries sent")
        state = ec2.describe_instances(InstanceIds=[target])["Reservations"][0]["Instances"][0]["State"]["Name"]
        if state != "running":
            problems.append(f"the targeted instance is {state}")
        if cluster.get_node("target") is None:
            problems.append("the targeted Node was deleted")
        evicted = {c.name for c in cluster.changes_of("pod_evicted")}
        if any(name.startswith("default/target-") for name in evicted):
            problems.append("pods were evicted from the targeted node")
        if cluster.lost_pods():
            problems.append(f"{len(cluster.lost_pods())} pods lost")
        cordoned = {c.name for c in cluster.changes_of("node_cordoned")}
        for name in names.values():
            asked = any(name in reason for _, reason in trigger.requests)
            drained = any(e.startswith(f"default/{name}-") for e in evicted)
            if name not in cordoned or not asked or not drained:
                problems.append(f"the real event for {name} was not acted on (cordon, replacement, drain)")
        if cordoned - set(names.values()):
            problems.append(f"cordoned beyond the real events: {sorted(cordoned - set(names.values()))}")
        return Result(messages, seconds, cpu, batch_seconds, counts, queue.expected, failed, handled_after, problems)


def report(result: Result) -> str:
    batches = sorted(result.batch_seconds)
    p99 = batches[min(len(batches) - 1, int(0.99 * len(batches)))]
    lines = [
        f"{result.messages} messages in {len(batches)} batches of {BATCH}: {result.seconds:.1f} s "
        f"({result.messages / result.seconds:.0f} messages/s, one invocation at a time; this process's CPU "
        f"{result.cpu_seconds:.1f} s, moto and the API emulator included)",
        f"per batch: p50 {statistics.median(batches):.3f} s, p99 {p99:.3f} s, max {batches[-1]:.3f} s",
        "sent: " + ", ".join(f"{k} {v}" for k, v in result.expected.items()),
        "counted: " + ", ".join(f"{k} {v:.0f}" for k, v in result.counts.items()),
        f"records handed back failed: {result.failed}",
        "real events acted on after: " + ", ".join(f"{s:.1f} s" for s in sorted(result.real_handled_after.values())),
        "OK: nothing lost, nothing moved, every real event acted on"
        if not result.problems
        else "PROBLEMS:\n  " + "\n  ".join(result.problems),
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.hostile_flood", description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=29)
    args = parser.parse_args(argv)
    import logging

    logging.disable(logging.WARNING)
    result = run(args.messages, args.seed)
    print(report(result))
    return 1 if result.problems else 0


if __name__ == "__main__":
    sys.exit(main())
