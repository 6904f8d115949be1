"""The SQS event source mapping of the interruption function: receive due messages in batches,
invoke the handler (within its concurrency), delete what it did not report in
`batchItemFailures`; a failed invocation deletes nothing, so its messages come back at their
visibility deadline (the function's timeout + the margin, nodewright/config/timings.py). Receives
long-poll: a message is received as soon as it is due. Duplicate and reordered deliveries (faults)
are applied here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

from nodewright.inmemory.clock import VirtualClock
from nodewright.simulator.scenario import Scenario
from nodewright.simulator.standins.account import QUEUE, Account
from nodewright.simulator.standins.faults import Faults
from nodewright.simulator.standins.lambdas import ACCOUNT, REGION, EventLoop, Invocation, Lambdas
from nodewright.simulator.world.invocations import Invocations


class QueueSource:
    """The event source mapping (module docstring): it polls once the interruption function is
    deployed.
    """

    def __init__(
        self,
        *,
        scenario: Scenario,
        clock: VirtualClock,
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
        self._queue: Any = None  # moto's queue, once the interruption function is deployed
        self._check: float | None = None  # the wake-up on the loop for the next due message

    def poll(self) -> bool:
        """Invoke the interruption handler with due messages; True when it ran."""
        queue = self._moto_queue()
        if queue is None or not queue._messages:
            return False
        now = self._clock.now()
        # Long polling, as the event source mapping's pollers do: a message is received the
        # moment it is due (sent, its delay over, or its visibility deadline passed), whatever
        # else is in flight. `_check` only keeps one wake-up per due time on the loop.
        due = self._next_delivery()
        if due is None:
            self._check = None
            return False
        if due > now:
            if self._check is None or due < self._check or self._check <= now:
                self._check = due
                self._loop.at(due, lambda: None)  # a step at `due`, so the world polls again then
            return False
        settings = self._scenario.interruption
        running = sum(1 for i in self._lambdas.running if i.function == "interruption")
        if running >= settings.concurrency:
            return False
        response = self._account.sqs.receive_message(
            QueueUrl=self._account.queue_url,
            MaxNumberOfMessages=settings.batch_size,
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
                "eventSourceARN": self._account.queue_arn,
                "awsRegion": REGION,
            }
            for m in messages
        ]
        records, duplicates = self._faults.deliveries(records, self._hold)
        for delay, record in duplicates:
            # A second delivery of the same message: nothing to acknowledge (its receipt is spent).
            self._loop.at(now + delay, partial(self._invocations.start, "interruption", {"Records": [record]}))
        if not records:
            return False
        batch = records
        self._invocations.invoke("interruption", {"Records": list(batch)}, lambda done: self._acknowledge(done, batch))
        return True

    def _moto_queue(self) -> Any:
        """moto's interruption queue (its messages' due times are read there), once the
        interruption function is deployed; None before.
        """
        if self._queue is None and self._invocations.deployed("interruption"):
            from moto.sqs.models import sqs_backends

            self._queue = sqs_backends[ACCOUNT][REGION].queues[QUEUE]
        return self._queue

    def _hold(self, record: Mapping[str, Any], seconds: float) -> None:
        """Deliver a received message `seconds` later instead, after others: put back as a delayed
        copy, so holding it does not count as a receive (the redrive policy counts those).
        """
        sqs, queue = self._account.sqs, self._account.queue_url
        sqs.delete_message(QueueUrl=queue, ReceiptHandle=str(record["receiptHandle"]))
        sqs.send_message(QueueUrl=queue, MessageBody=str(record["body"]), DelaySeconds=min(900, round(seconds)))

    def _next_delivery(self) -> float | None:
        times = [max(m.visible_at, m.delayed_until) / 1000 for m in list(self._queue._messages)]
        if not times:
            return None
        # moto makes a message visible strictly after its time (ms resolution).
        return float(min(times)) + 0.001

    def _acknowledge(self, invocation: Invocation, records: Sequence[Mapping[str, Any]]) -> None:
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
            self._account.sqs.delete_message_batch(QueueUrl=self._account.queue_url, Entries=entries)
