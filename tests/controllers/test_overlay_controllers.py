"""NodeOverlays reach the provisioner's launches and the consolidator's choices.

The worlds of tests/controllers/test_provisioning.py and test_disruption.py (in-memory cluster,
fake cloud, in-memory store, virtual clock) with the configuration carrying NodeOverlays, read from
Karpenter manifests as every config source reads them. Observed: which instance types are
launched and at what recorded price, whether a node is replaced, and the decision logged for an
overlay refused for a same-weight conflict.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

from nodewright.config import parse_yaml
from nodewright.controllers.assembly import build_provisioner
from nodewright.controllers.disruption import Consolidator
from nodewright.controllers.provisioning import Provisioner
from nodewright.controllers.provisionoptions import ProvisionerOptions, StaticConfiguration
from nodewright.model import labels as wk
from nodewright.model.nodeoverlay import NodeOverlay
from nodewright.model.nodepool import NodePool
from tests.controllers.test_disruption import ConsolidationWorld
from tests.controllers.test_provisioning import FixedCatalog
from tests.controllers.test_provisioning import World as ProvisioningWorld


def overlays(text: str) -> tuple[NodeOverlay, ...]:
    loaded = parse_yaml(textwrap.dedent(text), "overlays.yaml")
    assert not loaded.problems
    return tuple(d.model for d in loaded.require() if isinstance(d.model, NodeOverlay))


# m5.4xlarge lists at $0.768/h on-demand: four m5.xlarge ($0.192) cost the same; at -50% it is cheaper.
BIG_DISCOUNT = """\
    apiVersion: karpenter.sh/v1alpha1
    kind: NodeOverlay
    metadata: {name: ri-m5-4xlarge}
    spec:
      requirements:
      - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.4xlarge]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      priceAdjustment: "-50%"
    """
ON_DEMAND = """\
    apiVersion: karpenter.sh/v1
    kind: NodePool
    metadata: {name: default}
    spec:
      template:
        spec:
          nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
          requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]
    """


@dataclass
class OverlaidProvisioning(ProvisioningWorld):
    nodeoverlays: tuple[NodeOverlay, ...] = ()

    def provisioner(self, **options: float) -> Provisioner:
        del options  # the base class's signature; the defaults serve here
        return build_provisioner(
            cluster=self.cluster,
            cloud=self.cloud,
            store=self.store,
            clock=self.clock,
            config=StaticConfiguration(self.pools, nodeoverlays=self.nodeoverlays),
            catalog=FixedCatalog(),
            observer=self.observer,
            options=ProvisionerOptions(),
            sleep=self._sleep,
        )

    def _sleep(self, seconds: float) -> None:
        self.clock.advance(seconds)


def on_demand_pool() -> tuple[NodePool, ...]:
    loaded = parse_yaml(textwrap.dedent(ON_DEMAND), "pool.yaml")
    return tuple(d.model for d in loaded.require() if isinstance(d.model, NodePool))


def launched(world: OverlaidProvisioning) -> list[tuple[str, float]]:
    return sorted((c.instance_type, round(c.price, 4)) for c in world.store.claims() if c.instance_type)


def test_the_provisioner_launches_what_the_overlay_makes_cheapest_and_records_its_effective_price() -> None:
    listed = OverlaidProvisioning(pools=on_demand_pool())
    discounted = OverlaidProvisioning(pools=on_demand_pool(), nodeoverlays=overlays(BIG_DISCOUNT))
    for world in (listed, discounted):
        world.pending(24)  # 12 cpu of 500m pods
        world.run()

    assert {name for name, _ in launched(listed)} != {"m5.4xlarge"}
    assert launched(discounted) == [("m5.4xlarge", 0.384)]
    assert not discounted.observer.of("nodeoverlay-refused")


def test_an_overlay_refused_for_a_tie_is_logged_and_the_pass_goes_on() -> None:
    tie = overlays(
        BIG_DISCOUNT + "---\n" + BIG_DISCOUNT.replace("ri-m5-4xlarge", "zz-another-ri").replace('"-50%"', '"-10%"')
    )
    world = OverlaidProvisioning(pools=on_demand_pool(), nodeoverlays=tie)
    world.pending(24)
    world.run()

    (refused,) = world.observer.of("nodeoverlay-refused")
    assert refused["overlay"] == "ri-m5-4xlarge"  # equal weights: the name later in the alphabet wins
    assert launched(world)  # the provisioner still launched, at zz-another-ri's price where it applies


@dataclass
class OverlaidConsolidation(ConsolidationWorld):
    nodeoverlays: tuple[NodeOverlay, ...] = ()

    def consolidator(self, **options: float) -> Consolidator:
        consolidator = super().consolidator(**options)
        # The same controllers, reading a configuration that carries the overlays.
        config = StaticConfiguration(self.pools, nodeoverlays=self.nodeoverlays)
        consolidator.config = config
        consolidator.launcher.config = config
        return consolidator


def test_consolidation_replaces_by_effective_price() -> None:
    # An m5.4xlarge on-demand node holding 2 cpu of pods: at list prices an m5.xlarge is cheaper, so
    # it is replaced; when an overlay prices every smaller type above it, nothing is cheaper.
    dear_small = overlays(
        """\
        apiVersion: karpenter.sh/v1alpha1
        kind: NodeOverlay
        metadata: {name: small-types-dear}
        spec:
          requirements:
          - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large, m5.xlarge]}
          price: "5"
        """
    )
    pools = on_demand_pool()
    plain, overlaid = OverlaidConsolidation(pools=pools), OverlaidConsolidation(pools=pools, nodeoverlays=dear_small)
    for world in (plain, overlaid):
        world.node_with("big", 2, capacity_type="on-demand")
        world.run(180)

    assert plain.cluster.get_node("big") is None
    assert overlaid.cluster.get_node("big") is not None
    assert [n.labels.get(wk.INSTANCE_TYPE) for n in overlaid.cluster.nodes()] == ["m5.4xlarge"]
    assert overlaid.cluster.lost_pods() == []


def test_a_discount_on_every_type_does_not_replace_a_node_with_one_of_its_own_type() -> None:
    # A full m5.4xlarge recorded at its list price ($0.768/h) before a 5% discount on every
    # on-demand offering came in: the node now costs $0.7296/h like its only replacement, which is
    # no saving (Karpenter prices a candidate from the overlaid offerings, not from what it paid).
    discount = overlays(
        """\
        apiVersion: karpenter.sh/v1alpha1
        kind: NodeOverlay
        metadata: {name: enterprise-discount}
        spec:
          requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]
          priceAdjustment: "-5%"
        """
    )
    world = OverlaidConsolidation(pools=on_demand_pool(), nodeoverlays=discount)
    world.node_with("full", 28, capacity_type="on-demand")  # 14 cpu: only an m5.4xlarge holds it
    world.run(180)

    assert world.cluster.get_node("full") is not None
    assert not world.observer.of("disruption-done")


def test_a_reserved_instance_price_for_the_running_type_does_not_churn_its_nodes() -> None:
    # The node was launched at the list price ($0.768/h); an RI overlay then prices its own type at
    # $0.05/h, below any other type (m5.large lists at $0.096/h). Priced as recorded, the node
    # would look replaceable by an identical one; priced as the overlaid catalog prices it now
    # (Karpenter's rule) it is not.
    reserved = overlays(
        """\
        apiVersion: karpenter.sh/v1alpha1
        kind: NodeOverlay
        metadata: {name: ri-m5-4xlarge}
        spec:
          requirements:
          - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.4xlarge]}
          price: "0.05"
        """
    )
    world = OverlaidConsolidation(pools=on_demand_pool(), nodeoverlays=reserved)
    world.node_with("big", 2, capacity_type="on-demand")
    world.run(180)

    assert world.cluster.get_node("big") is not None
    assert not world.observer.of("disruption-done")
