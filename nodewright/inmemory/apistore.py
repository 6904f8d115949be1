"""The API emulator's own copy of every object it serves, with its resourceVersions and history.

Role: `ObjectStore` owns the served objects by kind (`KindState`: manifests, encoded bodies,
selectable values), the server's monotonic resourceVersion counter, each kind's recent watch
events, and the condition (`condition`) that readers wait on and writers notify. Reads, writes,
the cluster feed and the custom resources all go through it; none keeps objects of its own.
Every method except `resources` expects its caller to hold `condition`.

Kinds: the built-in ones are fixed at construction; a CustomResourceDefinition adds its kind with
`register` (and `unregister` when the CRD is deleted), so lists, watches, selectors and Tables of
custom objects are the same code as for nodes.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

from nodewright.inmemory.apiwire import KindState, Resource, Stored, WatchEvent, encode, key_of, selectable_fields
from nodewright.inmemory.cluster import ADDED, DELETED, MODIFIED


class ObjectStore:
    """The served objects and their history (module docstring). `history` is how many events each
    kind keeps for watches to replay.
    """

    def __init__(self, resources: Iterable[Resource], *, history: int) -> None:
        if history < 1:
            raise ValueError(f"history must be at least 1, got {history}")
        self.condition = threading.Condition()
        self.stopping = False  # set by the server's stop(): watches end
        self.watching = 0  # open watch streams
        self._history = history
        self._kinds: dict[str, KindState] = {r.kind: KindState(r) for r in resources}
        self._revision = 0

    @property
    def revision(self) -> int:
        """The latest resourceVersion handed out (any kind)."""
        return self._revision

    def resources(self) -> tuple[Resource, ...]:
        """The kinds served now, in registration order (safe without holding `condition`)."""
        return tuple(state.resource for state in list(self._kinds.values()))

    def kind(self, kind: str) -> KindState:
        """The state of one kind; KeyError when it is not served."""
        return self._kinds[kind]

    def served(self, kind: str) -> bool:
        """Whether `kind` is served now."""
        return kind in self._kinds

    def register(self, resource: Resource) -> None:
        """Serve a new kind (a CRD's); its objects, if it was served before, are kept."""
        state = self._kinds.get(resource.kind)
        if state is None:
            self._kinds[resource.kind] = KindState(resource)
        elif state.resource != resource:
            state.resource = resource

    def unregister(self, kind: str) -> list[Stored]:
        """Stop serving `kind`; its objects are deleted (watchers get DELETED) and returned."""
        state = self._kinds.get(kind)
        if state is None:
            return []
        gone = [self.delete(kind, key) for key in list(state.objects)]
        del self._kinds[kind]
        self.condition.notify_all()
        return [g for g in gone if g is not None]

    def get(self, kind: str, key: str) -> Stored | None:
        """The stored object of `kind` under `key` (`namespace/name`, or `name`), or None."""
        return self._kinds[kind].objects.get(key)

    def put(self, kind: str, manifest: dict[str, Any], model: Any) -> Stored:
        """Store `manifest` as the object's new state at the next resourceVersion (stamped in its
        metadata) and record the ADDED or MODIFIED event.
        """
        state = self._kinds[kind]
        rv = self._next_revision()
        manifest.setdefault("metadata", {})["resourceVersion"] = str(rv)
        key = key_of(manifest)
        old = state.objects.get(key)
        stored = Stored(rv, manifest, encode(manifest), selectable_fields(state.resource, manifest), model)
        if old is None:
            state.keys = None
        state.objects[key] = stored
        event = ADDED if old is None else MODIFIED
        self._append(
            state, WatchEvent(rv, event, stored.body, stored.fields, None if old is None else old.fields, manifest)
        )
        return stored

    def delete(self, kind: str, key: str) -> Stored | None:
        """Remove the object (DELETED event, with its last state at the deletion's
        resourceVersion); None when there was none.
        """
        state = self._kinds[kind]
        old = state.objects.pop(key, None)
        if old is None:
            return None
        state.keys = None
        rv = self._next_revision()
        metadata: Mapping[str, Any] = old.manifest.get("metadata") or {}
        manifest = dict(old.manifest, metadata=dict(metadata, resourceVersion=str(rv)))
        self._append(state, WatchEvent(rv, DELETED, encode(manifest), old.fields, old.fields, manifest))
        return old

    def forget_history(self) -> None:
        """Drop every kind's events: the state so far is no history (a watch from before it must
        list again).
        """
        for state in self._kinds.values():
            state.events.clear()
            state.floor = self._revision

    def _next_revision(self) -> int:
        self._revision += 1
        return self._revision

    def _append(self, state: KindState, event: WatchEvent) -> None:
        state.events.append(event)
        state.latest = event.rv
        while len(state.events) > self._history:
            state.floor = state.events.popleft().rv
