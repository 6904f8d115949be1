"""Drift: whether a node no longer matches what its NodePool and EC2NodeClass would launch now. Pure.

Three kinds, as in Karpenter:

* *template*: the claim records the hash of the NodePool template it was launched from
  (`model.nodepool.template_hash`) and the NodePool's hash is different now;
* *image*: the claim records the AMI its instance booted and the EC2NodeClass no longer resolves
  to it (the controller passes the AMI ids each EC2NodeClass resolves to now);
* *requirements*: a label the node has (or its instance type, zone or capacity type fixes) is no
  longer allowed by the NodePool's requirements.

The template hash leaves out the requirements on purpose: widening a requirement (one more
instance family) must not replace every node, and narrowing one is caught precisely by the
requirements check. Weight, limits and disruption settings are left out too, and so are
`expireAfter` and `terminationGracePeriod` (Karpenter v1 ignores them for drift).
"""

from __future__ import annotations

from collections.abc import Mapping

from nodewright.model import labels as wk
from nodewright.model.instancetype import InstanceType
from nodewright.model.node import Node
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.nodepool import NodePool, template_hash


def node_facts(node: Node, claim: NodeClaim, instance_type: InstanceType | None) -> dict[str, str]:
    """The labels the node has or is known to have: its instance type's single-valued labels,
    the claim's zone and capacity type, then the node's own labels.
    """
    facts: dict[str, str] = {}
    if instance_type is not None:
        for key in instance_type.requirements:
            if key in (wk.ZONE, wk.CAPACITY_TYPE):
                continue
            value = instance_type.label(key)
            if value is not None:
                facts[key] = value
    if claim.zone:
        facts[wk.ZONE] = claim.zone
    if claim.capacity_type:
        facts[wk.CAPACITY_TYPE] = claim.capacity_type
    facts.update(node.labels)
    return facts


def drift_reason(
    node: Node,
    claim: NodeClaim,
    pool: NodePool,
    images: Mapping[str, frozenset[str]],
    instance_type: InstanceType | None,
) -> str | None:
    """Why the node has drifted from its NodePool or EC2NodeClass, or None when it has not."""
    if claim.template_hash and claim.template_hash != template_hash(pool):
        return f"NodePool {pool.name}'s template changed since the node was launched"
    resolved = images.get(claim.node_class or pool.node_class_ref.name)
    if claim.image_id and resolved and claim.image_id not in resolved:
        return (
            f"EC2NodeClass {claim.node_class or pool.node_class_ref.name} no longer resolves to "
            f"{claim.image_id} (now {', '.join(sorted(resolved))})"
        )
    facts = node_facts(node, claim, instance_type)
    for key, req in pool.requirements.items():
        value = facts.get(key)
        if value is None:
            # A well-known label the node does not show is unknown, not absent: never drift on it.
            if req.allows_absent() or key in wk.WELL_KNOWN:
                continue
            return f"the node has no {key} label, which NodePool {pool.name} requires ({req})"
        if not req.has(value):
            return f"{key}={value} no longer meets NodePool {pool.name}'s requirement {req}"
    return None
