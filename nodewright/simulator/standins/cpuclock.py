"""A virtual clock charged with the CPU time the handlers spend.

The world's clock (`LoopClock`, what the event loop moves; everyone else reads it through the
`Clock` port) is either `VirtualClock` (nodewright.inmemory.clock), on which a handler's
computation takes no time, or `CpuChargedClock`, on which it takes the CPU seconds it used (times
`scale`).

Why charge CPU time: on the plain virtual clock a slow solve delays nothing, so the time from a
pod becoming pending to its CreateFleet call is only the batching windows. In the Lambda the
function's computation takes real time, and the pods behind it wait for it. Charging the handler
thread's own CPU time (`time.thread_time`) models that without counting the machine's load (the
wall time another process takes), nor the world's own work (the kube-scheduler, the kubelet, the
event loop: the main thread's CPU is never charged). What the handler does inside the moto
account (a DynamoDB write, a CreateFleet) runs in its thread, so it is charged too, standing in for
the call's latency. `scale` converts this machine's CPU seconds to the Lambda's (1.0: this
machine; about 1.7: a 1,024 MB Lambda, which gets 0.58 of a vCPU).

Theory of operation: `charging()`, entered by the Lambda runtime (`standins.lambdas.Lambdas`) in
each invocation's thread, marks the thread's CPU time; each `now()` read from a charged thread
first advances the virtual clock by the CPU that thread used since its last mark. Only one
invocation runs at a time (the event loop's handoff), so the charges never overlap. The world's
actions due while a handler computed run when it next sleeps, at the time the clock reached.

Not deterministic: CPU time varies from run to run, so two runs of one scenario differ. A scenario
asks for it (`cpu_charge`); every other run keeps the plain virtual clock and its byte-identical
summaries. (The provisioner's solve budget never reads this clock: `standins.solveclock`.)
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from nodewright.inmemory.clock import VirtualClock


class CpuChargedClock:
    """A virtual clock that also advances by the CPU time of the threads `charging()` (module
    docstring). Never goes backwards; `advance_to` a time the charges already passed stays put.
    """

    def __init__(self, start: float, scale: float = 1.0) -> None:
        if not math.isfinite(scale) or scale < 0:
            raise ValueError(f"the CPU charge must be a finite number >= 0, got {scale!r}")
        self._clock = VirtualClock(start)
        self.scale = scale
        self._marks: dict[int, float] = {}  # charged thread -> its CPU time when last charged
        self.charged = 0.0  # virtual seconds charged so far

    def now(self) -> float:
        """Seconds since the epoch, after charging the calling thread's CPU since its last mark."""
        ident = threading.get_ident()
        mark = self._marks.get(ident)
        if mark is not None:
            cpu = time.thread_time()
            if cpu > mark:
                self._marks[ident] = cpu
                step = (cpu - mark) * self.scale
                self.charged += step
                self._clock.advance(step)
        return self._clock.now()

    def advance(self, seconds: float) -> float:
        """Move forward by `seconds` (ValueError for a negative or non-finite step)."""
        self.now()
        return self._clock.advance(seconds)

    def advance_to(self, t: float) -> float:
        """Move forward to `t`, or stay where the charges already carried the clock past it."""
        return self._clock.advance_to(max(t, self.now()))

    @contextmanager
    def charging(self) -> Iterator[None]:
        """While inside, the calling thread's CPU time moves the clock (at each reading)."""
        ident = threading.get_ident()
        self._marks[ident] = time.thread_time()
        try:
            yield
        finally:
            self.now()  # what ran since the last reading
            del self._marks[ident]

    def __repr__(self) -> str:
        return f"CpuChargedClock(now={self._clock.now()}, scale={self.scale})"


# The clocks the event loop can move (`standins.lambdas.EventLoop`).
LoopClock = VirtualClock | CpuChargedClock
