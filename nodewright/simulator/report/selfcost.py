"""What Nodewright's own AWS resources cost, from what a simulated run measured.

Role: the `self_cost` block of summary.json and the README's table. The run measures the
quantities AWS bills (through the real handlers against moto, on the virtual clock); this module
only counts them and prices them:

  * Lambda: each invocation's duration on the virtual clock (a provisioner invocation waits for
    pods until its deadline whatever the load) plus the wall time its code ran, which the virtual
    clock does not count (measured on this machine's full core; a Lambda below 1,769 MB has less
    than one vCPU, so this part is an underestimate there), times the function's memory, at the
    arm64 GB-second price, plus the request price;
  * DynamoDB (on-demand): every call the functions made, seen by a botocore hook on the
    simulator's session; read request units from the response size (one per 4 KB, strongly
    consistent, at least one), write request units from the request size (one per 1 KB);
  * SQS: every request the functions sent, plus the event source mapping's long polling, which
    the simulator does not make (AWS: about 5 pollers at one ReceiveMessage per 20 s each);
  * CloudWatch Logs ingestion: each decision record's JSON plus the Powertools envelope, the EMF
    data points and Lambda's START/END/REPORT lines per invocation (sizes as Powertools writes
    them, measured once: see the constants);
  * custom metrics: each distinct (service, name, dimensions) the functions emitted is a metric
    CloudWatch bills every month.

Prices are us-east-1 list prices (November 2025), without the free tier. The month is 730 hours;
a run's figures are scaled from its virtual duration.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

HOURS_PER_MONTH = 730.0
LAMBDA_GB_SECOND_ARM = 0.0000133334
LAMBDA_REQUEST = 0.20 / 1e6
DYNAMO_READ_UNIT = 0.125 / 1e6
DYNAMO_WRITE_UNIT = 0.625 / 1e6
SQS_REQUEST = 0.40 / 1e6
LOGS_PER_GB = 0.50
METRIC_MONTH = 0.30
# The event source mapping's idle long polling: ~5 pollers x 3 ReceiveMessage a minute.
SQS_POLLS_PER_HOUR = 5 * 3 * 60
# Bytes of CloudWatch Logs per item, as Powertools (3.x, measured here by formatting a record
# through `Logger.inject_lambda_context` and serializing a `Metrics` set) and Lambda write them:
# the envelope around a decision record (level, location, timestamp, service, cold_start,
# function name/arn/memory, request id), the EMF object an invocation flushes and each data
# point in it, and the START + END + REPORT platform lines of an invocation.
LOG_ENVELOPE_BYTES = 355
EMF_FLUSH_BYTES = 220
EMF_POINT_BYTES = 70
PLATFORM_LINES_BYTES = 360

_DYNAMO_WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"})


@dataclass
class AwsCalls:
    """DynamoDB and SQS calls as a botocore hook saw them (`before_call` / `after_call`)."""

    dynamo_reads: int = 0
    dynamo_read_units: int = 0
    dynamo_writes: int = 0
    dynamo_write_units: int = 0
    sqs_requests: int = 0
    by_operation: dict[str, int] = field(default_factory=dict)

    def before_call(self, model: Any = None, params: Mapping[str, Any] | None = None, **_: Any) -> None:
        """botocore `before-call`: count the request, and a write's units by its size."""
        service = model.service_model.service_name if model is not None else ""
        name = f"{service}.{model.name}" if model is not None else "?"
        self.by_operation[name] = self.by_operation.get(name, 0) + 1
        if service == "sqs":
            self.sqs_requests += 1
        elif service == "dynamodb" and model.name in _DYNAMO_WRITES:
            body = (params or {}).get("body") or b""
            self.dynamo_writes += 1
            self.dynamo_write_units += max(1, math.ceil(len(body) / 1024))

    def after_call(self, model: Any = None, http_response: Any = None, **_: Any) -> None:
        """botocore `after-call`: a read's units by the size of what it returned."""
        if model is None or model.service_model.service_name != "dynamodb" or model.name in _DYNAMO_WRITES:
            return
        size = len(getattr(http_response, "content", b"") or b"")
        self.dynamo_reads += 1
        self.dynamo_read_units += max(1, math.ceil(size / 4096))

    def register(self, events: Any) -> None:
        """Hook into a boto3 session's (or client's) event system."""
        events.register("before-call.dynamodb", self.before_call)
        events.register("before-call.sqs", self.before_call)
        events.register("after-call.dynamodb", self.after_call)


