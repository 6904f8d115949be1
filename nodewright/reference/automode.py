"""EKS Auto Mode as a reference: Karpenter run by AWS, plus its fee, lifetime and defaults. Pure.

Auto Mode runs Karpenter off the cluster (no controller pods to host) and charges a management fee
per node on top of EC2. Sources: the EKS pricing page (aws.amazon.com/eks/pricing, "EKS Auto Mode")
and the EKS user guide's Auto Mode pages (create-node-pool, create-node-class, auto-change), as of
late 2026:

* fee: per instance-second, a per-type rate AWS publishes that is about 12% of the type's
  on-demand list price, charged for spot nodes too (and for capacity RIs or Savings Plans cover);
  from 2026-07-01 cut by 35% for G-family and by 60% for P-family and Trainium instances.
  `FEE_FRACTION` is that approximation per family; `fee_per_hour` prices one node;
* nodes live at most 21 days (`expireAfter` longer, or Never, is refused): `nodepools` caps it;
* spot launches use price-capacity-optimized only (what the Karpenter reference's launch sends);
  spot-to-spot consolidation is on (Karpenter's feature gate is off by default);
* from EKS 1.37 new NodePools default to `consolidationPolicy: Balanced`: `nodepools` gives
  Balanced to the NodePools that consolidate underutilized nodes (WhenEmptyOrUnderutilized).
  Simplification: the reference cannot tell a policy written out from the default, so it models
  a cluster whose NodePools took the default.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from types import MappingProxyType

from nodewright.model.nodepool import NodePool
from nodewright.reference.karpenter.disruption import Disruption

LIFETIME_SECONDS = 21 * 24 * 3600.0
BASE_FEE_FRACTION = 0.12
# Family prefix -> the fee as a fraction of the on-demand price (longest matching prefix wins).
FEE_FRACTION = MappingProxyType(
    {
        "": BASE_FEE_FRACTION,
        "g": BASE_FEE_FRACTION * (1 - 0.35),
        "p": BASE_FEE_FRACTION * (1 - 0.60),
        "trn": BASE_FEE_FRACTION * (1 - 0.60),
    }
)
UNDERUTILIZED = "WhenEmptyOrUnderutilized"
BALANCED = "Balanced"
DISRUPTION = Disruption(spot_to_spot=True)


def family(instance_type: str) -> str:
    """`m5.large` -> `m5`; a name without a dot is its own family."""
    return instance_type.split(".", 1)[0]


def fee_fraction(instance_type: str) -> float:
    """The fee as a fraction of the type's on-demand price (see FEE_FRACTION)."""
    fam = family(instance_type)
    prefix = max((p for p in FEE_FRACTION if fam.startswith(p) and _family_letters(fam, p)), key=len)
    return FEE_FRACTION[prefix]


def _family_letters(fam: str, prefix: str) -> bool:
    """`prefix` is the family's series (g4dn: g; gr6 is not G; trn1: trn), or the default."""
    if not prefix:
        return True
    rest = fam[len(prefix) :]
    return bool(rest) and rest[0].isdigit()


def fee_per_hour(instance_type: str, on_demand_price: float) -> float:
    """Auto Mode's fee for one node of `instance_type`, $/h."""
    return fee_fraction(instance_type) * on_demand_price


def nodepools(pools: Iterable[NodePool]) -> tuple[NodePool, ...]:
    """The NodePools as Auto Mode runs them: lifetime capped at 21 days, Balanced by default."""
    out = []
    for pool in pools:
        ttl = pool.expire_after
        capped = LIFETIME_SECONDS if ttl is None else min(ttl, LIFETIME_SECONDS)
        disruption = pool.disruption
        if disruption.consolidation_policy == UNDERUTILIZED:
            disruption = replace(disruption, consolidation_policy=BALANCED)
        out.append(replace(pool, expire_after=capped, disruption=disruption))
    return tuple(out)
