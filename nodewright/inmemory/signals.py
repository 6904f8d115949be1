"""In-memory stand-ins for the interruption function's outgoing signals (tests, the simulator).

`RecordingContinuations` keeps each delayed event with the time it becomes due; `due(now)` hands
out those whose delay has passed, as SQS would deliver them. `RecordingTrigger` records each
provisioner request and calls an optional hook (the simulator starts a provisioner run there).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from nodewright.ports import Clock


@dataclass
class RecordingContinuations:
    """Continuations (nodewright.ports) kept in a list."""

    clock: Clock
    sent: list[tuple[float, dict[str, Any]]] = field(default_factory=list)

    def send(self, event: Mapping[str, Any], delay: float) -> None:
        """Keep `event`, due `delay` seconds from now."""
        self.sent.append((self.clock.now() + delay, dict(event)))

    def due(self, now: float) -> list[dict[str, Any]]:
        """Remove and return the events due at `now`, in due order."""
        ready = sorted((item for item in self.sent if item[0] <= now), key=lambda item: item[0])
        self.sent = [item for item in self.sent if item[0] > now]
        return [event for _, event in ready]


@dataclass
class RecordingTrigger:
    """ProvisionerTrigger (nodewright.ports) that records requests with their time."""

    clock: Clock
    on_request: Callable[[str], None] | None = None
    requests: list[tuple[float, str]] = field(default_factory=list)

    def request(self, reason: str) -> None:
        """Record the request; call the hook if any."""
        self.requests.append((self.clock.now(), reason))
        if self.on_request is not None:
            self.on_request(reason)
