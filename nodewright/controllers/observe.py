"""Observers that keep what they are told: for tests, the CLI and the simulator."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class RecordingObserver:
    """An Observer (nodewright.ports) that keeps every decision and metric in lists.

    With `now`, `times[i]` is when `decisions[i]` was kept, as CloudWatch stamps each log line the
    functions write (`adapters.aws.logs` reads it back as `at`): the simulator's `nodewright
    status` then knows when every function last decided. The stamp is kept beside the record, not
    in it: the record is what the function logs (and what its log bytes are counted from).
    """

    decisions: list[dict[str, object]] = field(default_factory=list)
    metrics: list[tuple[str, float, str, dict[str, str]]] = field(default_factory=list)
    now: Callable[[], float] | None = None
    times: list[float] = field(default_factory=list)

    def decision(self, kind: str, **fields: object) -> None:
        """Keep one decision as a dict with its kind."""
        self.decisions.append({"decision": kind, **fields})
        if self.now is not None:
            self.times.append(self.now())

    def metric(self, name: str, value: float, unit: str = "Count", **dimensions: str) -> None:
        """Keep one data point."""
        self.metrics.append((name, value, unit, dimensions))

    def of(self, kind: str) -> list[dict[str, object]]:
        """The decisions of one kind."""
        return [d for d in self.decisions if d["decision"] == kind]

    def total(self, name: str) -> float:
        """The sum of a metric's data points."""
        return sum(v for n, v, _, _ in self.metrics if n == name)
