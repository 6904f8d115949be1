"""Invoking the functions: EventBridge's scheduled events, the interruption function's asynchronous
invoke of the provisioner, and each invocation's end (errors, timeouts, a busy lease), as Lambda
would run them on the virtual clock (`lambdas.Lambdas`), with the faults that may kill them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from functools import partial
from typing import Any

from nodewright.simulator.standins.lambdas import ACCOUNT, REGION, Invocation
from nodewright.simulator.world.state import WorldState

ASYNC_INVOKE_DELAY = 0.2  # seconds from an asynchronous invoke to the handler starting


class Invocations(WorldState):
    """Starting and finishing invocations (module docstring)."""

    def _scheduled(self, name: str) -> None:
        event = {
            "version": "0",
            "id": f"schedule-{name}-{int(self.clock.now())}",
            "detail-type": "Scheduled Event",
            "source": "aws.events",
            "account": ACCOUNT,
            "time": _iso(self.clock.now()),
            "region": REGION,
            "resources": [f"arn:aws:events:{REGION}:{ACCOUNT}:rule/nodewright-{name}-schedule"],
            "detail": {},
        }
        self._invoke(name, event)

    def _async_invoke(self, function: str, event: dict[str, Any]) -> None:
        self.recorder.replacement_requests.append(self.clock.now())
        if "provisioner" in self.handlers:
            self.loop.at(self.clock.now() + ASYNC_INVOKE_DELAY, partial(self._start, "provisioner", event))

    def _start(self, name: str, event: dict[str, Any]) -> None:
        self._invoke(name, event)

    def _invoke(
        self, name: str, event: dict[str, Any], after: Callable[[Invocation], None] | None = None
    ) -> Invocation:
        self.recorder.invocations[name] += 1
        timeout = getattr(self.scenario, name).timeout
        kill_at = self.faults.kill_at(name, self.clock.now(), timeout)

        def done(invocation: Invocation) -> None:
            self._finished(invocation)
            if after is not None:
                after(invocation)

        invocation = self.lambdas.invoke(name, self.handlers[name], event, timeout, done, kill_at=kill_at)
        if kill_at is not None:
            self.faults.doomed(invocation)
        return invocation

    def _finished(self, invocation: Invocation) -> None:
        self.faults.finished(invocation)
        if invocation.error is not None:
            self.recorder.errors.append(
                {
                    "function": invocation.function,
                    "at": round(invocation.ended - self.scenario.start, 3),
                    "error": f"{type(invocation.error).__name__}: {invocation.error}",
                    "trace": invocation.trace[-4000:],
                }
            )
        if invocation.stopped == "timeout":
            self.recorder.timeouts[invocation.function] += 1
        result = invocation.result
        if isinstance(result, Mapping) and result.get("lease") is False:
            self.recorder.busy[invocation.function] += 1


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
