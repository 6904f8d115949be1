"""Make moto tell the simulator's virtual time.

Why a patch: the controllers take a Clock, but moto reads the wall clock with no seam to inject
one:

* moto stamps every time it keeps from `moto.core.utils.utcnow()`: EC2 LaunchTime, SQS
  SentTimestamp, visibility timeouts and DelaySeconds, EventBridge event times, DynamoDB item
  timestamps. The controllers compare those with the virtual clock (an instance's age for the
  orphan collector and the registration timeout; a drain continues through delayed SQS messages,
  which must become visible in virtual time). `moto_follows(clock)` replaces that one function in
  every loaded moto module (modules import it by name) with one that reads `clock`, and restores
  the originals on exit. Every moto service the simulator uses is imported first, so none keeps
  the wall-clock version.

(The handlers need no patch: they pass the invocation's remaining time and the controllers set
their deadline by their own clock.)

The patch is process-wide, like moto's own mock: one simulation at a time per process.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from types import ModuleType

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
