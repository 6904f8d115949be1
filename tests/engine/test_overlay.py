"""NodeOverlays applied to NodePools' instance types (`nodewright.engine.overlay.apply_overlays`).

Overlays are read from Karpenter manifests with `parse_yaml` (as every config source reads them),
applied to builder instance types, and the effect is observed on the returned offerings, the
reported changes and the refused overlays: matching by labels, offering and NodePool; `price`
against `priceAdjustment`; weights; same-weight conflicts; capacity; and that solve() then
chooses by the effective price.
"""

from __future__ import annotations

import textwrap

import pytest

from nodewright.config import parse_yaml
from nodewright.engine.overlay import apply_overlays, ordered
from nodewright.engine.scheduling import PoolCapacity, SchedulingInput, solve
from nodewright.model.instancetype import InstanceType
from nodewright.model.nodeoverlay import NodeOverlay
from nodewright.model.nodepool import NodePool
from tests.builders import instance_type, node_pool, pod

M5 = instance_type("m5.large", cpu="2", memory="8Gi", price=0.096, spot_price=0.04, zones=("a", "b"))
C6I = instance_type("c6i.large", cpu="2", memory="4Gi", price=0.085, spot_price=0.035, zones=("a", "b"))
M7I = instance_type("m7i.large", cpu="2", memory="8Gi", price=0.1008, zones=("a", "b"))


def overlays(*specs: str) -> list[NodeOverlay]:
    """NodeOverlay manifests from `name: spec-yaml` blocks, through the config parser."""
    text = ""
    for block in specs:
        name, _, spec = block.partition("\n")
        text += f"---\napiVersion: karpenter.sh/v1alpha1\nkind: NodeOverlay\nmetadata: {{name: {name}}}\nspec:\n"
        text += textwrap.indent(textwrap.dedent(spec), "  ")
    loaded = parse_yaml(text, "overlays.yaml")
    assert not loaded.problems
    return [d.model for d in loaded.require() if isinstance(d.model, NodeOverlay)]


def pools(*pairs: tuple[NodePool, tuple[InstanceType, ...]]) -> tuple[PoolCapacity, ...]:
    return tuple(PoolCapacity(pool, types) for pool, types in pairs)


def prices(pc: PoolCapacity) -> dict[tuple[str, str, str], float]:
    return {(it.name, o.capacity_type, o.zone): round(o.price, 6) for it in pc.instance_types for o in it.offerings}


def test_a_percentage_discount_on_one_family_changes_only_its_offerings_and_reports_list_and_effective() -> None:
    found = apply_overlays(
        pools((node_pool(), (M5, M7I))),
        overlays(
            """savings-plan
            requirements:
            - {key: karpenter.k8s.aws/instance-family, operator: In, values: [m7i]}
            priceAdjustment: "-30%"
            """
        ),
    )

    after = prices(found.pools[0])
    assert after[("m7i.large", "on-demand", "a")] == pytest.approx(0.07056)
    assert after[("m5.large", "on-demand", "a")] == 0.096
    assert found.pools[0].instance_types[0] is M5  # untouched types are the same objects
    change = found.price_of("default", "m7i.large", "b", "on-demand")
    assert change is not None
    assert (change.list_price, round(change.price, 5), change.overlay) == (0.1008, 0.07056, "savings-plan")
    assert found.conflicts == {}


def test_an_overlay_matches_offerings_by_capacity_type_and_zone() -> None:
    found = apply_overlays(
        pools((node_pool(), (M5,))),
        overlays(
            """ri-zone-a
            requirements:
            - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
            - {key: topology.kubernetes.io/zone, operator: In, values: [a]}
            price: "0.05"
            """
        ),
    )

    assert prices(found.pools[0]) == {
        ("m5.large", "on-demand", "a"): 0.05,
        ("m5.large", "on-demand", "b"): 0.096,
        ("m5.large", "spot", "a"): 0.04,
        ("m5.large", "spot", "b"): 0.04,
    }


def test_an_overlay_naming_a_nodepool_or_its_labels_applies_to_that_pool_only() -> None:
    team = node_pool("team", labels={"team": "data"})
    found = apply_overlays(
        pools((node_pool(), (M5,)), (team, (M5,))),
        overlays(
            """by-pool
            requirements: [{key: karpenter.sh/nodepool, operator: In, values: [team]}]
            priceAdjustment: "+0.01"
            """,
            """by-label
            requirements:
            - {key: team, operator: In, values: [data]}
            - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}
            priceAdjustment: "-0.01"
            weight: 5
            """,
        ),
    )

    default, team_prices = (prices(pc) for pc in found.pools)
    assert set(default.values()) == {0.096, 0.04}
    assert team_prices[("m5.large", "on-demand", "a")] == pytest.approx(0.106)
    assert team_prices[("m5.large", "spot", "a")] == pytest.approx(0.03)  # by-label: heavier on spot


