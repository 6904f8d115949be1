"""One kind of object, LISTed once and then WATCHed into the store: the reflector of an informer.

Role: keep `ClusterStore` current for one kind (nodes, pods, ...) with as few requests as the
API server allows, in a background thread, for as long as the owner asks (`follow(until)`).
The shape is client-go's `Reflector.ListAndWatch`, as a small state machine:

    unlisted --LIST (paged)--> listed(rv) --WATCH from rv--> events applied, rv advances
        ^                                        |  timeoutSeconds over: WATCH again from rv
        |                                        |  connection dropped, 5xx, 429: jittered
        |                                        |      backoff, WATCH again from rv
        +---------- 410 Gone (rv compacted) -----+

* A watch asks for bookmarks (`allowWatchBookmarks`), so `rv` stays fresh on a quiet kind and a
  resumed watch is rarely too old; its `timeoutSeconds` is bounded by the time left to follow,
  so the server ends it before the Lambda invocation does (a frozen container holds no stream
  the server still writes to).
* `rv` survives the thread: the next `follow` (the next invocation of a warm container)
  resumes from it, so a warm function never LISTs again; only a 410 does.
* A 401 asks the token source for a fresh EKS token (in `Transport.request`) and retries.
* Everything else a watch can meet is retried with backoff, doubling from `backoff` to
  `max_backoff` with full jitter; the error is kept in `error` for the owner to report when it
  waits for a sync that does not come.

The thread only talks HTTP and applies events; what the store does with them is its business.
"""

from __future__ import annotations

import json
import math
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from urllib3.exceptions import HTTPError

# The longest a single watch request stays open (the API server's own default is 30-60 min;
# client-go picks 5-10 min): long enough to cost little, short enough to notice a dead stream.
MAX_WATCH_SECONDS = 300
# Extra read time past the watch's own timeout before the client gives up on a silent stream.
READ_SLACK_SECONDS = 30.0


class Gone(Exception):
    """The resourceVersion is too old for the API server (410): the kind must be listed again."""


