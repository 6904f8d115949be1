"""Interruption Lambda: SQS batches of EC2/Health events -> cordon, drain, replace, clean up.

Thin by design: build the controller once per cold start, then hand each record to it through a
Powertools BatchProcessor (one failing record is reported in batchItemFailures; the others are
not redelivered) and the event deduplicator (a redelivered or duplicated event acts once). Each
body is parsed here, once, and what it parsed to handed on (the deduplicator keys on the event,
the controller acts on its Message). Each record first looks at the time left: one that could not
finish before the function's deadline is not started but handed back as a batch item failure, so
SQS redelivers it at once to the next invocation instead of the whole batch timing out.
"""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from nodewright.adapters.idempotency import EventDeduplicator
from nodewright.adapters.powertools import PowertoolsObserver
from nodewright.controllers.assembly import interruption_from_settings
from nodewright.controllers.settings import Settings
from nodewright.engine.interruption import MalformedEvent, Received, receive

logger = Logger(service="interruption")
metrics = Metrics(namespace="Nodewright", service="interruption")
# Never raise when every record failed: report them all, so SQS redelivers only those.
processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
_once: EventDeduplicator | None = None
# Time one record may take at most (a drain step, a few API calls); less than this left: hand it back.
RECORD_TIME_MS = 5_000


class NoTimeLeft(RuntimeError):
    """Raised for a record not started because the invocation is about to end (a batch item failure)."""


def configure(once: EventDeduplicator | None) -> None:
    """Use this deduplicated controller instead of building one from the environment (tests, simulator)."""
    global _once  # noqa: PLW0603 - the one cached controller of this container
    _once = once


@metrics.log_metrics
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Handle one SQS batch; returns the partial-batch response."""
    global _once  # noqa: PLW0603
    if _once is None:
        settings = Settings.from_env(os.environ)
        controller = interruption_from_settings(settings, PowertoolsObserver(logger, metrics))
        _once = EventDeduplicator(controller.process, table=settings.idempotency_table)
    once = _once
    once.register(context)

    def record_handler(record: SQSRecord) -> dict[str, Any]:
        left = context.get_remaining_time_in_millis()
        if left < RECORD_TIME_MS:
            raise NoTimeLeft(f"{left} ms left, a record needs up to {RECORD_TIME_MS} ms: handed back")
        # Parsed here, once: the deduplicator keys on the event, the controller acts on its Message.
        try:
            parsed: Received | MalformedEvent = receive(record.body)
        except MalformedEvent as error:
            parsed = error
        return once(parsed)

    response = process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
    failed = len(response.get("batchItemFailures") or ())
    if failed:
        metrics.add_metric(name="RecordsFailed", unit="Count", value=failed)
    return dict(response)
