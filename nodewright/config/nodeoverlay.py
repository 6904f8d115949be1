"""NodeOverlay documents (`karpenter.sh/v1alpha1`): validate into the model and back. Pure.

`parse_nodeoverlay` checks the spec as Karpenter's CRD does: requirements (at most 100; keys
qualified, `kubernetes.io/hostname` and the karpenter.sh and karpenter.k8s.aws domains restricted
but for their well-known keys; In and NotIn need values; Gt/Lt/Gte/Lte one non-negative integer),
`price` a non-negative decimal, `priceAdjustment` a signed amount or percentage (not below -100%),
never both, `capacity` extended resources only (not cpu, memory, ephemeral-storage or pods), and
`weight` 1-10000. Every problem names its field.

Valid overlays are kept with the rest of the configuration; `nodewright.engine.overlay` applies
them to the instance types the provisioner, consolidation and `plan` decide with.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodewright.config import fields as f
from nodewright.config.nodepool import MAX_REQUIREMENTS, label_key_rule, requirement_reader, resource_list
from nodewright.config.problems import At, show
from nodewright.model import labels as wk
from nodewright.model.errors import InvalidValue
from nodewright.model.nodeoverlay import PRICE, NodeOverlay, PriceAdjustment
from nodewright.model.requirements import Requirements

SPEC_FIELDS = ("requirements", "price", "priceAdjustment", "capacity", "weight")
RESTRICTED_CAPACITY = ("cpu", "memory", "ephemeral-storage", "pods")
MAX_WEIGHT = 10_000
# karpenter.k8s.aws keys an overlay may select on: instance facts, not what a launch decides
# (tenancy, capacity reservation, placement group), which Karpenter's NodeOverlay CRD leaves out.
_LAUNCH_DECIDED = (
    "karpenter.k8s.aws/instance-tenancy",
    "karpenter.k8s.aws/capacity-reservation-type",
    "karpenter.k8s.aws/capacity-reservation-id",
    "karpenter.k8s.aws/capacity-reservation-interruptible",
    "karpenter.k8s.aws/placement-group-id",
    "karpenter.k8s.aws/placement-group-partition",
)


def overlay_key_rule(at: At, key: str) -> None:
    """A requirement key an overlay may use: a NodePool's, plus karpenter.sh/nodepool and
    karpenter.k8s.aws/ec2nodeclass (an overlay may target one NodePool or NodeClass), minus the
    keys a launch decides.
    """
    if key in (wk.NODEPOOL, "karpenter.k8s.aws/ec2nodeclass"):
        return
    if key in _LAUNCH_DECIDED:
        at.error(f"label {show(key)} is restricted in a NodeOverlay: a launch decides it, not the instance type")
        return
    label_key_rule(at, key)


def _capacity(at: At, value: Any) -> Any:
    if isinstance(value, Mapping):
        for key in value:
            if key in RESTRICTED_CAPACITY:
                (at / str(key)).error(
                    f"{show(key)} cannot be overlaid: capacity adds extended resources only "
                    f"(not {', '.join(RESTRICTED_CAPACITY)})"
                )
    return resource_list(at, value)


def parse_nodeoverlay(
    at: At, name: str, metadata: Mapping[str, Any], spec_value: Any, api_version: str
) -> NodeOverlay | None:
    """Validate a NodeOverlay's spec; None when anything is wrong.

    `at` points at the document root; every problem is reported through it.
    """
    at_spec = at / "spec"
    spec = f.kube_obj(at_spec, spec_value, SPEC_FIELDS)
    if spec is None:
        if spec_value is None:
            at_spec.error("is required")
        return None
    requirements = f.items(
        at_spec / "requirements",
        f.required(at_spec, spec, "requirements"),
        requirement_reader(overlay_key_rule, min_values=False, not_in_needs_values=True),
        max_items=MAX_REQUIREMENTS,
    )
    price = f.string(
        at_spec / "price", spec.get("price"), pattern=PRICE, rule="is not a non-negative decimal price (e.g. 0.25)"
    )
    adjustment: PriceAdjustment | None = None
    adjustment_text = f.string(at_spec / "priceAdjustment", spec.get("priceAdjustment"))
    if adjustment_text is not None:
        try:
            adjustment = PriceAdjustment.parse(adjustment_text)
        except InvalidValue as error:
            (at_spec / "priceAdjustment").error(str(error))
    if spec.get("price") is not None and spec.get("priceAdjustment") is not None:
        at_spec.error("must not set both price and priceAdjustment")
    overlay = NodeOverlay(
        name=name,
        requirements=Requirements(requirements or ()),
        price=price,
        price_adjustment=adjustment,
        capacity=_capacity(at_spec / "capacity", spec.get("capacity")),
        weight=f.integer(at_spec / "weight", spec.get("weight"), minimum=1, maximum=MAX_WEIGHT) or 0,
        api_version=api_version,
        resource_version=str(metadata.get("resourceVersion") or ""),
    )
    if at.failed_since():
        return None
    return overlay


def render_nodeoverlay(overlay: NodeOverlay) -> dict[str, Any]:
    """The manifest of a NodeOverlay model; parsing it gives an equal model (Gte/Lte print as Gt/Lt)."""
    spec: dict[str, Any] = {"requirements": overlay.requirements.to_manifest()}
    if overlay.price is not None:
        spec["price"] = overlay.price
    if overlay.price_adjustment is not None:
        spec["priceAdjustment"] = str(overlay.price_adjustment)
    if overlay.capacity is not None:
        spec["capacity"] = overlay.capacity.format()
    if overlay.weight:
        spec["weight"] = overlay.weight
    return {"apiVersion": overlay.api_version, "kind": "NodeOverlay", "metadata": {"name": overlay.name}, "spec": spec}
