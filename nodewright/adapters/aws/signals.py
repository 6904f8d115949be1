"""The interruption function's two outgoing signals, on AWS.

- `SqsContinuations`: a drain that does not finish in one invocation continues through a message
  to the interruption queue itself, delayed with SQS DelaySeconds (0-900 s), so no Lambda sleeps.
- `LambdaProvisionerTrigger`: replacement capacity is asked for by invoking the provisioner
  function asynchronously (InvocationType Event); its lease makes a concurrent run harmless.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

# SQS rejects DelaySeconds above 15 minutes.
MAX_DELAY_SECONDS = 900


class SqsContinuations:
    """Continuations (nodewright.ports) on an SQS queue."""

    def __init__(self, sqs: Any, queue_url: str) -> None:
        self._sqs = sqs
        self._queue_url = queue_url

    def send(self, event: Mapping[str, Any], delay: float) -> None:
        """Send `event` as the message body, delivered after `delay` seconds (rounded up, capped at 900)."""
        seconds = min(MAX_DELAY_SECONDS, max(0, math.ceil(delay)))
        self._sqs.send_message(QueueUrl=self._queue_url, MessageBody=json.dumps(event), DelaySeconds=seconds)


class LambdaProvisionerTrigger:
    """ProvisionerTrigger (nodewright.ports) through an asynchronous Lambda invoke."""

    def __init__(self, lambda_client: Any, function_name: str) -> None:
        self._lambda = lambda_client
        self._function = function_name

    def request(self, reason: str) -> None:
        """Invoke the provisioner without waiting; the payload says why (it shows in its log)."""
        if not self._function:
            return  # not deployed with a provisioner (e.g. interruption handling alone)
        payload = json.dumps({"source": "nodewright.interruption", "reason": reason}).encode()
        self._lambda.invoke(FunctionName=self._function, InvocationType="Event", Payload=payload)
