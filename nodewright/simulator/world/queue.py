"""The SQS event source mappings of the interruption function, one per queue: receive due messages
in batches, invoke the handler (within that mapping's maximum concurrency), delete what it did not
report in `batchItemFailures`; a failed invocation deletes nothing, so its messages come back at
their visibility deadline (the function's timeout + the margin, nodewright/config/timings.py).
Receives long-poll: a message is received as soon as it is due. Duplicate and reordered
deliveries (faults) are applied here.

Two queues, as the stack deploys them (infra/constructs/interruption.py): the priority queue gets
EC2's own events (the rules `routes_to_priority_queue` picks), the main queue AWS Health's and the
function's drain continuations. Each mapping counts only its own invocations against its maximum
concurrency (the scenario's `concurrency` for the main queue, `priority_concurrency` for the
priority queue), so a full main queue never holds back the priority queue.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from nodewright.ports import Clock
from nodewright.simulator.scenario import Scenario
from nodewright.simulator.standins.account import PRIORITY_QUEUE, QUEUE, Account
from nodewright.simulator.standins.faults import Faults
from nodewright.simulator.standins.lambdas import ACCOUNT, REGION, EventLoop, Invocation, Lambdas
from nodewright.simulator.world.invocations import Invocations


@dataclass
class _Mapping:
    """One event source mapping: its queue and the invocations it started (running ones count)."""

    name: str  # moto's queue name
    url: str
    arn: str
    concurrency: int
    queue: Any = None  # moto's queue, once the interruption function is deployed
    check: float | None = None  # the wake-up on the loop for the next due message
    invocations: list[Invocation] = field(default_factory=list)


class QueueSource:
    """The event source mappings (module docstring): they poll once the interruption function is
    deployed, the priority queue's first.
    """

    def __init__(
        self,
        *,
        scenario: Scenario,
        clock: Clock,
        loop: EventLoop,
        lambdas: Lambdas,
        faults: Faults,
        account: Account,
        invocations: Invocations,
    ) -> None:
        self._scenario = scenario
        self._clock = clock
        self._loop = loop
        self._lambdas = lambdas
        self._faults = faults
        self._account = account
        self._invocations = invocations
        self._mappings: list[_Mapping] = []

    def poll(self) -> bool:
        """Invoke the interruption handler with each queue's due messages; True when it ran."""
        ran = False
        for mapping in self._deployed():
            ran = self._poll(mapping) or ran
        return ran

    def _deployed(self) -> list[_Mapping]:
        """The mappings, once the interruption function is deployed (none before)."""
        if not self._mappings and self._invocations.deployed("interruption"):
            from moto.sqs.models import sqs_backends

            queues = sqs_backends[ACCOUNT][REGION].queues
            settings, account = self._scenario.interruption, self._account
            self._mappings = [
                _Mapping(
                    PRIORITY_QUEUE,
                    account.priority_queue_url,
                    account.priority_queue_arn,
                    settings.priority_concurrency,
                    queues[PRIORITY_QUEUE],
                ),
                _Mapping(QUEUE, account.queue_url, account.queue_arn, settings.concurrency, queues[QUEUE]),
            ]
        return self._mappings

    def _poll(self, mapping: _Mapping) -> bool:
        if not mapping.queue._messages:
            return False
        now = self._clock.now()
        # Long polling, as the event source mapping's pollers do: a message is received the
        # moment it is due (sent, its delay over, or its visibility deadline passed), whatever
        # else is in flight. `check` only keeps one wake-up per due time on the loop.
        due = self._next_delivery(mapping)
        if due is None:
            mapping.check = None
            return False
        if due > now:
            if mapping.check is None or due < mapping.check or mapping.check <= now:
                mapping.check = due
                self._loop.at(due, lambda: None)  # a step at `due`, so the world polls again then
            return False
        running = set(map(id, self._lambdas.running))
        mapping.invocations = [i for i in mapping.invocations if id(i) in running]
        if len(mapping.invocations) >= mapping.concurrency:
            return False
        response = self._account.sqs.receive_message(
            QueueUrl=mapping.url,
            MaxNumberOfMessages=self._scenario.interruption.batch_size,
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
        )
        messages = response.get("Messages") or []
        if not messages:
            return False
        records: list[Mapping[str, Any]] = [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": dict(m.get("Attributes") or {}),
                "messageAttributes": {},
                "md5OfBody": m.get("MD5OfBody", ""),
                "eventSource": "aws:sqs",
                "eventSourceARN": mapping.arn,
                "awsRegion": REGION,
            }
            for m in messages
        ]
        records, duplicates = self._faults.deliveries(
            records, lambda record, seconds: self._hold(mapping, record, seconds)
        )
        for delay, record in duplicates:
            # A second delivery of the same message: nothing to acknowledge (its receipt is spent).
            self._loop.at(now + delay, partial(self._duplicate, mapping, record))
        if not records:
            return False
        batch = records
        mapping.invocations.append(
            self._invocations.invoke(
                "interruption", {"Records": list(batch)}, lambda done: self._acknowledge(mapping, done, batch)
            )
        )
        return True

    def _duplicate(self, mapping: _Mapping, record: Mapping[str, Any]) -> None:
        """Deliver `record` again (it counts against its mapping's concurrency while it runs)."""
        mapping.invocations.append(self._invocations.invoke("interruption", {"Records": [record]}))

    def _hold(self, mapping: _Mapping, record: Mapping[str, Any], seconds: float) -> None:
        """Deliver a received message `seconds` later instead, after others: put back as a delayed
        copy, so holding it does not count as a receive (the redrive policy counts those).
        """
        sqs = self._account.sqs
        sqs.delete_message(QueueUrl=mapping.url, ReceiptHandle=str(record["receiptHandle"]))
        sqs.send_message(QueueUrl=mapping.url, MessageBody=str(record["body"]), DelaySeconds=min(900, round(seconds)))

    @staticmethod
    def _next_delivery(mapping: _Mapping) -> float | None:
        times = [max(m.visible_at, m.delayed_until) / 1000 for m in list(mapping.queue._messages)]
        if not times:
            return None
        # moto makes a message visible strictly after its time (ms resolution).
        return float(min(times)) + 0.001

    def _acknowledge(self, mapping: _Mapping, invocation: Invocation, records: Sequence[Mapping[str, Any]]) -> None:
        """Delete the batch's messages except those the handler reported failed (as the ESM does);
        a failed or stopped invocation deletes nothing, so all come back after the visibility timeout.
        """
        if invocation.error is not None or invocation.stopped or not isinstance(invocation.result, Mapping):
            return
        failed = {str(item.get("itemIdentifier")) for item in invocation.result.get("batchItemFailures") or ()}
        entries = [
            {"Id": str(index), "ReceiptHandle": str(record["receiptHandle"])}
            for index, record in enumerate(records)
            if record["messageId"] not in failed
        ]
        if entries:
            self._account.sqs.delete_message_batch(QueueUrl=mapping.url, Entries=entries)
