"""Flood: 10,000 forged, stale and duplicate messages through the real interruption handler, with
real events among them; how long the real events wait, with one queue and with the priority queue.

Role: whoever can act as the interruption function's role can fill its main queue (the queue
policy admits no one else). This benchmark puts such a flood on an SQS queue in moto and delivers
it as the event source mappings do (batches of 10, in queue order) to the real handler
(functions/interruption/handler.py: Powertools batch processing, idempotency on DynamoDB, the
parser, the verification, the controller) over moto (EC2, DynamoDB, SQS, EventBridge) and the
Kubernetes adapter over HTTP against the API emulator serving an in-memory cluster. The real
events (real state changes: the instances really are stopping, EC2 confirms it) go through
EventBridge in moto, routed by the stack's own rules (`nodewright.engine.interruption.rules`).
Two layouts, each run once:

* `one-queue` (before the priority queue): every rule targets the one queue, and the real events
  sit in the flood at a quarter, half and three quarters of its depth (2,500, 5,000 and 7,500
  messages deep). Delivered by one consumer; the waits for N consumers (the event source's
  maximum concurrency) are the same measured batch times laid onto N parallel invocations in
  queue order (`fifo_finish_times`: each invocation on Lambda has its own environment);
* `priority` (as deployed): the aws.ec2 rules target the priority queue, which only they may send
  to, and the flood sits on the main queue. Each real event is put on the bus when the main
  queue's consumers have taken a quarter, half and three quarters of the flood (so 7,500, 5,000
  and 2,500 forged messages still queued). Each queue has its own event source mapping with its
  own slots (`--concurrency`, the deploy default 10, each); invocations run one after another
  here, on a virtual timeline where each takes the wall time it took.

Each run checks:

* nothing is lost: no record is handed back failed, and every message is accounted for, by kind
  (forged for an instance that is not Nodewright's: `ForeignInstanceMessages`; stale or
  contradicted by EC2: `MessagesDropped`; a continuation with no drain record:
  `ContinuationsRejected`; a repeat of a message already handled: not acted on again);
* nothing moves: the targeted Nodewright node keeps its instance, its Node, its pods (a
  `minAvailable: all` budget holds them), no Node of a running instance is deleted;
* every real event is acted on (cordoned, replacement asked for, drained), and the report says
  how long each waited from arriving on its queue until the invocation carrying it ended. A wait
  past 120 s is past a spot warning's notice, past 300 s past the queue's retention (SQS would
  have deleted the message unread; the handler's clock here only advances 0.05 s per invocation,
  so the bench still delivers it).

The flood (per 10 messages, from a fixed seed): 4 fresh spot warnings for instance ids that are not
Nodewright's, 2 stale spot warnings (10 minutes old) for the targeted node, 1 forged `terminated`
state change for it (EC2 says running), 1 forged continuation for it, 2 repeats of a message sent
before.

Run: `python -m bench.hostile_flood` (10,000 messages), `--messages N` for fewer.
tests/functions/test_hostile_input.py floods 300 through the same handler in the suite, and
tests/bench/test_hostile_flood.py runs this benchmark with 300.
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import random
import statistics
import sys
import time
import uuid
from collections import deque
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
ONE_QUEUE, PRIORITY = "one-queue", "priority"
MAIN_QUEUE, PRIORITY_QUEUE = "nodewright-interruption", "nodewright-interruption-priority"
# Consumer counts the one-queue layout's waits are reported for.
CONSUMERS = (1, 10)
SPOT_NOTICE_SECONDS = 120


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
class RealEvent:
    """One real event's journey: which queue it arrived on and behind how much, and when (virtual
    seconds since the flood began) it arrived and its invocation ended.
    """

    instance_id: str
    queue: str
    ahead: int  # messages ahead of it on its own queue when it arrived
    flood_queued: int  # forged messages still on the main queue when it arrived
    arrived: float
    handled: float | None = None
    batch: int | None = None  # index of its invocation on its queue
    invocation_seconds: float | None = None  # how long that invocation took

    @property
    def waited(self) -> float | None:
        return None if self.handled is None else self.handled - self.arrived


@dataclass
class Result:
    layout: str
    concurrency: int
    messages: int
    seconds: float
    cpu_seconds: float
    batch_seconds: list[float]  # the main queue's invocations, in queue order
    counts: dict[str, float]
    expected: dict[str, int]
    failed: int
    real: list[RealEvent]
    problems: list[str]

    def waits(self, consumers: int) -> list[float]:
        """One-queue layout: each real event's wait with `consumers` parallel invocations, from the
        measured batch times (the real events all arrived at 0, inside the flood).
        """
        finish = fifo_finish_times(self.batch_seconds, consumers)
        return [finish[r.batch] for r in self.real if r.batch is not None]


def fifo_finish_times(durations: Sequence[float], consumers: int) -> list[float]:
    """When each of a queue's invocations ends, `consumers` running at once and taking the
    batches in queue order, each as long as it took (all messages queued at 0).
    """
    free = [0.0] * consumers
    finish = []
    for duration in durations:
        start = heapq.heappop(free)
        finish.append(start + duration)
        heapq.heappush(free, start + duration)
    return finish


@dataclass
class Lane:
    """One queue and its event source mapping on the virtual timeline."""

    name: str
    url: str
    arn: str
    free: list[float]  # when each of its slots is free (a heap)
    queued: deque[float] = field(default_factory=deque)  # arrival times of messages not yet received
    invocations: int = 0

    def next_start(self) -> float | None:
        """When its next invocation can start (a slot free and a message there), None if empty."""
        return max(self.free[0], self.queued[0]) if self.queued else None


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


def sqs_records(messages: Sequence[dict[str, Any]], queue_arn: str) -> dict[str, Any]:
    """One event-source batch: SQS's messages as the mapping hands them to Lambda."""
    return {
        "Records": [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": dict(m.get("Attributes") or {}),
                "messageAttributes": {},
                "md5OfBody": m.get("MD5OfBody", ""),
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": "us-east-1",
            }
            for m in messages
        ]
    }


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
def account() -> Iterator[tuple[Any, Any, Any, Any]]:
    """moto's EC2, DynamoDB (the idempotency and state tables), SQS and EventBridge."""
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
        clients = (boto3.client(name, region_name="us-east-1") for name in ("ec2", "sqs", "events"))
        ec2, sqs, events = clients
        yield ec2, dynamodb, sqs, events


