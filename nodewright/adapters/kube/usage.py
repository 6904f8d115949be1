"""What the Kubernetes adapter asked of the API server: requests and bytes, by verb and resource.

Role: the accounting behind the `KubeApiRequests` and `KubeApiBytes` metrics and the API-load
benchmark. Every request the adapter sends is counted once when sent; bytes are counted as
they are read (a watch's as its stream delivers them). Thread-safe: the watch threads count too.
"""

from __future__ import annotations

import threading

from nodewright.ports import ApiUsage


class ApiMeter:
    """Counters of requests and bytes received per (verb, resource), drained by `take`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: dict[tuple[str, str], int] = {}
        self._bytes: dict[tuple[str, str], int] = {}
        self.total_requests = 0
        self.total_bytes = 0

    def request(self, verb: str, resource: str) -> None:
        """Count one request sent."""
        with self._lock:
            self._requests[verb, resource] = self._requests.get((verb, resource), 0) + 1
            self.total_requests += 1

    def received(self, verb: str, resource: str, nbytes: int) -> None:
        """Count bytes of a response body read."""
        with self._lock:
            self._bytes[verb, resource] = self._bytes.get((verb, resource), 0) + nbytes
            self.total_bytes += nbytes

    def take(self) -> list[ApiUsage]:
        """The counts since the last `take`, sorted by verb and resource; the counters restart."""
        with self._lock:
            keys = sorted(set(self._requests) | set(self._bytes))
            out = [
                ApiUsage(verb, res, self._requests.get((verb, res), 0), self._bytes.get((verb, res), 0))
                for verb, res in keys
            ]
            self._requests.clear()
            self._bytes.clear()
        return out
