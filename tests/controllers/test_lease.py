"""`InvocationLease`: one holder at a time, never past the invocation's deadline, and no write
when a renewal would not move the expiry.

Faked: nothing; the in-memory state store (the same conditional semantics as DynamoDB's, tested
in tests/adapters) counts its writes through a thin subclass; time is a VirtualClock.
"""

from __future__ import annotations

from nodewright.controllers.lease import InvocationLease
from nodewright.inmemory.clock import VirtualClock
from nodewright.inmemory.state import InMemoryStateStore


class CountingStore(InMemoryStateStore):
    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def acquire_lease(self, name: str, holder: str, now: float, ttl: float) -> bool:
        self.writes += 1
        return super().acquire_lease(name, holder, now, ttl)


def lease(
    store: InMemoryStateStore, clock: VirtualClock, holder: str, *, longest: float, deadline: float
) -> InvocationLease:
    return InvocationLease(store, clock, "provisioner", holder, longest=longest, deadline=deadline)


def test_a_lease_held_to_the_deadline_is_not_written_again() -> None:
    store, clock = CountingStore(), VirtualClock(1000.0)
    mine = lease(store, clock, "a", longest=120, deadline=1060)

    assert mine.acquire()
    assert mine.until == 1060  # the invocation's deadline, not now + 120
    for _ in range(10):
        clock.advance(5)
        mine.renew()

    assert store.writes == 1
    assert not lease(store, clock, "b", longest=120, deadline=2000).acquire()  # still held
    clock.advance_to(1060)
    assert lease(store, clock, "b", longest=120, deadline=2000).acquire()  # expired with the invocation


def test_a_lease_shorter_than_the_invocation_is_renewed_as_time_passes() -> None:
    store, clock = CountingStore(), VirtualClock(0.0)
    mine = lease(store, clock, "a", longest=30, deadline=100)
    assert mine.acquire()
    assert mine.until == 30

    clock.advance(20)
    mine.renew()
    assert mine.until == 50
    clock.advance(70)
    mine.renew()
    assert mine.until == 100  # capped at the deadline

    assert store.writes == 3
    clock.advance(5)
    assert not lease(store, clock, "b", longest=30, deadline=500).acquire()


def test_release_frees_the_lease_for_the_next_invocation() -> None:
    store, clock = CountingStore(), VirtualClock(0.0)
    mine = lease(store, clock, "a", longest=60, deadline=60)
    assert mine.acquire()

    mine.release()

    assert lease(store, clock, "b", longest=60, deadline=120).acquire()
    mine.release()  # a released (or taken over) lease is left to its new holder
    assert not lease(store, clock, "c", longest=60, deadline=120).acquire()