def queues_and_rules(sqs: Any, events: Any, layout: str, concurrency: int) -> dict[str, Lane]:
    """The queues and the six rules of `layout` in moto; the lanes by queue name. A long
    visibility timeout: the bench deletes what an invocation handled, and a record handed back
    is a failure it reports, not one it waits 20 s to see again.
    """
    from nodewright.engine.interruption.rules import interruption_rules, routes_to_priority_queue

    names = (MAIN_QUEUE, PRIORITY_QUEUE) if layout == PRIORITY else (MAIN_QUEUE,)
    lanes: dict[str, Lane] = {}
    for name in names:
        url = sqs.create_queue(QueueName=name, Attributes={"VisibilityTimeout": "3600"})["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        lanes[name] = Lane(name, url, arn, [0.0] * concurrency)
    for rule_id, pattern in interruption_rules().items():
        lane = lanes[PRIORITY_QUEUE] if layout == PRIORITY and routes_to_priority_queue(pattern) else lanes[MAIN_QUEUE]
        events.put_rule(Name=rule_id, EventPattern=json.dumps(pattern), State="ENABLED")
        events.put_targets(Rule=rule_id, Targets=[{"Id": "queue", "Arn": lane.arn}])
    return lanes


def run(messages: int = 10_000, seed: int = 29, layout: str = PRIORITY, concurrency: int = 10) -> Result:
    """Deliver the flood in `layout` and check it (module docstring); `concurrency`: each priority
    layout event source's maximum (the one-queue layout runs one consumer, `Result.waits` lays its
    batches onto more).
    """
    if layout not in (ONE_QUEUE, PRIORITY):
        raise ValueError(f"layout {layout!r}: expected {ONE_QUEUE!r} or {PRIORITY!r}")
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

    with account() as (ec2, dynamodb, sqs, events):
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
        names = {instance_id: f"real-{i}" for i, instance_id in enumerate(real)}
        lanes = queues_and_rules(sqs, events, layout, 1 if layout == ONE_QUEUE else concurrency)
        main_lane = lanes[MAIN_QUEUE]
        real_lane = lanes.get(PRIORITY_QUEUE, main_lane)
        arrivals: list[RealEvent] = []
        tally = {"sent": 0, "received": 0}  # forged messages sent to and received from the main queue

        def put_real(instance_id: str, at: float) -> None:
            """A real event through EventBridge, as EC2 sends it; the rules route it."""
            detail = {"instance-id": instance_id, "state": "stopping"}
            entry = {
                "Time": datetime.fromtimestamp(clock.now() - 1, UTC),
                "Source": "aws.ec2",
                "DetailType": STATE_CHANGE,
                "Detail": json.dumps(detail),
                "Resources": [f"arn:aws:ec2:us-east-1:123456789012:instance/{instance_id}"],
            }
            assert events.put_events(Entries=[entry])["FailedEntryCount"] == 0
            flood_queued = tally["sent"] - tally["received"]
            arrivals.append(RealEvent(instance_id, real_lane.name, len(real_lane.queued), flood_queued, at))
            real_lane.queued.append(at)

        # The queue's contents: in the one-queue layout the real events at their places in it; in
        # the priority layout only the flood, the real events come later (`triggers`).
        forged = [body for position, body in enumerate(queue.bodies) if position not in queue.real]
        triggers: deque[tuple[int, str]] = deque()
        pending: list[str] = []  # forged bodies not yet sent, in order (sent 10 to a call)

        def send_pending() -> None:
            for first in range(0, len(pending), BATCH):
                entries = [{"Id": str(i), "MessageBody": b} for i, b in enumerate(pending[first : first + BATCH])]
                if sqs.send_message_batch(QueueUrl=main_lane.url, Entries=entries).get("Failed"):
                    raise RuntimeError("SQS refused part of the flood")
            main_lane.queued.extend([0.0] * len(pending))
            tally["sent"] += len(pending)
            pending.clear()

        for position, body in enumerate(queue.bodies):
            if position in queue.real:
                send_pending()  # what is ahead of it, first
                if layout == ONE_QUEUE:
                    put_real(queue.real[position], 0.0)
                else:
                    triggers.append((tally["sent"], queue.real[position]))
                continue
            pending.append(json.dumps(body, separators=(",", ":")))
        send_pending()
        if tally["sent"] != len(forged):
            raise RuntimeError(f"{tally['sent']} forged messages sent, {len(forged)} meant")

        batch_seconds: list[float] = []
        failed = 0
        start, cpu = time.perf_counter(), time.process_time()
        try:
            while True:
                ready = [(t, lane.name) for lane in lanes.values() if (t := lane.next_start()) is not None]
                if not ready:
                    break
                at, name = min(ready)
                lane = lanes[name]
                reply = sqs.receive_message(QueueUrl=lane.url, MaxNumberOfMessages=BATCH, AttributeNames=["All"])
                got = reply.get("Messages") or []
                if not got:
                    raise RuntimeError(f"{name}: {len(lane.queued)} messages expected, SQS returned none")
                heapq.heappop(lane.free)
                for _ in got:
                    lane.queued.popleft()
                if lane is main_lane:
                    tally["received"] += sum(1 for m in got if not _is_real(m, names))
                    # The priority layout: a real event arrives once the consumers took this much.
                    while triggers and tally["received"] >= triggers[0][0]:
                        put_real(triggers.popleft()[1], at)
                began = time.perf_counter()
                response = interruption_handler.handler(sqs_records(got, lane.arn), Context())
                took = time.perf_counter() - began
                heapq.heappush(lane.free, at + took)
                if lane is main_lane:
                    batch_seconds.append(took)
                failures = {str(f["itemIdentifier"]) for f in response.get("batchItemFailures") or ()}
                failed += len(failures)
                handled = [m for m in got if m["MessageId"] not in failures]
                if handled:
                    sqs.delete_message_batch(
                        QueueUrl=lane.url,
                        Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(handled)],
                    )
                for m in got:
                    if _is_real(m, names):
                        instance_id = json.loads(m["Body"])["detail"]["instance-id"]
                        for event_ in arrivals:
                            if event_.instance_id == instance_id and event_.handled is None:
                                event_.handled, event_.batch = at + took, lane.invocations
                                event_.invocation_seconds = took
                lane.invocations += 1
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
        for event_ in arrivals:
            if event_.handled is None:
                problems.append(f"the real event for {names[event_.instance_id]} was never delivered")
        if len(arrivals) != len(real):
            problems.append(f"{len(arrivals)} real events put on the bus, {len(real)} meant")
        return Result(
            layout,
            concurrency,
            messages,
            seconds,
            cpu,
            batch_seconds,
            counts,
            queue.expected,
            failed,
            arrivals,
            problems,
        )


