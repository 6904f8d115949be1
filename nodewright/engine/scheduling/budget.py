"""A solve's deadline, and the fair turns a pass gives its tenants under it. Pure.

Role: bound a provisioning pass. A provisioner invocation has a function timeout; a solve that
runs past it launches nothing, so every pass times out and no pod of the cluster gets capacity.
With a `SolveDeadline`, a pass stops adding classes to its plan once the deadline passes: what it
planned is launched, and the classes it did not reach are reported as `deferred` (the caller
solves them in its next pass, at once: they are not unschedulable).

The engine reads no clock: the caller passes the clock as a callable (the provisioner passes a
monotonic one; a test a scripted one), and the engine only compares its readings.

Fairness (`FairTurns`): classes are placed in the solver's order (largest first), one tenant
(a namespace's pods whose first choice is one NodePool) after another as that order says. Under a
deadline each tenant has an equal share of the budget; a tenant that has used its share waits
until every other tenant's classes had their turn, then gets the time left. So a tenant whose
pods are slow to place (thousands of classes, each with its own constraint) cannot starve the
rest of the cluster: the other tenants' pods are in the first pass's plan, and the slow tenant's
remainder is deferred to the next pass. Without a deadline the order is exactly the solver's.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")

# Why a pod was not planned: the pass ran out of time before its class (it is solved next pass).
DEFERRED = "the pass reached its solve deadline before this pod; it is planned in the next pass"


@dataclass(frozen=True, slots=True)
class SolveDeadline:
    """The time (`at`, in `clock`'s units) after which a solve plans nothing more."""

    clock: Callable[[], float]
    at: float

    @classmethod
    def within(cls, clock: Callable[[], float], seconds: float) -> SolveDeadline:
        """A deadline `seconds` from now by `clock`."""
        return cls(clock, clock() + seconds)

    def expired(self) -> bool:
        """True once `clock` reads `at` or later."""
        return self.clock() >= self.at

    def remaining(self) -> float:
        """Seconds (clock units) left; negative once expired."""
        return self.at - self.clock()


class FairTurns:
    """Runs `handle` on items in order under a deadline, tenant by tenant (see the module docstring).

    `run` returns the items it did not reach (deferred), in their original order.
    """

    def __init__(self, deadline: SolveDeadline | None) -> None:
        self.deadline = deadline

    def run(self, items: Sequence[T], tenant_of: Callable[[T], Hashable], handle: Callable[[T], None]) -> list[T]:
        """Handle each item; with a deadline, postpone a tenant past its share and defer what is left."""
        deadline = self.deadline
        if deadline is None:
            for item in items:
                handle(item)
            return []
        tenants = {tenant_of(item) for item in items}
        # One clock reading per item handled: the time between two readings is the item's.
        now = deadline.clock()
        share = max(0.0, deadline.at - now) / max(1, len(tenants))
        spent: dict[Hashable, float] = {}
        postponed: list[int] = []
        deferred: list[int] = []
        for i, item in enumerate(items):
            tenant = tenant_of(item)
            if spent.get(tenant, 0.0) >= share:
                postponed.append(i)
            elif now >= deadline.at:
                deferred.append(i)
            else:
                handle(item)
                later = deadline.clock()
                spent[tenant] = spent.get(tenant, 0.0) + later - now
                now = later
        for i in postponed:
            if now >= deadline.at:
                deferred.append(i)
            else:
                handle(items[i])
                now = deadline.clock()
        return [items[i] for i in sorted(deferred)]
