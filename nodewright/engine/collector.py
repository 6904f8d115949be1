"""`collector_paused()`: Python's cyclic garbage collector paused for a block that builds many
objects and leaves no reference cycles (a solve, a decoded page of the cluster).

Every 700 allocations the collector walks the young objects, and the older generations are walked
again as what the block keeps grows: on hundreds of thousands of small objects that is a tenth (a
solve) to four fifths (`json.loads` of a large listing) of the block's CPU, for nothing to collect.
Objects are still freed by reference counting; a cycle the block (or another thread) leaves is
collected once the collector resumes. Pure: no I/O; the only state it touches is the
interpreter's collector switch, restored on exit.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic collector for the block when it was on; turn it back on after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
