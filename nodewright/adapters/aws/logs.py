"""The functions' decision records and Lambda REPORT lines, read back with CloudWatch Logs Insights.

Role: what `nodewright explain` and `nodewright status` know about past invocations. The log
groups are the ones the stack's saved queries (`Nodewright/<cluster>/...`, created by
`infra.constructs.monitoring`) are defined over (DescribeQueryDefinitions); where that call is not
allowed or finds none, the log groups of the stack itself (DescribeStackResources). One
Insights query over them returns the raw records (`@message`), which are parsed here:

  * decision records: the Powertools JSON lines that carry a `decision` field, returned as dicts
    with `function` (the record's `service`) and `at` (the record's own `at` when it has one,
    else the event's timestamp) added;
  * REPORT lines: `Billed Duration` and `Memory Size` of each invocation, for what the functions
    cost, with the function from the log group;
  * errors: a Powertools record of level ERROR without a decision becomes decision `error`, a
    Lambda "Task timed out" line decision `timeout` (both level ERROR), for `status`.

A query runs until it completes or `timeout` seconds pass (then what it has is returned and
`complete` is False). Failures of AWS calls propagate as botocore errors for the caller to say.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

_REPORT = re.compile(r"Billed Duration: (?P<billed>[\d.]+) ms\s+Memory Size: (?P<memory>\d+) MB")
_LOG_GROUP = "AWS::Logs::LogGroup"
LIMIT = 10_000  # rows one Insights query returns at most
QUERY = f"fields @timestamp, @message, @log | sort @timestamp desc | limit {LIMIT}"


@dataclass(frozen=True, slots=True)
class Invocation:
    """One Lambda REPORT line: the function, when, billed milliseconds and memory in MB."""

    function: str
    at: float
    billed_ms: float
    memory_mb: int


@dataclass
class LogRead:
    """What one query returned."""

    decisions: list[dict[str, Any]] = field(default_factory=list)
    invocations: list[Invocation] = field(default_factory=list)
    log_groups: list[str] = field(default_factory=list)
    complete: bool = True
    # Bytes of the log events read (what CloudWatch Logs billed to ingest them); `rows` read, of
    # at most the query's limit: at the limit, the window held more and the figures are low.
    bytes: int = 0
    rows: int = 0


class DecisionLog:
    """Reads the functions' logs of one installation (see the module docstring)."""

    def __init__(
        self,
        logs: Any,
        *,
        cluster: str,
        stack: str | None = None,
        cloudformation: Any = None,
        timeout: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._logs = logs
        self._cluster = cluster
        self._stack = stack or f"Nodewright-{cluster}"
        self._cloudformation = cloudformation
        self._timeout = timeout
        self._sleep = sleep

    def log_groups(self) -> list[str]:
        """The log groups the saved queries cover, else the stack's log groups (sorted)."""
        groups: set[str] = set()
        try:
            answer = self._logs.describe_query_definitions(queryDefinitionNamePrefix=f"Nodewright/{self._cluster}/")
            for definition in answer.get("queryDefinitions") or ():
                groups.update(definition.get("logGroupNames") or ())
        except Exception:  # not allowed, or not offered (a local emulator): the stack says the same
            groups = set()
        if not groups and self._cloudformation is not None:
            resources = self._cloudformation.describe_stack_resources(StackName=self._stack)["StackResources"]
            groups = {r["PhysicalResourceId"] for r in resources if r["ResourceType"] == _LOG_GROUP}
        return sorted(groups)

    def read(self, start: float, end: float) -> LogRead:
        """The decision records and REPORT lines between `start` and `end` (epoch seconds)."""
        result = LogRead(log_groups=self.log_groups())
        if not result.log_groups:
            return result
        query = self._logs.start_query(
            logGroupNames=result.log_groups, startTime=int(start), endTime=int(end) + 1, queryString=QUERY
        )["queryId"]
        waited = 0.0
        while True:
            answer = self._logs.get_query_results(queryId=query)
            if answer.get("status") not in ("Scheduled", "Running"):
                break
            if waited >= self._timeout:
                result.complete = False
                break
            self._sleep(0.5)
            waited += 0.5
        for row in answer.get("results") or ():
            fields = {f["field"]: f.get("value", "") for f in row}
            result.rows += 1
            result.bytes += len(fields.get("@message", "").encode())
            _parse(fields, result)
        result.decisions.sort(key=lambda d: float(d.get("at") or 0.0))
        result.invocations.sort(key=lambda i: i.at)
        return result


def _parse(fields: dict[str, str], into: LogRead) -> None:
    message = fields.get("@message", "")
    at = _timestamp(fields.get("@timestamp", ""))
    report = _REPORT.search(message) if message.startswith("REPORT") else None
    if report is not None:
        function = _function_of(fields.get("@log", ""))
        into.invocations.append(Invocation(function, at, float(report["billed"]), int(report["memory"])))
        return
    if "Task timed out" in message:
        function = _function_of(fields.get("@log", ""))
        into.decisions.append({"decision": "timeout", "level": "ERROR", "function": function, "at": at})
        return
    if not message.startswith("{"):
        return
    try:
        record = json.loads(message)
    except ValueError:
        return
    if not isinstance(record, dict):
        return
    if "decision" not in record:
        if str(record.get("level", "")).upper() != "ERROR":
            return
        record["decision"] = "error"  # a handler's logged exception: counted in `status`'s errors
    record.setdefault("function", record.get("service", ""))
    record.setdefault("at", at)
    into.decisions.append(record)


def _timestamp(value: str) -> float:
    """Insights' `@timestamp` ("2026-11-25 08:58:08.123" UTC) or epoch milliseconds, as epoch seconds."""
    if not value:
        return 0.0
    if value.isdigit():
        return int(value) / 1000.0
    from datetime import UTC, datetime

    return datetime.strptime(value[:23], "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=UTC).timestamp()


def _function_of(log_group: str) -> str:
    """The function a log group belongs to, as the stack names it (provisioner, interruption...)."""
    name = log_group.rsplit(":", 1)[-1].rsplit("/", 1)[-1].lower()
    for function in ("provisioner", "interruption", "consolidator"):
        if function in name:
            return function
    return name
