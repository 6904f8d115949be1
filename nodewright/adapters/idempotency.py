"""Act once per EventBridge event: Powertools idempotency on the DynamoDB idempotency table.

Role: `EventDeduplicator(act, table=...)` wraps `act(event) -> dict` so that an event whose `id`
was already handled returns the stored result instead of acting again: SQS delivers at least
once, EventBridge may publish twice, and a retried batch redelivers records already done. The key
is the EventBridge event `id` inside the SQS body, not the SQS message id (a duplicate event
arrives as a different message), and for an event that came through an SNS topic, the `id` of
the event inside the notification. A failed `act` leaves no record, so its retry acts again.
Only bodies that parse as events are keyed: a malformed body that happens to carry a real event's
`id` must neither be dropped as that event's duplicate nor make the real event look handled.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)

from nodewright.engine.interruption import MalformedEvent, parse, unwrap_sns

# Acts on one SQS body: the raw text when it is not an event, the decoded event otherwise.
Act = Callable[[str | Mapping[str, Any]], dict[str, Any]]


class EventDeduplicator:
    """Runs `act` at most once per event id (see the module docstring)."""

    def __init__(self, act: Act, *, table: str, client: Any = None, ttl_seconds: int = 3600) -> None:
        self.config = IdempotencyConfig(event_key_jmespath="id", expires_after_seconds=ttl_seconds)
        store = DynamoDBPersistenceLayer(table_name=table, boto3_client=client)
        self._act = act
        self._once: Callable[..., dict[str, Any]] = idempotent_function(
            data_keyword_argument="event", persistence_store=store, config=self.config
        )(self._run)

    def _run(self, event: dict[str, Any]) -> dict[str, Any]:
        return self._act(event)

    def __call__(self, body: str) -> dict[str, Any]:
        """Handle one SQS body: deduplicated on its event `id` when it parses as an event;
        otherwise passed straight to `act` (which reports it malformed) and never recorded.
        """
        try:
            parse(body)
        except MalformedEvent:
            return self._act(body)
        # It parsed, so it is a JSON object (an SNS notification holds an event object).
        event = dict(unwrap_sns(json.loads(body)))
        return self._once(event=event)

    def register(self, context: Any) -> None:
        """Tell Powertools the invocation's context (it bounds in-progress records by the deadline)."""
        self.config.register_lambda_context(context)
