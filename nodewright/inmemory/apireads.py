"""The in-memory API server's reads: paged lists, GETs and watches.

Role: the `Reads` part of `ApiServer` (`nodewright.inmemory.apiserver`, whose docstring describes the
list, continue-token and watch semantics): each answers from the server's own copy of the
objects, under its condition lock, never from the cluster's dicts.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from nodewright.inmemory.apihttp import ServerState, _Handler, _Stream
from nodewright.inmemory.apiwire import (
    DEFAULT_WATCH_SECONDS,
    OPEN_LISTS,
    _bookmark,
    _decode_continue,
    _encode,
    _encode_continue,
    _expired,
    _Failure,
    _hung_up,
    _integer,
    _Kind,
    _line,
    _Listing,
    _matches,
    _not_found,
    _Route,
    _selector,
    _shown,
    _Term,
)
from nodewright.inmemory.cluster import ADDED


class Reads(ServerState):
    """Lists, GETs and watches of the served kinds (module docstring)."""

    def _list(self, route: _Route, query: Mapping[str, str]) -> bytes:
        resource = route.resource
        terms = _selector(route, query)
        limit = _integer(query, "limit")
        token = query.get("continue") or ""
        with self._changed:
            state = self._kinds[resource.kind]
            if token:
                list_id, offset = _decode_continue(token)
                listing = self._lists.get(list_id)
                if listing is None or listing.kind != resource.kind or listing.rv < state.floor:
                    self._lists.pop(list_id, None)
                    raise _Failure(
                        410,
                        "The provided continue parameter is too old to display a consistent list result. "
                        "You can start a new list without the continue parameter.",
                    )
            else:
                objects = state.objects
                items = [objects[k].body for k in state.sorted_keys() if _matches(terms, objects[k].fields)]
                listing, offset, list_id = _Listing(resource.kind, self._revision, items), 0, 0
            page = listing.items[offset : offset + limit] if limit else listing.items[offset:]
            end = offset + len(page)
            metadata: dict[str, Any] = {"resourceVersion": str(listing.rv)}
            if end < len(listing.items):
                if not list_id:
                    list_id = next(self._list_ids)
                    self._lists[list_id] = listing
                    while len(self._lists) > OPEN_LISTS:
                        self._lists.popitem(last=False)
                metadata["continue"] = _encode_continue(list_id, end)
                metadata["remainingItemCount"] = len(listing.items) - end
            elif list_id:
                self._lists.pop(list_id, None)
        head = {"kind": f"{resource.object_kind}List", "apiVersion": resource.api_version, "metadata": metadata}
        return _encode(head)[:-1] + b',"items":[' + b",".join(page) + b"]}"

    def _get(self, route: _Route) -> bytes:
        with self._changed:
            stored = self._kinds[route.resource.kind].objects.get(route.key)
            if stored is None:
                raise _not_found(route.resource, route.name)
            return stored.body

    def _watch(self, handler: _Handler, route: _Route, query: Mapping[str, str]) -> None:
        """Stream the kind's events as chunked JSON lines (see the module docstring)."""
        resource = route.resource
        terms = _selector(route, query)
        bookmarks = query.get("allowWatchBookmarks", "").lower() in ("true", "1")
        timeout = float(_integer(query, "timeoutSeconds") or DEFAULT_WATCH_SECONDS)
        start = query.get("resourceVersion") or "0"
        if not start.isdigit():
            raise _Failure(400, f"invalid resourceVersion {start!r}")
        state = self._kinds[resource.kind]
        stream = _Stream(handler, self, resource)
        deadline = time.monotonic() + timeout
        with self._changed:
            if start == "0":
                # No version: the current objects as synthetic ADDED events, then what follows.
                objects = state.objects
                lines = [
                    _line(ADDED, objects[k].body) for k in state.sorted_keys() if _matches(terms, objects[k].fields)
                ]
                seen = self._revision
            elif int(start) < state.floor:
                lines, seen = [_expired(int(start), state.floor)], -1
            else:
                lines, seen = [], int(start)
        with self._changed:
            self._watching += 1
        try:
            if stream.open() and stream.send(lines) and seen >= 0:
                self._follow(stream, state, terms=terms, seen=seen, bookmarks=bookmarks, deadline=deadline)
            stream.close()
        finally:
            with self._changed:
                self._watching -= 1
                self._changed.notify_all()

    def _follow(
        self, stream: _Stream, state: _Kind, *, terms: tuple[_Term, ...], seen: int, bookmarks: bool, deadline: float
    ) -> None:
        """Send the kind's events after revision `seen` as they come, until `deadline`; with
        `bookmarks`, one every `bookmark_every` seconds, one after a batch the selector thinned,
        and one at the end.
        """
        next_bookmark = min(deadline, time.monotonic() + self._bookmark_every) if bookmarks else deadline
        while True:
            with self._changed:
                while not self._stopping and state.latest <= seen:
                    now = time.monotonic()
                    if now >= next_bookmark:
                        break
                    # At least once a second: a client that went away ends its watch's thread.
                    self._changed.wait(min(1.0, next_bookmark - now))
                    if state.latest <= seen and _hung_up(stream.handler.connection):
                        return
                stopping = self._stopping
                # The client fell further behind than the history reaches: it must list again.
                expired = _expired(seen, state.floor) if state.floor > seen else b""
                events = [] if expired else state.since(seen)
                seen = self._revision
            if expired:
                stream.send([expired])
                return
            lines = []
            dropped = False
            for event in events:
                shown = _shown(event, terms)
                if shown:
                    lines.append(_line(shown, event.body))
                else:
                    dropped = True
            now = time.monotonic()
            if bookmarks and (dropped or now >= next_bookmark):
                lines.append(_bookmark(state.resource, seen))
            if bookmarks and now >= next_bookmark:
                next_bookmark = min(deadline, now + self._bookmark_every)
            if not stream.send(lines) or now >= deadline:
                return
            if stopping:
                stream.handler.close_connection = True
                return
