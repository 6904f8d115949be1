"""Interruption Lambda: SQS batches of EC2/Health events -> cordon, drain, replace, clean up.

Thin by design: build the controller once per cold start, then hand each record to it through a
Powertools BatchProcessor (one failing record is reported in batchItemFailures; the others are
not redelivered) and the event-id deduplicator (a redelivered or duplicated event acts once).
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

logger = Logger(service="interruption")
metrics = Metrics(namespace="Nodewright", service="interruption")
# Never raise when every record failed: report them all, so SQS redelivers only those.
processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
_once: EventDeduplicator | None = None


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
        return once(record.body)

    response = process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
    return dict(response)
