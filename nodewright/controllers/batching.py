"""The provisioner's batching rules: when the pods waiting for capacity should start a pass.

Role: `Batch`, asked by the provisioner's loop (`nodewright.controllers.provisioning`, whose
docstring says why it batches and why not always) at each check whether a pass is due.
"""

from __future__ import annotations

import math

from nodewright.controllers.provisionoptions import (
    ProvisionerOptions,
)


class Batch:
    """The batching rules over the pods waiting for capacity (see the module docstring).

    `due(waiting, now)` is asked at every check (a change of the pending pods, or a time
    `next_check` named) and says whether a pass should start now: `batch_idle` seconds without a
    new pod, `batch_max` after the first, or, once the batch is `batch_idle` old, a `poll` period
    that grew it by less than `batch_growth` of its size. Growth is measured per `poll` period,
    not per check: a loop woken by every new pod would otherwise see one pod at a time and pass
    on a burst still arriving.
    """

    def __init__(self, options: ProvisionerOptions) -> None:
        self.options = options
        self.first_seen: float | None = None
        self.last_change = 0.0
        self._seen: frozenset[str] = frozenset()
        self._measured: frozenset[str] = frozenset()  # the batch at the last growth measure
        self._measured_at = 0.0

    def reset(self) -> None:
        """Start afresh, no batch open (an invocation's start, and after each pass)."""
        self.first_seen = None
        self.last_change = 0.0
        self._seen = frozenset()
        self._measured = frozenset()
        self._measured_at = 0.0

    @property
    def open(self) -> bool:
        """True while pods wait for a pass."""
        return self.first_seen is not None

    def due(self, waiting: frozenset[str], now: float) -> bool:
        """Take in the pods waiting now; True when a pass should start."""
        opts = self.options
        if not waiting:
            self.first_seen = None
            self._seen = waiting
            return False
        if self.first_seen is None:
            self.first_seen = self.last_change = self._measured_at = now
            self._measured = frozenset()
        elif not waiting <= self._seen:
            self.last_change = now
        self._seen = waiting
        if now - self.last_change >= opts.batch_idle or now - self.first_seen >= opts.batch_max:
            return True
        if now - self._measured_at < opts.poll:
            return False
        added = len(waiting - self._measured)
        self._measured, self._measured_at = waiting, now
        return now - self.first_seen >= opts.batch_idle and added < opts.batch_growth * (len(waiting) - added)

    def next_check(self, now: float) -> float:
        """When a rule may next come due with no change (infinity when no batch is open)."""
        if self.first_seen is None:
            return math.inf
        opts = self.options
        return min(self._measured_at + opts.poll, self.last_change + opts.batch_idle, self.first_seen + opts.batch_max)
