"""Invoking the functions: EventBridge's scheduled events, the interruption function's asynchronous
invoke of the provisioner, and each invocation's end (errors, timeouts, a busy lease), as Lambda
would run them on the virtual clock (`standins.lambdas.Lambdas`), with the faults that may kill them.

`SingleFlight` is Lambda's reserved concurrency of 1 for the functions whose settings ask for it
(`FunctionSettings.single_flight`): an event that finds an invocation of the function running is
throttled, and Lambda retries it 1, 2, 4, 8, ... s after its first attempt's throttle until it is
older than its maximum event age (one schedule period, as the stack configures it), then drops it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from functools import partial
from typing import Any

from nodewright.ports import Clock
from nodewright.simulator.report.metrics import Recorder
from nodewright.simulator.scenario import Scenario
from nodewright.simulator.standins.faults import Faults
from nodewright.simulator.standins.lambdas import ACCOUNT, REGION, EventLoop, Invocation, Lambdas

ASYNC_INVOKE_DELAY = 0.2  # seconds from an asynchronous invoke to the handler starting
FIRST_RETRY = 1.0  # seconds from a throttle to Lambda's first retry; each next wait doubles
FUNCTIONS = ("provisioner", "consolidator", "interruption")

Handler = Callable[[dict[str, Any], Any], Any]


class SingleFlight:
    """Reserved concurrency 1 and Lambda's retries of throttled events (module docstring); it owns
    the counts of throttles and dropped events per function.
    """

    def __init__(self, *, scenario: Scenario, clock: Clock, loop: EventLoop, lambdas: Lambdas) -> None:
        self._clock = clock
        self._loop = loop
        self._lambdas = lambdas
        # function -> its maximum event age (one schedule period), for the functions limited
        self._max_age = {
            name: getattr(scenario, name).rate for name in FUNCTIONS if getattr(scenario, name).single_flight
        }
        self.throttled: dict[str, int] = dict.fromkeys(self._max_age, 0)
        self.dropped: dict[str, int] = dict.fromkeys(self._max_age, 0)

    @property
    def limited(self) -> bool:
        """True when any function runs one invocation at a time."""
        return bool(self._max_age)

    def admit(self, name: str, start: Callable[[], object]) -> None:
        """Start an invocation of `name` now (`start`), or throttle the event and retry it."""
        self._attempt(name, start, self._clock.now(), 0.0, FIRST_RETRY)

    def _attempt(self, name: str, start: Callable[[], object], first: float, age: float, wait: float) -> None:
        if name not in self._max_age or not any(i.function == name for i in self._lambdas.running):
            start()
            return
        self.throttled[name] += 1
        if age + wait > self._max_age[name]:
            self.dropped[name] += 1  # older than its maximum event age when retried: Lambda drops it
            return
        retry = partial(self._attempt, name, start, first, age + wait, wait * 2)
        self._loop.at(first + age + wait, retry)


class Invocations:
    """The deployed functions' handlers, and starting and finishing their invocations (module
    docstring). A function is invoked only once its handler is deployed (`deploy`).
    """

    def __init__(
        self,
        *,
        scenario: Scenario,
        clock: Clock,
        loop: EventLoop,
        lambdas: Lambdas,
        faults: Faults,
        recorder: Recorder,
        single_flight: SingleFlight,
    ) -> None:
        self._scenario = scenario
        self._single_flight = single_flight
        self._clock = clock
        self._loop = loop
        self._lambdas = lambdas
        self._faults = faults
        self._recorder = recorder
        self._handlers: dict[str, Handler] = {}

    def deploy(self, name: str, handler: Handler) -> None:
        """The function `name` runs `handler` from now on."""
        self._handlers[name] = handler

    def deployed(self, name: str) -> bool:
        """True when the function `name` has a handler."""
        return name in self._handlers

    @property
    def names(self) -> frozenset[str]:
        """The functions deployed."""
        return frozenset(self._handlers)

    def scheduled(self, name: str) -> None:
        """EventBridge's schedule of `name` fires now."""
        event = {
            "version": "0",
            "id": f"schedule-{name}-{int(self._clock.now())}",
            "detail-type": "Scheduled Event",
            "source": "aws.events",
            "account": ACCOUNT,
            "time": _iso(self._clock.now()),
            "region": REGION,
            "resources": [f"arn:aws:events:{REGION}:{ACCOUNT}:rule/nodewright-{name}-schedule"],
            "detail": {},
        }
        self._single_flight.admit(name, partial(self.invoke, name, event))

    def invoke_async(self, function: str, event: dict[str, Any]) -> None:
        """The interruption function's asynchronous invoke of the provisioner (the Lambda
        client's `Invoke`, `InvocationType=Event`): it starts a moment later.
        """
        self._recorder.replacement_requests.append(self._clock.now())
        if "provisioner" in self._handlers:
            self._loop.at(self._clock.now() + ASYNC_INVOKE_DELAY, partial(self.start, "provisioner", event))

    def start(self, name: str, event: dict[str, Any]) -> None:
        """Invoke `name` with `event` (a scheduled action's entry point)."""
        self._single_flight.admit(name, partial(self.invoke, name, event))

    def invoke(self, name: str, event: dict[str, Any], after: Callable[[Invocation], None] | None = None) -> Invocation:
        """Start an invocation of `name`; `after` is called when it ends."""
        self._recorder.invocations[name] += 1
        timeout = getattr(self._scenario, name).timeout
        kill_at = self._faults.kill_at(name, self._clock.now(), timeout)

        def done(invocation: Invocation) -> None:
            self._finished(invocation)
            if after is not None:
                after(invocation)

        invocation = self._lambdas.invoke(name, self._handlers[name], event, timeout, done, kill_at=kill_at)
        if kill_at is not None:
            self._faults.doomed(invocation)
        return invocation

    def _finished(self, invocation: Invocation) -> None:
        self._faults.finished(invocation)
        if invocation.error is not None:
            self._recorder.errors.append(
                {
                    "function": invocation.function,
                    "at": round(invocation.ended - self._scenario.start, 3),
                    "error": f"{type(invocation.error).__name__}: {invocation.error}",
                    "trace": invocation.trace[-4000:],
                }
            )
        if invocation.stopped == "timeout":
            self._recorder.timeouts[invocation.function] += 1
        result = invocation.result
        if isinstance(result, Mapping) and result.get("lease") is False:
            self._recorder.busy[invocation.function] += 1


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
