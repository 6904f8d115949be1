"""The wall clock, for Lambda and the CLI (tests and the simulator use `nodewright.inmemory.clock`)."""

from __future__ import annotations

import time


class SystemClock:
    """A Clock that reads `time.time()`."""

    def now(self) -> float:
        """Seconds since the epoch."""
        return time.time()
