"""A memo that forgets what recent passes did not use. Pure.

Role: the solver's memos of bound pods and nodes (`cache.PodFacts`, `NodeFacts`, `BoundRuns`)
are found by object identity and hold their object. Pods change versions all the time (a status
update is a new object), so a warm provisioner container that only bounded them by count kept up
to 100,000 stale pod versions (about 160 MB) until the count was reached. `Generational` keeps two
generations: the caller starts a new one at each pass (`SolverCache.age`), an entry used in the
current or the previous pass is kept (and moved to the current one), and an entry neither used is
forgotten. So memory follows what the last two passes touched, whatever the churn; `limit` still
bounds one generation.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Generational(Generic[K, V]):
    """A dict of two generations (see the module docstring)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._current: dict[K, V] = {}
        self._previous: dict[K, V] = {}

    def __len__(self) -> int:
        return len(self._current) + len(self._previous)

    def values(self) -> Iterator[V]:
        """Every entry kept, the current generation's first."""
        yield from self._current.values()
        yield from self._previous.values()

    def get(self, key: K) -> V | None:
        """The entry for `key` (moved to the current generation), or None."""
        value = self._current.get(key)
        if value is None:
            value = self._previous.pop(key, None)
            if value is not None:
                self.put(key, value)
        return value

    def put(self, key: K, value: V) -> None:
        """Keep `value` in the current generation (forgetting it all when it holds `limit`)."""
        if self.limit <= 0:
            return
        if len(self._current) >= self.limit and key not in self._current:
            self._current.clear()
        self._current[key] = value

    def age(self) -> None:
        """Start a new generation: what the one before the current did not use is forgotten."""
        self._previous = self._current
        self._current = {}
