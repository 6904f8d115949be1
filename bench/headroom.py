"""Consolidation headroom: how far a simulated cluster's $/h is from a fresh plan of its pods.

`python -m bench.headroom SCENARIO.yaml HOURS [HOURS ...]` runs the scenario (with
`nodewright simulate`'s runner, no report) up to each time and prints, at that moment, the $/h of
the nodes it runs against the $/h of `solve()` placing every one of its pods (daemonsets as
overhead) on an empty cluster with the same NodePools and catalog. A consolidator cannot do much
better than that fresh plan, so `current / fresh` bounds what any consolidation mode can still
save at that moment. One run per time, each from the scenario's start.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import sys
from collections.abc import Mapping, Sequence

from nodewright.controllers.provisionoptions import pool_capacities
from nodewright.engine.headroom import measure
from nodewright.model.node import Node
from nodewright.simulator.runner import run_scenario
from nodewright.simulator.scenario import load_scenario


def main(argv: Sequence[str] | None = None) -> int:
    """Print the cluster's $/h and the fresh plan's at each requested time."""
    parser = argparse.ArgumentParser(prog="python -m bench.headroom", description=__doc__.splitlines()[0])
    parser.add_argument("scenario")
    parser.add_argument("hours", type=float, nargs="+", help="virtual hours from the start")
    args = parser.parse_args(argv)
    base = load_scenario(args.scenario)
    print("hours  pods  nodes  current $/h  fresh $/h  fresh nodes  current/fresh")
    for hours in args.hours:
        world = run_scenario(dataclasses.replace(base, duration=hours * 3600), plots=False).world
        if world is None or world.store is None:
            print(f"{hours:5g}  the scenario did not run", file=sys.stderr)
            return 1
        snapshot = world.cluster.snapshot()
        pools = pool_capacities(list(base.nodepools), base.nodeclasses, world.catalog)
        price = {c.node_name: c.price for c in world.store.claims() if c.node_name}
        found = measure(snapshot, pools, functools.partial(_claim_price, price), world.clock.now())
        pods = sum(1 for p in snapshot.pods if not p.daemon)
        fresh_claims = len(found.plan.claims) if found.plan is not None else 0
        current, fresh_cost = found.current, found.fresh
        print(
            f"{hours:5g}  {pods:4d}  {len(snapshot.nodes):5d}  {current:11.3f}  {fresh_cost:9.3f}  "
            f"{fresh_claims:11d}  {current / fresh_cost if fresh_cost else float('nan'):13.3f}"
        )
    return 0


def _claim_price(prices: Mapping[str, float], node: Node) -> float | None:
    """A node's $/h: the price of the claim it registered for (the simulator's store knows it)."""
    return prices.get(node.name)


if __name__ == "__main__":
    sys.exit(main())