def _is_real(message: dict[str, Any], real: dict[str, str]) -> bool:
    """True for one of the real events (a state change of one of the `real` instances)."""
    body = json.loads(message["Body"])
    return body.get("detail-type") == STATE_CHANGE and body.get("detail", {}).get("instance-id") in real


def _wait(seconds: float) -> str:
    past = (
        " (past the queue's 300 s retention)"
        if seconds > 300
        else (" (past a spot warning's 120 s notice)" if seconds > SPOT_NOTICE_SECONDS else "")
    )
    return f"{seconds:.1f} s{past}"


def report(result: Result) -> str:
    """The run's figures and verdict, in plain lines."""
    batches = sorted(result.batch_seconds)
    p99 = batches[min(len(batches) - 1, int(0.99 * len(batches)))]
    consumers = "one invocation" if result.layout == ONE_QUEUE else f"up to {result.concurrency} per queue"
    lines = [
        f"layout {result.layout}: {result.messages} messages, {len(batches)} batches of up to {BATCH} on the main "
        f"queue, {consumers}; {result.seconds:.1f} s wall, one invocation after another here (this process's CPU "
        f"{result.cpu_seconds:.1f} s, moto and the API emulator included)",
        f"per batch: p50 {statistics.median(batches):.3f} s, p99 {p99:.3f} s, max {batches[-1]:.3f} s",
        "sent: " + ", ".join(f"{k} {v}" for k, v in result.expected.items()),
        "counted: " + ", ".join(f"{k} {v:.0f}" for k, v in result.counts.items()),
        f"records handed back failed: {result.failed}",
    ]
    if result.layout == ONE_QUEUE:
        depths = ", ".join(f"{r.ahead:,}" for r in result.real)
        lines.append(f"real events {depths} messages deep in the one queue waited:")
        for n in CONSUMERS:
            how = "measured" if n == 1 else "the measured batch times laid onto parallel invocations"
            waits = ", ".join(_wait(w) for w in result.waits(n))
            lines.append(f"  {n} consumer{'s' if n > 1 else ''} ({how}): {waits}")
    else:
        lines.append("real events on the priority queue, the flood on the main queue:")
        for r in result.real:
            waited = "never handled" if r.waited is None else _wait(r.waited)
            lines.append(
                f"  arrived with {r.flood_queued:,} forged messages queued on the main queue and {r.ahead} ahead "
                f"of it on its own: waited {waited}"
            )
    lines.append(
        "OK: nothing lost, nothing moved, every real event acted on"
        if not result.problems
        else "PROBLEMS:\n  " + "\n  ".join(result.problems)
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.hostile_flood", description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument(
        "--layout", choices=(ONE_QUEUE, PRIORITY, "both"), default="both", help="which layout(s) to run (default both)"
    )
    parser.add_argument(
        "--concurrency", type=int, default=10, help="each event source's maximum concurrency, priority layout"
    )
    args = parser.parse_args(argv)
    import logging

    logging.disable(logging.WARNING)
    layouts = (ONE_QUEUE, PRIORITY) if args.layout == "both" else (args.layout,)
    problems = False
    for layout in layouts:
        result = run(args.messages, args.seed, layout, args.concurrency)
        print(report(result), flush=True)
        problems = problems or bool(result.problems)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