class WatchError(Exception):
    """A watch failed with an error the server reported in the stream (an ERROR event)."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        super().__init__(f"HTTP {status}: {message}")


# list(resource_version) -> (parsed objects by key, the list's resourceVersion)
Lister = Callable[[], tuple[dict[str, Any], str]]
# open a watch: (resource_version, timeout_seconds) -> a raw urllib3 response streaming events
Opener = Callable[[str, int], Any]


class Watcher:
    """Lists then watches one kind into a store (see the module docstring).

    `lister` reads the whole kind (all pages) with its resourceVersion; `opener` starts a watch
    from a resourceVersion; `parse` turns an event's object into the model and `key` names it;
    `apply` receives ("replace", objects) / ("put", key, obj) / ("delete", key) calls through
    `on_list`, `on_put` and `on_delete`; `received(nbytes)` is told how much each watch read.
    """

    def __init__(
        self,
        kind: str,
        *,
        lister: Lister,
        opener: Opener,
        parse: Callable[[Mapping[str, Any]], Any],
        key: Callable[[Mapping[str, Any]], str],
        on_list: Callable[[dict[str, Any]], None],
        on_put: Callable[[str, Any], None],
        on_delete: Callable[[str], None],
        received: Callable[[int], None] = lambda n: None,
        monotonic: Callable[[], float] = time.monotonic,
        backoff: float = 0.8,
        max_backoff: float = 30.0,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self.kind = kind
        self.resource_version = ""
        self.error: BaseException | None = None
        self.lists = 0
        self.watches = 0
        self._lister = lister
        self._opener = opener
        self._parse = parse
        self._key = key
        self._on_list = on_list
        self._on_put = on_put
        self._on_delete = on_delete
        self._received = received
        self._monotonic = monotonic
        self._backoff = backoff
        self._max_backoff = max_backoff
        self._jitter = jitter
        self._lock = threading.Lock()
        self._until = 0.0
        self._thread: threading.Thread | None = None
        self._response: Any = None
        self._closed = threading.Event()

    def follow(self, until: float) -> None:
        """Keep the kind current until `until` (by `monotonic`); starts the thread if none runs."""
        with self._lock:
            self._until = max(self._until, until)
            if self._closed.is_set() or (self._thread is not None and self._thread.is_alive()):
                return
            self._thread = threading.Thread(target=self._run, name=f"watch-{self.kind}", daemon=True)
            self._thread.start()

    def close(self) -> None:
        """Stop following: end the open watch, if any, and wait for the thread."""
        self._closed.set()
        response = self._response
        if response is not None:
            _shutdown(response)
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=10)

    # ------------------------------------------------------------------ the thread

    def _run(self) -> None:
        delay = self._backoff
        while True:
            with self._lock:
                remaining = self._until - self._monotonic()
                if self._closed.is_set() or remaining <= 0:
                    self._thread = None
                    return
            try:
                if not self.resource_version:
                    self._list()
                if self._watch(remaining):
                    delay = self._backoff
                continue
            except Gone:
                self.resource_version = ""  # relist at once: the next watch would be refused too
                continue
            except Exception as error:
                if self._closed.is_set():
                    continue
                self.error = error
            # Full jitter: a fleet of functions that lost the API server together do not return together.
            self._closed.wait(delay * (0.5 + self._jitter() / 2))
            delay = min(self._max_backoff, delay * 2)

    def _list(self) -> None:
        objects, version = self._lister()
        self.lists += 1
        self._on_list(objects)
        self.resource_version = version

    def _watch(self, remaining: float) -> bool:
        """One watch request from `resource_version`; True when it delivered at least one event."""
        # Rounded up: one watch covers what is left to follow, not that and a one-second tail.
        timeout = math.ceil(max(1.0, min(MAX_WATCH_SECONDS, remaining)))
        response = self._opener(self.resource_version, timeout)
        self.watches += 1
        self._response = response
        delivered = False
        try:
            for line in _lines(response, self._received):
                self._apply(json.loads(line))
                delivered = True
                if self._closed.is_set():
                    break
        except HTTPError:
            if not self._closed.is_set():
                raise
        finally:
            self._response = None
            _shutdown(response)
        return delivered

    def _apply(self, event: Mapping[str, Any]) -> None:
        kind = event.get("type")
        obj = event.get("object") or {}
        if kind == "ERROR":
            code = int(obj.get("code") or 0)
            if code == 410:
                raise Gone(str(obj.get("message") or "resourceVersion too old"))
            raise WatchError(code, str(obj.get("message") or obj))
        version = str((obj.get("metadata") or {}).get("resourceVersion") or "")
        if kind in ("ADDED", "MODIFIED"):
            key = self._key(obj)
            try:
                parsed = self._parse(obj)
            except (KeyError, ValueError, TypeError, AttributeError) as error:
                # One object the model cannot read must not stop the kind: it is left out (and
                # reported through `error`), the rest of the stream still applies.
                self._on_delete(key)
                self.error = ValueError(f"cannot read {self.kind} {key}: {error}")
            else:
                self._on_put(key, parsed)
        elif kind == "DELETED":
            self._on_delete(self._key(obj))
        elif kind != "BOOKMARK":
            raise WatchError(0, f"unknown watch event type {kind!r}")
        if version:
            self.resource_version = version


def _lines(response: Any, received: Callable[[int], None]) -> Iterator[bytes]:
    """The non-empty lines of a streamed (chunked) response, as they arrive."""
    buffer = b""
    for segment in response.stream(amt=None, decode_content=True):
        received(len(segment))
        buffer += segment
        if b"\n" not in segment:
            continue
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            if line.strip():
                yield line
    if buffer.strip():
        yield buffer


def _shutdown(response: Any) -> None:
    """Close a streaming response from any thread, unblocking a read in progress."""
    try:
        shutdown = getattr(response, "shutdown", None)
        if shutdown is not None:
            shutdown()
        response.release_conn()
    except Exception:
        pass
