"""Static NodePools' replacement (`spec.replicas`): a drifted node (reason `Drifted`), else one
past `expireAfter` (reason `Expired`, `model.expiry`), gets one new empty node of the pool
launched first, then is drained and deleted; one node at a time, within the budgets for that
reason, and only while the pool is not above `replicas` (`StaticScaleDown` first) and one more
node stays within limits.nodes, as Karpenter's static drift does. Pure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from nodewright.engine.disruption.candidates import Candidate, ClusterView
from nodewright.engine.disruption.methods.drift import Drift
from nodewright.engine.disruption.methods.expiration import Expiration
from nodewright.engine.disruption.methods.shared import drifted, note, recheck, within_budget
from nodewright.engine.disruption.methods.static_scale_down import surplus
from nodewright.engine.disruption.simulate import DisruptionCache, Simulator
from nodewright.engine.disruption.types import Command
from nodewright.engine.scheduling.static import count_static, is_static, node_limit, plan_static
from nodewright.model.duration import format_duration
from nodewright.model.expiry import expired

STATIC_REPLACE = "static-replace"


def _expired(view: ClusterView, c: Candidate) -> str | None:
    if not expired(c.pool, c.claim, view.inp.now):
        return None
    return f"older than expireAfter {format_duration(c.pool.expire_after)}"


# Why a static pool's node is replaced, by budget reason, in the order they are tried.
TESTS: tuple[tuple[str, Callable[[ClusterView, Candidate], str | None]], ...] = (
    (Drift.reason, drifted),
    (Expiration.reason, _expired),
)


@dataclass(frozen=True, slots=True)
class StaticReplace:
    """The static replacement method (see the module docstring). Its commands carry the reason
    they count against (`Drifted` or `Expired`); `reason` names the first.
    """

    name = STATIC_REPLACE
    reason = Drift.reason
    budgeted = True

    def compute(self, view: ClusterView, sim: Simulator, why: dict[str, str]) -> Command | None:
        """Replace one drifted or expired node of a static pool, its replacement launched first."""
        for reason, test in TESTS:
            found: list[tuple[Candidate, str]] = []
            for c in view.eligible():
                if not is_static(c.pool):
                    continue
                detail = test(view, c)
                if detail is not None:
                    found.append((c, detail))
            if not found:
                continue
            allowed = within_budget([c for c, _ in found], view.quotas(reason), reason, why, view.blockers)
            details = {c.name: d for c, d in found}
            for c in sorted(allowed, key=lambda c: (c.pool.name, c.name)):
                pool = view.pools[c.pool.name]
                count = count_static(c.pool, view.inp.snapshot.nodes, view.inp.claims)
                if surplus(view, c.pool.name) > 0:
                    note(why, c.name, f"{details[c.name]}; its static NodePool scales down first")
                    continue
                limit = node_limit(c.pool)
                if limit is not None and count.total + 1 > limit:
                    note(why, c.name, f"{details[c.name]}; a replacement would pass limits.nodes ({limit})")
                    continue
                planned, problem = plan_static(pool, 1, view.inp.snapshot.daemonsets, view.inp.blocked)
                if not planned:
                    note(why, c.name, f"{details[c.name]}; no replacement can launch: {problem}")
                    continue
                new = planned[0].price
                return Command(
                    method=self.name,
                    reason=reason,
                    candidates=(c.name,),
                    replacements=planned,
                    savings=c.price - new,
                    detail=f"replace static {c.describe()}: {details[c.name]}; "
                    f"1 replacement at ${new:.4f}/h launches first",
                    pods=tuple(sorted(p.key for p in c.pods)),
                )
        return None

    def still_holds(self, command: Command, view: ClusterView, cache: DisruptionCache | None) -> str | None:
        """Stale when the shared re-check fails or a candidate is no longer drifted (expired)."""
        candidates, stale = recheck(command, view)
        if stale:
            return stale
        test = dict(TESTS).get(command.reason, _expired)
        for c in candidates:
            if test(view, c) is None:
                return f"candidate {c.name} is no longer {command.reason.lower()}"
        return None
