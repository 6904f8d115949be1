"""Act once per event: Powertools idempotency on the DynamoDB idempotency table.

Role: `EventDeduplicator(act, table=...)` wraps `act(message) -> dict` so that an event already
handled returns the stored result instead of acting again: SQS delivers at least once,
EventBridge may publish twice, and a retried batch redelivers records already done. It is given
each body as the handler parsed it, once (`engine.interruption.receive`): the event and its
Message, or the MalformedEvent it raised. For an event that came through an SNS topic, the event
inside the notification is the one keyed. A failed `act` leaves no record, so its retry acts
again. Only bodies that parse as events are keyed: a malformed body that happens to carry a real
event's `id` must neither be dropped as that event's duplicate nor make the real event look
handled.

The key is the event's id AND its content (`event_key`), not the id alone: ids are predictable
(a drain continuation's is `<event id>#<instance>#<attempt>`), and anyone allowed to send to the
queue could otherwise send a message carrying the next real id, have it stored as done, and so
drop the real one. With the content in the key, a forged message is a different event: it is
handled on its own (and rejected there), and the real one still acts. A drain continuation's time
is left out of its key: a redelivered invocation sends the same continuation again a moment
later, and that copy must be dropped, or one drain forks into two chains.

A lost answer on the in-progress write (the write happened, its response did not arrive, and the
SDK's retry then meets its own record) must not fail the record against its own lock. Each call
writes an owner token into its in-progress record (`OwnedLocks`, a wrapper of the DynamoDB client
that Powertools is given), and a conditional write that fails on a record carrying this call's
token counts as written.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import boto3
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)

from nodewright.engine.interruption import MalformedEvent, Message, Received
from nodewright.engine.interruption.messages import CONTINUATION_SOURCE

# Acts on one SQS body: its Message, or the MalformedEvent it is.
Act = Callable[[Message | MalformedEvent], dict[str, Any]]

OWNER_ATTRIBUTE = "owner"
INPROGRESS = "INPROGRESS"
_CONDITION_FAILED = "ConditionalCheckFailedException"


def event_key(event: Mapping[str, Any]) -> str:
    """The deduplication key of `event`: its id and a digest of its content (module docstring)."""
    content = dict(event)
    if content.get("source") == CONTINUATION_SOURCE:
        content.pop("time", None)
    digest = hashlib.sha256(json.dumps(content, sort_keys=True, default=str).encode()).hexdigest()
    return f"{event.get('id', '')}/{digest}"


class OwnedLocks:
    """A DynamoDB client for Powertools whose in-progress records carry the current call's owner
    token; a conditional put that fails on a record with that token was this call's own write
    (its answer lost, the SDK's retry refused), so it succeeds. Every other call passes through.
    """

    def __init__(self, client: Any) -> None:
        self._client = client
        self.owner = ""

    def put_item(self, **request: Any) -> Any:
        """Put `Item`, stamped with the owner token when it is an in-progress record."""
        item = dict(request.get("Item") or {})
        if self.owner and item.get("status", {}).get("S") == INPROGRESS:
            item[OWNER_ATTRIBUTE] = {"S": self.owner}
            request = {**request, "Item": item}
        try:
            return self._client.put_item(**request)
        except Exception as error:
            if not self.owner or not self._own_record(error, request):
                raise
            return {}

    def _own_record(self, error: Exception, request: Mapping[str, Any]) -> bool:
        response = getattr(error, "response", None) or {}
        if response.get("Error", {}).get("Code") != _CONDITION_FAILED:
            return False
        old = response.get("Item")
        if old is None:
            key = {name: value for name, value in request["Item"].items() if name == "id"}
            old = self._client.get_item(TableName=request["TableName"], Key=key, ConsistentRead=True).get("Item")
        return bool(old) and old.get(OWNER_ATTRIBUTE, {}).get("S") == self.owner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


class EventDeduplicator:
    """Runs `act` at most once per event (see the module docstring)."""

    def __init__(self, act: Act, *, table: str, client: Any = None, ttl_seconds: int = 3600) -> None:
        self.config = IdempotencyConfig(event_key_jmespath="key", expires_after_seconds=ttl_seconds)
        self._locks = OwnedLocks(client if client is not None else boto3.client("dynamodb"))
        store = DynamoDBPersistenceLayer(table_name=table, boto3_client=self._locks)
        self._act = act
        self._once: Callable[..., dict[str, Any]] = idempotent_function(
            data_keyword_argument="keyed", persistence_store=store, config=self.config
        )(self._run)

    def _run(self, keyed: dict[str, Any]) -> dict[str, Any]:
        message: Message = keyed["message"]
        return self._act(message)

    def __call__(self, parsed: Received | MalformedEvent) -> dict[str, Any]:
        """Handle one SQS body as the handler parsed it: deduplicated on its event's key when it
        is an event; otherwise passed straight to `act` (which reports it malformed), never
        recorded.
        """
        if isinstance(parsed, MalformedEvent):
            return self._act(parsed)
        self._locks.owner = uuid.uuid4().hex
        try:
            # Only the key is hashed and stored; the Message is handed to `act` as it is.
            return self._once(keyed={"key": event_key(parsed.event), "message": parsed.message})
        finally:
            self._locks.owner = ""

    def register(self, context: Any) -> None:
        """Tell Powertools the invocation's context (it bounds in-progress records by the deadline)."""
        self.config.register_lambda_context(context)
