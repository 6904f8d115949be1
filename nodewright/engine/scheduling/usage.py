"""What each NodePool already uses, for its limits. Pure.

The provisioner checks limits against this before it plans and launches; consolidation checks its
replacements against it. One rule for both, so they never disagree about how full a NodePool is.

Every node and every claim not registered yet also uses one `nodes` (Karpenter's `limits.nodes`
and `status.resources.nodes`: its cluster state gives each StateNode, node or claim in flight, a
capacity of one node). The solver charges a new claim the same one node (`charged`), so a pool
with `limits.nodes: 2` never has a third node or claim, dynamic or static.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from nodewright.model.instancetype import InstanceType
from nodewright.model.node import Node
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.resources import Resources

NODES = "nodes"  # the limit on a NodePool's count of nodes, beside its resources
ONE_NODE = Resources({NODES: 1000})  # quantities are held in thousandths


def charged(capacity: Resources) -> Resources:
    """What one node or claim of `capacity` uses of its NodePool's limits: its capacity and one node."""
    return capacity + ONE_NODE


def pool_usage(
    nodes: Iterable[Node], claims: Iterable[NodeClaim], types: Mapping[str, Mapping[str, InstanceType]]
) -> dict[str, Resources]:
    """Capacity per NodePool: its nodes, plus its claims not registered as nodes yet, by their
    type once launched or their largest option before (`types`: NodePool -> name -> type); and
    under `nodes`, how many of both there are.

    A claim counts as registered when a Node carries its name (`node_name`), its claim label or
    its providerID: a node can join before its claim record learns its name, and counting both
    would hold a NodePool's limit twice.
    """
    used: dict[str, Resources] = {}
    registered: set[str] = set()
    joined: set[str] = set()  # claim names and providerIDs the nodes carry
    for node in nodes:
        registered.add(node.name)
        joined.update(key for key in (node.nodeclaim, node.provider_id) if key)
        if node.nodepool:
            used[node.nodepool] = used.get(node.nodepool, Resources()) + charged(node.capacity)
    for claim in claims:
        if claim.node_name in registered or claim.name in joined or claim.provider_id in joined:
            continue  # counted as its Node above
        catalog = types.get(claim.nodepool, {})
        if claim.instance_type in catalog:
            capacity = catalog[claim.instance_type].capacity
        else:
            capacity = Resources()
            for name in claim.instance_type_options:
                if name in catalog:
                    capacity = capacity.maximum(catalog[name].capacity)
        used[claim.nodepool] = used.get(claim.nodepool, Resources()) + charged(capacity)
    return used
