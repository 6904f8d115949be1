"""Discrete events on the virtual clock, and Lambda invocations that run concurrently on it.

Theory of operation: the `EventLoop` holds a heap of (time, action); `run_until(t)` pops actions in
time order, moving the virtual clock to each, and calls `after_step` after each one (the world's
kube-scheduler, kubelet and SQS poller look at what changed there).

Each Lambda invocation runs the real handler in its own thread, but only one thread ever runs at a
time: the loop hands control to an invocation and waits until it gives it back, either by
finishing or by sleeping. An invocation's `sleep(s)` (the `sleep` the simulator gives the
controllers) schedules its own wake-up at now + s and hands control back, so everything else that
happens in those s virtual seconds (other invocations, nodes becoming Ready, pods being bound,
interruption events) happens while it waits, as with concurrent Lambdas; no invocation's waiting
delays another's. The handoff is two semaphores, so the world stays deterministic. A sleep may
also be woken early: `sleep(s, woken)` ends at the first step after which `woken()` is true (a
controller waiting on the cluster's watch), as a real watch event would end the wait.

A Lambda stops an invocation at its timeout: here an invocation that sleeps past its deadline is
stopped there (`Stopped` is raised inside it, unwinding its `finally` blocks) and counted as timed
out. `shutdown()` stops every invocation still in flight at the end of a run the same way.
"""

from __future__ import annotations

import cProfile
import heapq
import itertools
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from nodewright.simulator.standins.cpuclock import CpuChargedClock, LoopClock

REGION = "us-east-1"
ACCOUNT = "123456789012"


class Stopped(BaseException):
    """Raised inside an invocation that Lambda would stop (timeout) or that the run abandons."""


class EventLoop:
    """A heap of timed actions on a virtual clock (see the module docstring)."""

    def __init__(self, clock: LoopClock) -> None:
        self.clock = clock
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self.after_step: Callable[[], None] = lambda: None
        # Called after `after_step`: whoever waits on what a step may have changed (Lambdas).
        self.on_step: list[Callable[[], None]] = []

    def at(self, when: float, action: Callable[[], None]) -> None:
        """Run `action` at virtual time `when` (now, if `when` has passed)."""
        heapq.heappush(self._heap, (max(when, self.clock.now()), next(self._seq), action))

    def next_time(self) -> float | None:
        """When the next action is due, or None."""
        return self._heap[0][0] if self._heap else None

    def run_until(self, t: float) -> None:
        """Run every action due at or before `t`, then move the clock to `t`."""
        heap = self._heap
        while heap and heap[0][0] <= t:
            when, _, action = heapq.heappop(heap)
            if when > self.clock.now():
                self.clock.advance_to(when)
            action()
            self.after_step()
            for hook in self.on_step:
                hook()
        if t > self.clock.now():
            self.clock.advance_to(t)


class LambdaContext:
    """The context object Lambda passes to a handler, on the virtual clock."""

    def __init__(self, function: str, request_id: str, deadline: float, clock: LoopClock, memory_mb: int) -> None:
        self.function_name = f"nodewright-{function}"
        self.function_version = "$LATEST"
        self.invoked_function_arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{self.function_name}"
        self.memory_limit_in_mb = memory_mb
        self.aws_request_id = request_id
        self.log_group_name = f"/aws/lambda/{self.function_name}"
        self.log_stream_name = "simulated"
        self._deadline = deadline
        self._clock = clock

    def get_remaining_time_in_millis(self) -> int:
        """Milliseconds until the deadline, by the virtual clock."""
        return max(0, int((self._deadline - self._clock.now()) * 1000))


@dataclass(eq=False)
class Invocation:
    """One invocation of a function: its thread, outcome and timing."""

    function: str
    request_id: str
    started: float
    deadline: float
    on_done: Callable[[Invocation], None] | None = None
    result: Any = None
    error: BaseException | None = None
    trace: str = ""
    done: bool = False
    stopped: str = ""  # "timeout" or "shutdown" when stopped from outside
    ended: float = 0.0
    # CPU seconds the handler's own thread used (time.thread_time): what the invocation computed,
    # apart from the virtual time it slept and from the machine's load (wall time counts both).
    cpu: float = 0.0
    thread: threading.Thread | None = field(default=None, repr=False)
    resume: threading.Semaphore = field(default_factory=lambda: threading.Semaphore(0), repr=False)
    _stop: str = field(default="", repr=False)
    _sleep: object = field(default=None, repr=False)  # the token of the sleep in progress


