"""NodeOverlay documents (karpenter.sh/v1alpha1) through `parse_yaml`: the model, no warning, the round trip.

The CRD's rules, one by one, are in test_karpenter_rules.py (fixtures/karpenter-v1/rules.yaml);
here: what a valid overlay becomes, how prices move, and that it sits beside NodePools and
EC2NodeClasses in one configuration.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from nodewright.config import parse_manifest, parse_yaml
from nodewright.config.documents import NODEOVERLAY
from nodewright.config.nodeoverlay import render_nodeoverlay
from nodewright.model.errors import InvalidValue
from nodewright.model.nodeoverlay import NodeOverlay, PriceAdjustment
from nodewright.model.resources import Resources

OVERLAYS = (Path(__file__).parent / "fixtures" / "karpenter-v1" / "overlays.yaml").read_text()


def overlays() -> dict[str, NodeOverlay]:
    loaded = parse_yaml(OVERLAYS, "overlays.yaml")
    out = {d.name: d.model for d in loaded.require() if isinstance(d.model, NodeOverlay)}
    assert len(out) == 3
    return out


def test_an_overlay_is_read_into_requirements_price_capacity_and_weight() -> None:
    found = overlays()

    plan = found["savings-plan"]
    assert plan.weight == 10
    assert sorted(plan.requirements) == ["karpenter.k8s.aws/instance-family", "karpenter.sh/capacity-type"]
    assert plan.requirements["karpenter.k8s.aws/instance-family"].has("m7g")
    assert plan.price_adjustment == PriceAdjustment(-28.0, True, "-28%")
    devices = found["fuse-devices"]
    assert (devices.weight, len(devices.requirements), devices.sets_price) == (0, 0, False)
    assert devices.capacity == Resources({"smarter-devices/fuse": 2000, "hugepages-2Mi": 100 * 2**20 * 1000})
    assert found["preview-type"].price == "0.1234"


def test_a_valid_overlay_is_taken_without_a_warning_since_it_is_acted_on() -> None:
    loaded = parse_yaml(OVERLAYS, "overlays.yaml")

    assert not loaded.warnings
    assert not loaded.strict().problems  # --strict takes them: nothing in them is ignored


@pytest.mark.parametrize(
    ("adjustment", "price", "expected"),
    [
        pytest.param("-28%", 1.0, 0.72, id="percent-down"),
        pytest.param("+10%", 2.0, 2.2, id="percent-up"),
        pytest.param("-100%", 3.0, 0.0, id="free"),
        pytest.param("+0.05", 0.10, 0.15, id="amount-up"),
        pytest.param("-0.5", 0.2, 0.0, id="amount-down-floors-at-zero"),
        pytest.param("-.25", 1.0, 0.75, id="amount-without-leading-zero"),
    ],
)
def test_a_price_adjustment_moves_the_price_by_an_amount_or_a_percentage(
    adjustment: str, price: float, expected: float
) -> None:
    overlay = NodeOverlay("o", price_adjustment=PriceAdjustment.parse(adjustment))

    assert overlay.priced(price) == pytest.approx(expected)


@pytest.mark.parametrize("text", ["10%", "-150%", "-100.5%", "+-1", "1.5", ""])
def test_an_adjustment_karpenter_refuses_is_refused(text: str) -> None:
    with pytest.raises(InvalidValue):
        PriceAdjustment.parse(text)


def test_an_absolute_price_replaces_the_offering_price() -> None:
    assert overlays()["preview-type"].priced(9.99) == pytest.approx(0.1234)


def test_an_overlay_prints_back_to_an_equal_model() -> None:
    for overlay in overlays().values():
        (document,) = parse_manifest(render_nodeoverlay(overlay), source="printed.yaml").require()
        assert document.model == overlay


def test_overlays_sit_beside_nodepools_and_nodeclasses_in_one_configuration() -> None:
    nodepool = textwrap.dedent(
        """\
        ---
        apiVersion: karpenter.sh/v1
        kind: NodePool
        metadata: {name: general}
        spec:
          template:
            spec:
              nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
              requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [spot]}]
        """
    )
    loaded = parse_yaml(OVERLAYS + nodepool, "all.yaml")

    assert [p.detail for p in loaded.problems] == []
    assert [d.key for d in loaded.of_kind(NODEOVERLAY)] == [
        "NodeOverlay/savings-plan",
        "NodeOverlay/fuse-devices",
        "NodeOverlay/preview-type",
    ]
    assert [d.kind for d in loaded.documents].count("NodePool") == 1


def test_an_overlay_may_target_one_nodepool_but_not_a_launch_decided_label() -> None:
    body = {
        "apiVersion": "karpenter.sh/v1alpha1",
        "kind": "NodeOverlay",
        "metadata": {"name": "o"},
        "spec": {
            "requirements": [
                {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["general"]},
                {"key": "karpenter.k8s.aws/capacity-reservation-id", "operator": "Exists"},
            ],
            "price": "1",
        },
    }

    loaded = parse_manifest(body, source="o.yaml")

    assert [p.path for p in loaded.problems] == ["spec.requirements[1].key"]
