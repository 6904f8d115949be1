"""The in-memory cluster's Events: those recorded, created and patched, and kube-scheduler's.

Role: `ClusterEvents`, the Events an `InMemoryCluster` (`nodewright.inmemory.cluster`) holds: it
owns them, their series and their counts, and reads the cluster's store only for pods' uids and
to tell the store's listeners. Nodewright's
Events go through the real adapter's correlator (`record`), so series and rate limits are what a
cluster would hold; an API client's arrive as `create_event` / `patch_event_series`; kube-
scheduler's (Scheduled, FailedScheduling) fold into series of their own. The API server's event
TTL is played by `expire_events`, swept as Events are created.
"""

from __future__ import annotations

from dataclasses import replace

from nodewright.inmemory.clusterstore import (
    ADDED,
    DELETED,
    EVENT_SWEEP,
    EVENT_TTL,
    MODIFIED,
    Call,
    ClusterStore,
)
from nodewright.model.event import (
    CREATE,
    Event,
    EventCorrelator,
    EventWrite,
    ObjectRef,
    StoredEvent,
)
from nodewright.model.pod import Pod


class ClusterEvents:
    """Stored Events and their series (module docstring), over the cluster's `store`."""

    def __init__(self, store: ClusterStore) -> None:
        self.store = store
        # Events by namespace/name; Nodewright's go through the real adapter's correlator.
        self._events: dict[str, StoredEvent] = {}
        self.event_correlator = EventCorrelator()
        # kube-scheduler's events fold into series too (it uses client-go's broadcaster), unlimited.
        self._scheduler_events = EventCorrelator(object_burst=1 << 30, invocation_budget=1 << 30)
        self._events_swept = store.clock.now()
        # Occurrences and Event objects ever stored, by (reporting controller, reason): the TTL
        # deletes Events, not these.
        self._event_occurrences: dict[tuple[str, str], int] = {}
        self._event_objects: dict[tuple[str, str], int] = {}

    def record(self, event: Event, now: float) -> None:
        """Store what the adapter would write for this occurrence (see `events`); a pod's
        reference gets the stored pod's uid, as the adapter's does.
        """
        ref = event.regarding
        known = self.store.pods.get(f"{ref.namespace}/{ref.name}") if ref.kind == "Pod" and not ref.uid else None
        if known is not None and known.uid:
            event = replace(event, regarding=replace(ref, uid=known.uid))
        write = self._store_event(self.event_correlator, event, now, "nodewright", "nodewright")
        if write is not None:  # a request the adapter would have sent (never fails here: best effort)
            self.store.calls.append(Call("record", f"{write.namespace}/{write.name}"))

    def events(self, regarding: ObjectRef | None = None) -> list[StoredEvent]:
        """The stored Events (about `regarding`'s kind, namespace and name when given), oldest first."""
        found = [
            e
            for e in self._events.values()
            if regarding is None
            or (e.event.regarding.kind, e.event.regarding.namespace, e.event.regarding.name)
            == (regarding.kind, regarding.namespace, regarding.name)
        ]
        return sorted(found, key=lambda e: (e.first, e.name))

    def create_event(self, stored: StoredEvent) -> bool:
        """Store an Event an API client created; False (nothing changes) when the name is taken."""
        key = f"{stored.namespace}/{stored.name}"
        if key in self._events:
            return False
        now = self.store.clock.now()
        if now - self._events_swept >= EVENT_SWEEP:  # a long simulation's Events stay bounded
            self._events_swept = now
            self.expire_events(now - EVENT_TTL)
        self._events[key] = stored
        by = (stored.reporting_controller, stored.event.reason)
        self._event_objects[by] = self._event_objects.get(by, 0) + 1
        self._event_occurrences[by] = self._event_occurrences.get(by, 0) + stored.count
        self.store.notify("event", ADDED, stored)
        return True

    def patch_event_series(self, namespace: str, name: str, count: int, last: float) -> StoredEvent | None:
        """Move a stored Event's series to `count` occurrences, the last at `last`; None when missing."""
        current = self._events.get(f"{namespace}/{name}")
        if current is None:
            return None
        patched = replace(current, count=count, last=last)
        by = (current.reporting_controller, current.event.reason)
        self._event_occurrences[by] = self._event_occurrences.get(by, 0) + max(0, count - current.count)
        self._events[f"{namespace}/{name}"] = patched
        self.store.notify("event", MODIFIED, patched)
        return patched

    def event_summary(self) -> dict[str, dict[str, dict[str, int]]]:
        """Every Event stored so far (expired ones too), by reporting controller and reason: Event
        objects created (`events`) and the occurrences their series counted (`occurrences`).
        """
        out: dict[str, dict[str, dict[str, int]]] = {}
        for (controller, reason), objects in sorted(self._event_objects.items()):
            counted = self._event_occurrences.get((controller, reason), objects)
            out.setdefault(controller, {})[reason] = {"events": objects, "occurrences": counted}
        return out

    def expire_events(self, last_before: float) -> int:
        """Delete the Events last seen before `last_before`, as the API server's event TTL (one
        hour by default) does; the number deleted.
        """
        gone = [key for key, e in self._events.items() if max(e.first, e.last) < last_before]
        for key in gone:
            self.store.notify("event", DELETED, self._events.pop(key))
        return len(gone)

    def _store_event(
        self, correlator: EventCorrelator, event: Event, now: float, controller: str, instance: str
    ) -> EventWrite | None:
        write = correlator.observe(event, now)
        if write is None:
            return None
        if write.verb == CREATE:
            self.create_event(replace(StoredEvent.written(write, instance), reporting_controller=controller))
        elif self.patch_event_series(write.namespace, write.name, write.count, write.last) is None:
            correlator.forget(event)  # expired, as the adapter does on a 404
        return write

    def scheduler_event(self, pod: Pod, kind: str, reason: str, note: str, action: str) -> None:
        """Store kube-scheduler's Event about `pod` (Scheduled, FailedScheduling), in its own series."""
        event = Event(ObjectRef.pod(pod.key, pod.uid), kind, reason, note, action)
        self._store_event(
            self._scheduler_events, event, self.store.clock.now(), "default-scheduler", "default-scheduler"
        )