class Lambdas:
    """Starts invocations and carries out their sleeps on the event loop."""

    def __init__(
        self, loop: EventLoop, memory: Mapping[str, int] | None = None, *, charged: CpuChargedClock | None = None
    ) -> None:
        self.loop = loop
        self.clock = loop.clock
        # The loop's clock when it charges the handlers' CPU time: each invocation's thread is charged.
        self._charged = charged
        self.memory = dict(memory or {})
        self.current: Invocation | None = None
        self.running: list[Invocation] = []
        self.finished: list[Invocation] = []
        self._main = threading.Semaphore(0)
        self._ids = itertools.count(1)
        # With profiling on, each invocation's thread runs under its own profiler (cProfile only
        # sees the thread that enabled it); `profiles` collects them for the caller to merge.
        self.profiling = False
        self.profiles: list[cProfile.Profile] = []
        self.wall: dict[str, float] = {}  # wall seconds spent running each function's invocations
        self._waiting: dict[Invocation, tuple[Callable[[], bool], object]] = {}
        loop.on_step.append(self._check_waiting)

    def invoke(
        self,
        function: str,
        handler: Callable[[dict[str, Any], Any], Any],
        event: dict[str, Any],
        timeout: float,
        on_done: Callable[[Invocation], None] | None = None,
        *,
        kill_at: float | None = None,
    ) -> Invocation:
        """Start an invocation now and run it until it first sleeps or finishes.

        `kill_at` (a fault) stops it earlier than its timeout, at its first sleep past that time,
        while its context still reports the full timeout: Lambda killed it where it was.
        """
        now = self.clock.now()
        request_id = str(uuid.UUID(int=next(self._ids)))
        deadline = now + timeout if kill_at is None else min(now + timeout, kill_at)
        invocation = Invocation(function, request_id, now, deadline, on_done)
        context = LambdaContext(function, request_id, now + timeout, self.clock, self.memory.get(function, 1024))
        invocation.thread = threading.Thread(
            target=self._body, args=(invocation, handler, event, context), name=f"{function}-{request_id[-6:]}"
        )
        invocation.thread.daemon = True
        self.running.append(invocation)
        invocation.thread.start()
        self._enter(invocation)
        return invocation

    def sleep(self, seconds: float, woken: Callable[[], bool] | None = None) -> None:
        """The `sleep` given to controllers: wait `seconds` of virtual time while the world goes on,
        or less when `woken` is given and turns true after some step of the world.
        """
        invocation = self.current
        if invocation is None or threading.current_thread() is not invocation.thread:
            self.loop.run_until(self.clock.now() + seconds)  # outside any invocation: just let time pass
            return
        wake = self.clock.now() + max(0.0, seconds)
        # Lambda ends the invocation at its deadline, wherever it is.
        timed_out = wake > invocation.deadline
        token = object()
        invocation._sleep = token
        self.loop.at(min(wake, invocation.deadline), partial(self._wake, invocation, timed_out, token))
        if woken is not None:
            self._waiting[invocation] = (woken, token)
        self._main.release()
        invocation.resume.acquire()
        if invocation._stop:
            raise Stopped(invocation._stop)

    def shutdown(self) -> None:
        """Stop every invocation still in flight (the run is over)."""
        for invocation in list(self.running):
            if not invocation.done:
                invocation._stop = invocation._stop or "shutdown"
                self._enter(invocation)

    # -- internals -----------------------------------------------------------------------------------

    def _check_waiting(self) -> None:
        """After a step: wake, at the current time, each sleeper whose condition now holds."""
        if not self._waiting:
            return
        for invocation, (woken, token) in list(self._waiting.items()):
            if woken():
                del self._waiting[invocation]
                self.loop.at(self.clock.now(), partial(self._wake, invocation, False, token))

    def _wake(self, invocation: Invocation, timed_out: bool, token: object = None) -> None:
        if token is not None:
            if invocation._sleep is not token:
                return  # that sleep already ended (woken early): this is its stale timer
            invocation._sleep = None
            self._waiting.pop(invocation, None)
        if timed_out and not invocation._stop:
            invocation._stop = "timeout"
        self._enter(invocation)

    def _body(self, invocation: Invocation, handler: Callable[..., Any], event: dict[str, Any], context: Any) -> None:
        invocation.resume.acquire()
        try:
            if self._charged is None:
                self._run(invocation, handler, event, context)
            else:
                with self._charged.charging():
                    self._run(invocation, handler, event, context)
        finally:
            self._main.release()  # after the last charge: the loop's thread takes the clock back

    def _run(self, invocation: Invocation, handler: Callable[..., Any], event: dict[str, Any], context: Any) -> None:
        """The invocation's thread, once handed control: the handler, its outcome and timing."""
        profile = cProfile.Profile() if self.profiling else None
        if profile is not None:
            self.profiles.append(profile)
            profile.enable()
        cpu_started = time.thread_time()
        try:
            if not invocation._stop:
                invocation.result = handler(event, context)
        except Stopped as stop:
            invocation.stopped = str(stop)
        except BaseException as error:  # a failed invocation is an outcome to report, not the run's end
            invocation.error = error
            invocation.trace = traceback.format_exc()
        finally:
            invocation.cpu = time.thread_time() - cpu_started
            if profile is not None:
                profile.disable()
            invocation.done = True
            invocation.ended = self.clock.now()

    def _enter(self, invocation: Invocation) -> None:
        """Hand control to `invocation` until it sleeps or finishes (called by the loop only)."""
        if invocation.done:
            return
        previous = self.current
        self.current = invocation
        started = time.perf_counter()
        invocation.resume.release()
        self._main.acquire()
        spent = time.perf_counter() - started
        self.wall[invocation.function] = self.wall.get(invocation.function, 0.0) + spent
        self.current = previous
        if invocation.done:
            if invocation.thread is not None:
                invocation.thread.join()
            self.running.remove(invocation)
            self.finished.append(invocation)
            if invocation.on_done is not None:
                invocation.on_done(invocation)
