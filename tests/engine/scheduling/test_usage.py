"""`pool_usage`: how full each NodePool is, for its limits (the provisioner's and consolidation's one rule)."""

from __future__ import annotations

from dataclasses import replace

from nodewright.engine.scheduling.usage import pool_usage
from nodewright.model import labels as wk
from nodewright.model.nodeclaim import NodeClaim
from tests.builders import instance_type, node

SMALL = instance_type("m5.large", cpu="2", memory="8Gi", price=0.096)
BIG = instance_type("m5.xlarge", cpu="4", memory="16Gi", price=0.192)
TYPES = {"default": {t.name: t for t in (SMALL, BIG)}}


def claim(name: str, **fields: object) -> NodeClaim:
    return NodeClaim(name=name, nodepool="default", **fields)  # type: ignore[arg-type]


def test_nodes_count_as_they_are_and_claims_in_flight_by_type_or_largest_option() -> None:
    n1 = node("n1", cpu="2", labels={wk.NODEPOOL: "default"})
    claims = [
        claim("launched", instance_type="m5.large"),
        claim("planned", instance_type_options=("m5.large", "m5.xlarge")),
        claim("registered", instance_type="m5.xlarge", node_name="n1"),
    ]
    used = pool_usage([n1], claims, TYPES)
    assert used["default"]["cpu"] == (2 + 2 + 4) * 1000
    assert used["default"]["nodes"] == 3 * 1000  # limits.nodes: one each, as Karpenter counts


def test_a_node_that_joined_before_its_claim_learned_its_name_counts_once() -> None:
    joined = replace(
        node("ip-1", cpu="4", labels={wk.NODEPOOL: "default", wk.NW_NODECLAIM: "c1"}),
        provider_id="aws:///us-east-1a/i-1",
    )
    by_label = claim("c1", instance_type="m5.xlarge")
    by_provider = claim("c2", instance_type="m5.xlarge", provider_id="aws:///us-east-1a/i-1")
    once = joined.capacity + {"nodes": 1000}  # and one node, not two
    assert pool_usage([joined], [by_label], TYPES) == {"default": once}
    assert pool_usage([joined], [by_provider], TYPES) == {"default": once}
