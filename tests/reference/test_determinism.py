"""The Karpenter reference decides the same way in every process.

Claim names end in a random suffix (`controllers.provisionoptions.claim_name`), and Python
randomises string hashing per process (PYTHONHASHSEED), so nothing the reference decides may
depend on the order of claim names or of sets of strings. Karpenter itself breaks such ties by
Go map order or by its own random NodeClaim names; the reference picks a stable order instead
(docs/karpenter-reference.md, "ties").

Faked: nothing. The decisions run through `schedule` and `Disruption.compute_commands`; the
hash-seed case runs them in two fresh interpreters.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from nodewright.engine.scheduling import PoolCapacity, SchedulingInput
from nodewright.model.nodeclaim import NodeClaim
from nodewright.reference.karpenter.scheduler import schedule
from tests.builders import instance_type, node_pool, pod
from tests.engine.scheduling.scenario import inflight

ROOT = Path(__file__).resolve().parents[2]
MEDIUM = instance_type("m5.xlarge", cpu="4", memory="16Gi", pods=58, price=0.192)
LARGE = instance_type("m5.2xlarge", cpu="8", memory="32Gi", pods=58, price=0.384)


def _placed_on(claims: tuple[NodeClaim, ...]) -> Mapping[str, tuple[str, ...]]:
    inp = SchedulingInput(
        pods=(pod("web-0", cpu="1", memory="1Gi"),),
        pools=(PoolCapacity(node_pool(), (MEDIUM, LARGE)),),
        inflight=claims,
    )
    return schedule(inp).existing


def test_in_flight_claims_are_tried_in_launch_order_whatever_their_names() -> None:
    # The pod fits either claim; the one created first takes it, however the random suffixes sort.
    early = replace(inflight("default-ffff", "m5.2xlarge"), created_at=10.0, launched_at=11.0)
    late = replace(inflight("default-0000", "m5.xlarge"), created_at=20.0, launched_at=21.0)

    assert _placed_on((late, early)) == {"default-ffff": ("default/web-0",)}
    assert _placed_on((early, late)) == {"default-ffff": ("default/web-0",)}
    renamed = (replace(early, name="default-0000"), replace(late, name="default-ffff"))
    assert _placed_on(renamed) == {"default-0000": ("default/web-0",)}


# A provisioning decision (topology spread over zones, in-flight claims, several NodePools) and a
# disruption pass (consolidation over several nodes), printed as JSON.
_DECIDE = """
import json
from collections.abc import Mapping
from dataclasses import replace
from nodewright.engine.scheduling import PoolCapacity, SchedulingInput
from nodewright.model import labels as wk
from nodewright.model.pod import SpreadConstraint
from nodewright.model.selectors import LabelSelector
from nodewright.reference.karpenter.disruption import Disruption
from nodewright.reference.karpenter.scheduler import schedule
from tests.builders import instance_type, node_pool, pod
from tests.engine.disruption.scenario import World, pool
from tests.engine.scheduling.scenario import inflight

types = tuple(
    instance_type(f"m5.{size}", cpu=str(c), memory=f"{4 * c}Gi", pods=58, price=0.048 * c)
    for size, c in (("large", 2), ("xlarge", 4), ("2xlarge", 8))
)
spread = SpreadConstraint(1, wk.ZONE, "DoNotSchedule", LabelSelector((("app", "web"),)))
pods = [pod(f"web-{i}", cpu="700m", labels={"app": "web"}, spread=(spread,)) for i in range(7)]
pods += [pod(f"batch-{i}", cpu="300m", labels={"app": f"b{i % 3}"}) for i in range(9)]
claims = tuple(
    replace(inflight(f"default-{s}", "m5.xlarge", zone=z), created_at=5.0, launched_at=6.0)
    for s, z in (("9f3c", "us-east-1a"), ("04ab", "us-east-1b"), ("e71d", "us-east-1a"))
)
pools = (PoolCapacity(node_pool("default"), types), PoolCapacity(node_pool("spare", weight=5), types))
plan = schedule(SchedulingInput(pods=tuple(pods), pools=pools, inflight=claims))
world = World(pools=[pool()])
for i in range(6):
    world.node(f"n{i}", "m5.xlarge")
    world.put(f"n{i}", 1 + i % 2, cpu="500m")
result = Disruption().compute_commands(world.input())
print(json.dumps({
    "claims": [[c.nodepool, c.instance_type.name, c.offering.zone, sorted(p.key for p in c.pods)] for c in plan.claims],
    "existing": {k: sorted(v) for k, v in plan.existing.items()},
    "unschedulable": plan.unschedulable,
    "commands": [
        [c.method, list(c.candidates), [r.instance_type.name for r in c.replacements]] for c in result.commands
    ],
    "rejected": result.rejected,
}, sort_keys=True))
"""


def _decide(hash_seed: str) -> dict[str, object]:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", _DECIDE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    decided: dict[str, object] = json.loads(done.stdout)
    return decided


def test_the_same_decisions_under_two_hash_seeds() -> None:
    first, second = _decide("1"), _decide("2")

    assert first == second
    # Every part decided something: claims opened, pods on in-flight claims, a disruption command.
    assert first["claims"]
    assert first["existing"]
    assert first["commands"]
