"""The in-memory API server's reads: paged lists, GETs and watches.

Role: `Reads`, handed the server's `ObjectStore`, its `Usage` and its `Tables` (see
`nodewright.inmemory.apiserver`, whose docstring describes the list, continue-token and watch
semantics): each answer comes from the store, under its condition, never from the cluster's
dicts. It owns the paged lists whose continue tokens are open. A list or watch asked for as a
Table (`table=True`) answers `meta.k8s.io/v1` Tables (a watch: one Table per event).
"""

from __future__ import annotations

import collections
import itertools
import time
from collections.abc import Callable, Mapping
from typing import Any

from nodewright.inmemory.apihttp import Handler, Usage, WatchStream
from nodewright.inmemory.apistore import ObjectStore
from nodewright.inmemory.apitables import Tables
from nodewright.inmemory.apiwire import (
    DEFAULT_WATCH_SECONDS,
    OPEN_LISTS,
    Failure,
    KindState,
    Listing,
    Resource,
    Route,
    Term,
    bookmark_line,
    decode_continue,
    encode,
    encode_continue,
    expired_line,
    hung_up,
    integer_param,
    matches,
    not_found,
    selector_of,
    shown_as,
    watch_line,
)
from nodewright.inmemory.cluster import ADDED


class Reads:
    """Lists, GETs and watches of the served kinds (module docstring); `bookmark_every` is the
    seconds between BOOKMARK events of a watch that allows them.
    """

    def __init__(self, store: ObjectStore, usage: Usage, tables: Tables, *, bookmark_every: float) -> None:
        if bookmark_every <= 0:
            raise ValueError(f"bookmark_every must be positive, got {bookmark_every}")
        self._store = store
        self._usage = usage
        self._tables = tables
        self._bookmark_every = bookmark_every
        self._lists: collections.OrderedDict[int, Listing] = collections.OrderedDict()
        self._list_ids = itertools.count(1)

    def list(self, route: Route, query: Mapping[str, str], *, table: bool = False) -> bytes:
        """A page of the kind's objects (a Table when `table`)."""
        resource = route.resource
        terms = selector_of(route, query)
        limit = integer_param(query, "limit")
        token = query.get("continue") or ""
        store = self._store
        with store.condition:
            state = store.kind(resource.kind)
            if token:
                list_id, offset = decode_continue(token)
                listing = self._lists.get(list_id)
                if listing is None or listing.kind != resource.kind or listing.rv < state.floor:
                    self._lists.pop(list_id, None)
                    raise Failure(
                        410,
                        "The provided continue parameter is too old to display a consistent list result. "
                        "You can start a new list without the continue parameter.",
                    )
            else:
                objects = state.objects
                items = [objects[k] for k in state.sorted_keys() if matches(terms, objects[k].fields)]
                listing, offset, list_id = Listing(resource.kind, store.revision, items), 0, 0
            page = listing.items[offset : offset + limit] if limit else listing.items[offset:]
            end = offset + len(page)
            metadata: dict[str, Any] = {"resourceVersion": str(listing.rv)}
            if end < len(listing.items):
                if not list_id:
                    list_id = next(self._list_ids)
                    self._lists[list_id] = listing
                    while len(self._lists) > OPEN_LISTS:
                        self._lists.popitem(last=False)
                metadata["continue"] = encode_continue(list_id, end)
                metadata["remainingItemCount"] = len(listing.items) - end
            elif list_id:
                self._lists.pop(list_id, None)
        if table:
            include = query.get("includeObject") or "Metadata"
            return encode(self._tables.table(resource, [s.manifest for s in page], metadata, include))
        head = {"kind": f"{resource.object_kind}List", "apiVersion": resource.api_version, "metadata": metadata}
        return encode(head)[:-1] + b',"items":[' + b",".join(s.body for s in page) + b"]}"

    def get(self, route: Route, query: Mapping[str, str], *, table: bool = False) -> bytes:
        """One object (a one-row Table when `table`)."""
        with self._store.condition:
            stored = self._store.kind(route.resource.kind).objects.get(route.key)
            if stored is None:
                raise not_found(route.resource, route.name)
        if table:
            metadata = {"resourceVersion": str(stored.rv)}
            include = query.get("includeObject") or "Metadata"
            return encode(self._tables.table(route.resource, [stored.manifest], metadata, include))
        return stored.body

    def watch(self, handler: Handler, route: Route, query: Mapping[str, str], *, table: bool = False) -> None:
        """Stream the kind's events as chunked JSON lines (see the module docstring)."""
        resource = route.resource
        terms = selector_of(route, query)
        bookmarks = query.get("allowWatchBookmarks", "").lower() in ("true", "1")
        timeout = float(integer_param(query, "timeoutSeconds") or DEFAULT_WATCH_SECONDS)
        start = query.get("resourceVersion") or "0"
        if not start.isdigit():
            raise Failure(400, f"invalid resourceVersion {start!r}")
        store = self._store
        with store.condition:
            state = store.kind(resource.kind)
        stream = WatchStream(handler, self._usage, resource)
        deadline = time.monotonic() + timeout
        render = self._renderer(resource, query) if table else None
        with store.condition:
            if start == "0":
                # No version: the current objects as synthetic ADDED events, then what follows.
                objects = state.objects
                chosen = [objects[k] for k in state.sorted_keys() if matches(terms, objects[k].fields)]
                lines = [watch_line(ADDED, render(s.manifest) if render else s.body) for s in chosen]
                seen = store.revision
            elif int(start) < state.floor:
                lines, seen = [expired_line(int(start), state.floor)], -1
            else:
                lines, seen = [], int(start)
            store.watching += 1
        try:
            if stream.open() and stream.send(lines) and seen >= 0:
                self._follow(
                    stream, state, terms=terms, seen=seen, bookmarks=bookmarks, deadline=deadline, render=render
                )
            stream.close()
        finally:
            with store.condition:
                store.watching -= 1
                store.condition.notify_all()

    def _renderer(self, resource: Resource, query: Mapping[str, str]) -> Callable[[Mapping[str, Any]], bytes]:
        """One object as a one-row Table: what a watch asked for as a Table sends per event."""
        include = query.get("includeObject") or "Metadata"
        tables = self._tables

        def render(manifest: Mapping[str, Any]) -> bytes:
            rv = str((manifest.get("metadata") or {}).get("resourceVersion") or "")
            return encode(tables.table(resource, [manifest], {"resourceVersion": rv}, include))

        return render

    def _follow(
        self,
        stream: WatchStream,
        state: KindState,
        *,
        terms: tuple[Term, ...],
        seen: int,
        bookmarks: bool,
        deadline: float,
        render: Callable[[Mapping[str, Any]], bytes] | None,
    ) -> None:
        """Send the kind's events after revision `seen` as they come, until `deadline`; with
        `bookmarks`, one every `bookmark_every` seconds, one after a batch the selector thinned,
        and one at the end.
        """
        next_bookmark = min(deadline, time.monotonic() + self._bookmark_every) if bookmarks else deadline
        store = self._store
        while True:
            with store.condition:
                while not store.stopping and state.latest <= seen:
                    now = time.monotonic()
                    if now >= next_bookmark:
                        break
                    # At least once a second: a client that went away ends its watch's thread.
                    store.condition.wait(min(1.0, next_bookmark - now))
                    if state.latest <= seen and hung_up(stream.handler.connection):
                        return
                stopping = store.stopping
                # The client fell further behind than the history reaches: it must list again.
                expired = expired_line(seen, state.floor) if state.floor > seen else b""
                events = [] if expired else state.since(seen)
                seen = store.revision
            if expired:
                stream.send([expired])
                return
            lines = []
            dropped = False
            for event in events:
                shown = shown_as(event, terms)
                if shown:
                    lines.append(watch_line(shown, render(event.manifest) if render else event.body))
                else:
                    dropped = True
            now = time.monotonic()
            if bookmarks and (dropped or now >= next_bookmark):
                lines.append(bookmark_line(state.resource, seen))
            if bookmarks and now >= next_bookmark:
                next_bookmark = min(deadline, now + self._bookmark_every)
            if not stream.send(lines) or now >= deadline:
                return
            if stopping:
                stream.handler.close_connection = True
                return