@dataclass(frozen=True, slots=True)
class Invocation:
    """One function invocation: its function, billed seconds and memory."""

    function: str
    seconds: float
    memory_mb: int


def self_cost(
    *,
    hours: float,
    invocations: Iterable[Invocation],
    calls: AwsCalls,
    decisions: Mapping[str, Iterable[Mapping[str, Any]]],
    metrics: Mapping[str, Iterable[tuple[str, float, str, Mapping[str, str]]]],
    compute: Mapping[str, tuple[float, int]] | None = None,
) -> dict[str, Any]:
    """The monthly bill of Nodewright's own resources, scaled from a run of `hours`.

    `decisions` and `metrics` are each function's records (a RecordingObserver's), keyed by
    function name; `compute` is each function's (wall seconds its code ran, memory MB).
    """
    if hours <= 0:
        raise ValueError("a run of no time has no monthly cost")
    scale = HOURS_PER_MONTH / hours
    gb_seconds: dict[str, float] = {}
    counts: dict[str, int] = {}
    for inv in invocations:
        gb_seconds[inv.function] = gb_seconds.get(inv.function, 0.0) + inv.seconds * inv.memory_mb / 1024
        counts[inv.function] = counts.get(inv.function, 0) + 1
    for function, (seconds, memory_mb) in (compute or {}).items():
        gb_seconds[function] = gb_seconds.get(function, 0.0) + seconds * memory_mb / 1024
    log_bytes = (PLATFORM_LINES_BYTES + EMF_FLUSH_BYTES) * sum(counts.values())
    for records in decisions.values():
        log_bytes += sum(LOG_ENVELOPE_BYTES + len(json.dumps(r, default=str)) for r in records)
    distinct: set[tuple[str, str, tuple[tuple[str, str], ...]]] = set()
    for function, points in metrics.items():
        for name, _, _, dims in points:
            log_bytes += EMF_POINT_BYTES
            distinct.add((function, name, tuple(sorted(dims.items()))))
    polls = SQS_POLLS_PER_HOUR * hours if "interruption" in decisions else 0.0
    lambda_usd = sum(gb_seconds.values()) * LAMBDA_GB_SECOND_ARM + sum(counts.values()) * LAMBDA_REQUEST
    dynamo_usd = calls.dynamo_read_units * DYNAMO_READ_UNIT + calls.dynamo_write_units * DYNAMO_WRITE_UNIT
    sqs_usd = (calls.sqs_requests + polls) * SQS_REQUEST
    logs_usd = log_bytes / 1e9 * LOGS_PER_GB
    month = {
        "lambda": lambda_usd * scale,
        "dynamodb": dynamo_usd * scale,
        "sqs": sqs_usd * scale,
        "logs": logs_usd * scale,
        "metrics": len(distinct) * METRIC_MONTH,  # billed per metric-month, whatever the run's length
    }
    return {
        "usd_per_month": round(sum(month.values()), 2),
        "by_item_usd_per_month": {k: round(v, 2) for k, v in month.items()},
        "lambda_gb_seconds_per_month": {k: round(v * scale) for k, v in sorted(gb_seconds.items())},
        "invocations_per_month": {k: round(v * scale) for k, v in sorted(counts.items())},
        "dynamodb_per_month": {
            "reads": round(calls.dynamo_reads * scale),
            "read_units": round(calls.dynamo_read_units * scale),
            "writes": round(calls.dynamo_writes * scale),
            "write_units": round(calls.dynamo_write_units * scale),
        },
        "sqs_requests_per_month": round((calls.sqs_requests + polls) * scale),
        "log_gb_per_month": round(log_bytes * scale / 1e9, 3),
        "custom_metrics": len(distinct),
    }
