"""`InvocationLease`: the state store's named lease, held by one invocation for at most its life.

Role: the provisioner and the consolidator each take a lease so that two invocations never act
at once. The lease never outlives the invocation: a Lambda killed at its timeout runs no
`finally`, and a lease held past the deadline would turn the next ticks away as busy. Renewing
writes only when it would move the expiry later (a lease already held to the deadline needs no
write), so a long loop does not cost a DynamoDB write per step.
"""

from __future__ import annotations

from collections.abc import Callable

from nodewright.ports import Clock, Leases


class InvocationLease:
    """Lease `name` for `holder`, up to `longest` seconds at a time and never past `deadline`."""

    def __init__(self, store: Leases, clock: Clock, name: str, holder: str, *, longest: float, deadline: float) -> None:
        self.store = store
        self.clock = clock
        self.name = name
        self.holder = holder
        self.longest = longest
        self.deadline = deadline
        self.until = 0.0  # when the lease we hold expires (0: not held)

    def _expiry(self, now: float) -> float:
        return max(now + 1.0, min(now + self.longest, self.deadline))

    def acquire(self) -> bool:
        """Take the lease; False while another holder has it."""
        now = self.clock.now()
        expires = self._expiry(now)
        if not self.store.acquire_lease(self.name, self.holder, now, expires - now):
            return False
        self.until = expires
        return True

    def acquire_within(self, until: float, poll: float, sleep: Callable[[float], None]) -> bool:
        """Take the lease, trying every `poll` seconds until `until` (epoch seconds, by the clock)
        while another holder has it. A holder killed at its timeout never releases, so its lease
        stays until its own deadline: giving up at once would leave the next minute to nobody.
        """
        while not self.acquire():
            if self.clock.now() + poll >= until:
                return False
            sleep(poll)
        return True

    def renew(self) -> None:
        """Extend the lease when that would move its expiry later; otherwise write nothing."""
        now = self.clock.now()
        expires = self._expiry(now)
        if expires > self.until and self.store.acquire_lease(self.name, self.holder, now, expires - now):
            self.until = expires

    def release(self) -> None:
        """Give the lease up (nothing happens if another holder has taken it over)."""
        self.store.release_lease(self.name, self.holder)
        self.until = 0.0
