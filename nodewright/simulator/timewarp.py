"""Make moto and the Lambda handlers tell the simulator's virtual time.

Why a patch: the controllers take a Clock, but two things read the wall clock with no seam to
inject one:

* moto stamps every time it keeps from `moto.core.utils.utcnow()`: EC2 LaunchTime, SQS
  SentTimestamp, visibility timeouts and DelaySeconds, EventBridge event times, DynamoDB item
  timestamps. The controllers compare those with the virtual clock (an instance's age for the
  orphan collector and the registration timeout; a drain continues through delayed SQS messages,
  which must become visible in virtual time). `moto_follows(clock)` replaces that one function in
  every loaded moto module (modules import it by name) with one that reads `clock`, and restores
  the originals on exit. Every moto service the simulator uses is imported first, so none keeps
  the wall-clock version.
* the handlers compute their deadline as `time.time() + context.get_remaining_time_in_millis()`,
  while the controllers measure it with their injected clock. `handlers_follow(clock, modules)`
  gives each handler module a `time` whose `time()` is the virtual clock (everything else, such
  as `perf_counter`, stays real).

Both are process-wide, like moto's own mock: one simulation at a time per process.
"""

from __future__ import annotations

import importlib
import sys
import time as real_time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from types import ModuleType
from typing import Any

from nodewright.ports import Clock

# Backends whose models stamp times; imported before patching so each gets the virtual utcnow.
_MOTO_MODULES = (
    "moto.core.utils",
    "moto.ec2.models",
    "moto.ec2.models.instances",
    "moto.ec2.models.fleets",
    "moto.ec2.models.spot_requests",
    "moto.sqs.models",
    "moto.events.models",
    "moto.dynamodb.models",
    "moto.ssm.models",
)


@contextmanager
def moto_follows(clock: Clock) -> Iterator[None]:
    """While inside, moto's notion of "now" is `clock.now()` (see the module docstring)."""
    for name in _MOTO_MODULES:
        importlib.import_module(name)
    utils = sys.modules["moto.core.utils"]
    original = utils.utcnow

    def virtual_utcnow() -> datetime:
        return datetime.fromtimestamp(clock.now(), UTC).replace(tzinfo=None)

    patched: list[ModuleType] = []
    for name, module in list(sys.modules.items()):
        if (name == "moto" or name.startswith("moto.")) and getattr(module, "utcnow", None) is original:
            module.utcnow = virtual_utcnow  # type: ignore[attr-defined]
            patched.append(module)
    try:
        yield
    finally:
        for module in patched:
            module.utcnow = original  # type: ignore[attr-defined]


class VirtualTime:
    """A stand-in for the `time` module: `time()` reads the virtual clock, the rest is real."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock

    def time(self) -> float:
        """The virtual clock's reading, as seconds since the epoch."""
        return self._clock.now()

    def __getattr__(self, name: str) -> Any:
        return getattr(real_time, name)


@contextmanager
def handlers_follow(clock: Clock, module_names: Sequence[str]) -> Iterator[None]:
    """While inside, `time.time()` in these modules (those that are importable) is `clock.now()`."""
    replaced: list[tuple[ModuleType, Any]] = []
    virtual = VirtualTime(clock)
    for name in module_names:
        module = sys.modules.get(name)
        if module is not None and getattr(module, "time", None) is real_time:
            replaced.append((module, module.time))
            module.time = virtual  # type: ignore[attr-defined]
    try:
        yield
    finally:
        for module, original in replaced:
            module.time = original  # type: ignore[attr-defined]