def test_a_key_no_node_carries_does_not_match_unless_it_asks_for_absence() -> None:
    found = apply_overlays(
        pools((node_pool(), (M5,))),
        overlays(
            """needs-label
            requirements: [{key: example.com/tier, operator: In, values: [gold]}]
            price: "0.01"
            """,
            """absent-ok
            requirements:
            - {key: example.com/tier, operator: DoesNotExist}
            - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}
            price: "0.02"
            weight: 2
            """,
        ),
    )

    assert set(prices(found.pools[0]).values()) == {0.096, 0.02}


def test_the_heavier_overlay_wins_and_an_adjustment_moves_the_list_price_not_another_overlays() -> None:
    found = apply_overlays(
        pools((node_pool(), (M5,))),
        overlays(
            """everything
            requirements: []
            priceAdjustment: "-10%"
            """,
            """m5-flat
            requirements:
            - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}
            - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
            price: "0.06"
            weight: 100
            """,
        ),
    )

    after = prices(found.pools[0])
    assert after[("m5.large", "on-demand", "a")] == 0.06
    assert after[("m5.large", "spot", "a")] == pytest.approx(0.036)  # only the weight-0 overlay matches spot
    assert found.conflicts == {}


def test_two_overlays_of_the_same_weight_on_one_offering_refuse_the_one_sorted_later() -> None:
    found = apply_overlays(
        pools((node_pool(), (M5, C6I))),
        overlays(
            """alpha
            requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]
            price: "0.5"
            weight: 7
            """,
            """beta
            requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}]
            price: "0.7"
            weight: 7
            """,
        ),
    )

    after = prices(found.pools[0])
    # Karpenter takes equal weights in reverse name order: beta first, then alpha clashes with it on
    # m5.large and is refused everywhere (so c6i.large keeps its list price too).
    assert after[("m5.large", "on-demand", "a")] == 0.7
    assert after[("m5.large", "spot", "a")] == 0.7
    assert after[("c6i.large", "on-demand", "a")] == 0.085
    assert list(found.conflicts) == ["alpha"]
    assert "beta" in found.conflicts["alpha"]


def test_a_lighter_overlay_that_only_adds_capacity_does_not_conflict_with_a_price() -> None:
    found = apply_overlays(
        pools((node_pool(), (M5,))),
        overlays(
            """price
            requirements: []
            price: "0.01"
            weight: 3
            """,
            """fuse
            requirements: []
            capacity: {smarter-devices/fuse: "2"}
            weight: 3
            """,
            """fuse-more
            requirements: []
            capacity: {smarter-devices/fuse: "8", hugepages-2Mi: 1Gi}
            weight: 1
            """,
        ),
    )

    (m5,) = found.pools[0].instance_types
    assert found.conflicts == {}
    assert m5.capacity["smarter-devices/fuse"] == 2000  # the heavier overlay's value
    assert m5.allocatable["hugepages-2Mi"] == 2**30 * 1000  # a resource only the lighter one names
    assert m5.capacity["cpu"] == M5.capacity["cpu"]
    assert found.capacity[("default", "m5.large")] == ("fuse", "fuse-more")


def test_order_is_weight_then_name_descending() -> None:
    found = overlays(
        "a\nrequirements: []\nweight: 2\n",
        "b\nrequirements: []\n",
        "c\nrequirements: []\nweight: 2\n",
    )

    assert [o.name for o in ordered(found)] == ["c", "a", "b"]


def test_solve_picks_the_family_a_discount_makes_cheapest() -> None:
    pool = node_pool(requirements=[{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}])
    inp = pools((pool, (M5, M7I)))
    pods = tuple(pod(f"p{i}", cpu="500m", memory="1Gi") for i in range(6))
    discount = overlays(
        """m7i-savings-plan
        requirements: [{key: karpenter.k8s.aws/instance-family, operator: In, values: [m7i]}]
        priceAdjustment: "-20%"
        """
    )

    listed = solve(SchedulingInput(pods=pods, pools=inp))
    effective = solve(SchedulingInput(pods=pods, pools=apply_overlays(inp, discount).pools))

    assert {c.instance_type.name for c in listed.claims} == {"m5.large"}
    assert {c.instance_type.name for c in effective.claims} == {"m7i.large"}
    assert effective.price_per_hour < listed.price_per_hour
