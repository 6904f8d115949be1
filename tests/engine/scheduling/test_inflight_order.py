"""Nodewright's solver tries in-flight claims in launch order, never by their names.

A claim's name ends in a random suffix (`controllers.provisionoptions.claim_name`), so a solver
that tried in-flight claims by name would plan the same input differently in two processes: a
pod that fits two claims would go to whichever name sorted first (seen as two results of one
generated day in nodewright mode). Faked: nothing; the plans come from `solve()`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from nodewright.engine.scheduling import PoolCapacity, SchedulingInput, solve
from nodewright.model.nodeclaim import NodeClaim
from tests.builders import instance_type, node_pool, pod
from tests.engine.scheduling.scenario import inflight

MEDIUM = instance_type("m5.xlarge", cpu="4", memory="16Gi", pods=58, price=0.192)


def _placed_on(claims: tuple[NodeClaim, ...]) -> Mapping[str, tuple[str, ...]]:
    inp = SchedulingInput(
        pods=(pod("web-0", cpu="1", memory="1Gi"),),
        pools=(PoolCapacity(node_pool(), (MEDIUM,)),),
        inflight=claims,
    )
    result = solve(inp)
    assert not result.claims, "the pod fits an in-flight claim: nothing new is launched"
    return result.existing


def test_a_pod_that_fits_two_twin_claims_goes_to_the_one_created_first_whatever_their_names() -> None:
    early = replace(inflight("default-ffff", "m5.xlarge"), created_at=10.0, launched_at=11.0)
    late = replace(inflight("default-0000", "m5.xlarge"), created_at=20.0, launched_at=21.0)

    assert _placed_on((late, early)) == {"default-ffff": ("default/web-0",)}
    assert _placed_on((early, late)) == {"default-ffff": ("default/web-0",)}
    renamed = (replace(early, name="default-0000"), replace(late, name="default-ffff"))
    assert _placed_on(renamed) == {"default-0000": ("default/web-0",)}
