"""A run's bill as the user pays it under the autoscaler that ran it: compute, fee, the autoscaler.

Role: the `bill` block of summary.json, which the consolidation suite compares across modes:

* `compute_usd`: the instances' hours times their price (the summary's `cost_usd`);
* `fee_usd`: EKS Auto Mode's management fee (`automode` mode only): every instance's hours times
  its type's fee (`nodewright.reference.automode.fee_per_hour`, a share of the type's on-demand
  price in its zone, charged for spot instances too);
* `autoscaler_usd`: what the autoscaler itself costs for the run's length. Nodewright (and its
  ablations): its own AWS resources, `self_cost`'s monthly figure prorated (730 h a month).
  Karpenter: the nodes hosting its controller, as Karpenter's Getting Started guide deploys it:
  two replicas (1 CPU and 1 GiB requested each) on an EKS managed node group of two m5.large
  on-demand instances (eksctl's default node group), priced from the scenario's catalog. Auto
  Mode: none (AWS hosts the controller; its fee is `fee_usd`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from nodewright.reference import automode
from nodewright.simulator.report.metrics import STANDBY_VOLUME_USD_PER_HOUR, InstanceRecord

HOURS_PER_MONTH = 730.0
KARPENTER_HOST_TYPE = "m5.large"
KARPENTER_HOST_NODES = 2


def bill(
    mode: str,
    instances: Iterable[InstanceRecord],
    end: float,
    hours: float,
    *,
    on_demand_price: Callable[[str, str], float],
    self_cost: Mapping[str, Any],
) -> dict[str, Any]:
    """The `bill` block (see the module docstring). `on_demand_price(type, zone)` is $/h."""
    records = list(instances)
    compute = sum(r.hours(end) * r.price for r in records)
    compute += sum(r.stopped_hours(end) for r in records) * STANDBY_VOLUME_USD_PER_HOUR  # standby volumes
    fee = 0.0
    if mode == "automode":
        fee = sum(
            r.hours(end) * automode.fee_per_hour(r.instance_type, on_demand_price(r.instance_type, r.zone))
            for r in records
        )
    if mode == "karpenter":
        zone = min((r.zone for r in records), default="")
        host = KARPENTER_HOST_NODES * on_demand_price(KARPENTER_HOST_TYPE, zone)
        autoscaler, basis = host * hours, f"{KARPENTER_HOST_NODES} x {KARPENTER_HOST_TYPE} on-demand (${host:.4f}/h)"
    elif mode == "automode":
        autoscaler, basis = 0.0, "hosted by AWS (see fee_usd)"
    else:
        month = float(self_cost.get("usd_per_month", 0.0))
        autoscaler, basis = month * hours / HOURS_PER_MONTH, f"self_cost ${month:.2f}/month prorated"
    return {
        "compute_usd": round(compute, 4),
        "fee_usd": round(fee, 4),
        "autoscaler_usd": round(autoscaler, 4),
        "autoscaler_basis": basis,
        "total_usd": round(compute + fee + autoscaler, 4),
    }
