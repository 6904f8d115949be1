"""Real event payloads for the interruption tests, and the SQS -> Lambda envelope around them.

Each `*.json` here is one EventBridge event as AWS documents it (EC2 and AWS Health event
examples), with account 123456789012 and region us-east-1, written for this project from the
documented shapes: every detail-type the queue receives, every instance state, the EC2 Health
event type codes with several affected entities (and the newer `eventScopeCode`, `statusCode` and
entity `status` fields, and the older shape without them), both capacity reservation
detail-types, an instance that is not ours. `sns_spot_interruption_warning.json` is a spot
warning as an SNS topic delivers it to a queue (raw delivery off). `malformed/` holds bodies that
are not events, as raw text. `sqs_envelope.json` is what Lambda receives from the interruption
queue: `Records[]`, each with the event JSON as its `body` string. test_corpus.py drives them all
through the handler; health_public_event.json's type code is illustrative (a PUBLIC EC2
scheduledChange names no resources of the account).

`load(name)` returns a fresh copy of a fixture (mutate it freely); `sqs_event(*bodies)` wraps
event dicts (or raw strings, for malformed bodies) into a Lambda SQS event of the same shape, with
a unique `messageId` per record and a correct `md5OfBody`.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

EVENTS = Path(__file__).parent
ACCOUNT = "123456789012"
REGION = "us-east-1"
QUEUE_ARN = f"arn:aws:sqs:{REGION}:{ACCOUNT}:nodewright-interruption"
# The sender EventBridge shows in SQS attributes when it delivers to a queue.
EVENTBRIDGE_SENDER_ID = "AIDAIEPXSNHTCYJ4QMN5C"
# When a record's body carries no readable `time`: 2026-11-21T10:00:00Z, in milliseconds.
DEFAULT_SENT_MS = 1_795_255_200_000
# EventBridge reaches the queue a moment after the event's time; Lambda polls a moment later.
DELIVERY_DELAY_MS = 412
POLL_DELAY_MS = 23


def load(name: str) -> dict[str, Any]:
    """The event fixture `name` ("spot_interruption_warning", with or without ".json"), freshly read."""
    file = EVENTS / (name if name.endswith(".json") else f"{name}.json")
    event: dict[str, Any] = json.loads(file.read_text())
    return event


def sqs_event(*bodies: dict[str, Any] | str, queue_arn: str = QUEUE_ARN) -> dict[str, Any]:
    """A Lambda SQS event with one record per body: dicts are serialized as EventBridge does
    (compact JSON), strings are sent as they are (for malformed bodies). Shaped like sqs_envelope.json.
    """
    region = queue_arn.split(":")[3] if queue_arn.count(":") >= 5 else REGION
    return {"Records": [_record(body, queue_arn=queue_arn, region=region) for body in bodies]}


def _record(body: dict[str, Any] | str, *, queue_arn: str, region: str) -> dict[str, Any]:
    text = body if isinstance(body, str) else json.dumps(body, separators=(",", ":"))
    sent = _sent_ms(body)
    return {
        "messageId": str(uuid.uuid4()),
        "receiptHandle": _receipt_handle(),
        "body": text,
        "attributes": {
            "ApproximateReceiveCount": "1",
            "SentTimestamp": str(sent),
            "SenderId": EVENTBRIDGE_SENDER_ID,
            "ApproximateFirstReceiveTimestamp": str(sent + POLL_DELAY_MS),
        },
        "messageAttributes": {},
        "md5OfBody": hashlib.md5(text.encode()).hexdigest(),
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    }


def _sent_ms(body: dict[str, Any] | str) -> int:
    time = body.get("time") if isinstance(body, dict) else None
    if not isinstance(time, str):
        return DEFAULT_SENT_MS
    try:
        at = datetime.fromisoformat(time)
        return int(at.replace(tzinfo=at.tzinfo or UTC).timestamp() * 1000) + DELIVERY_DELAY_MS
    except (ValueError, OverflowError):
        return DEFAULT_SENT_MS


def _receipt_handle() -> str:
    # Opaque to us; real handles are long base64 strings starting "AQEB".
    return "AQEB" + uuid.uuid4().hex + uuid.uuid4().hex + "=="
