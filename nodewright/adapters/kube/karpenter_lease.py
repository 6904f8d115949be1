"""Whether a Karpenter controller runs in the cluster: its leader-election Lease, recently renewed.

Role: decides who acts on Karpenter's own kinds during a migration. Karpenter's controller holds
the `coordination.k8s.io/v1` Lease `karpenter-leader-election` (in its namespace, usually `karpenter`
or `kube-system`) and renews it every few seconds while it runs. While such a Lease was renewed
within `KARPENTER_GONE_AFTER`, the `karpenter.sh` NodePools that name Karpenter's EC2NodeClass are
Karpenter's and `crd_config.read_config` leaves them (and Karpenter's EC2NodeClasses) alone; once
it has not been renewed for that long (Karpenter scaled to zero or uninstalled), they are read as
Nodewright's. The margin is long on purpose: a Karpenter pod restarting or failing over never
hands its NodePools over for a moment.

One LIST of leases across namespaces, selected by name; an API server that does not serve Leases
(HTTP 404) means no Karpenter. Any other API error is raised, as for the configuration itself.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from kubernetes.client import ApiClient, CoordinationV1Api
from kubernetes.client.exceptions import ApiException

KARPENTER_LEASE = "karpenter-leader-election"
KARPENTER_GONE_AFTER = timedelta(minutes=10)


@dataclass(frozen=True, slots=True)
class KarpenterLease:
    """A live Karpenter leader Lease: where it is, who holds it and when it was last renewed."""

    namespace: str
    holder: str
    renewed: datetime

    def __str__(self) -> str:
        renewed = f"{self.renewed:%Y-%m-%dT%H:%M:%SZ}"
        return f"Lease {self.namespace}/{KARPENTER_LEASE} (held by {self.holder or 'nobody'}, renewed {renewed})"


def running_karpenter(api_client: ApiClient, now: datetime | None = None) -> KarpenterLease | None:
    """The Karpenter leader Lease renewed within `KARPENTER_GONE_AFTER` of `now` (wall clock when
    None), or None when Karpenter is not running in the cluster (module docstring).
    """
    try:
        response = CoordinationV1Api(api_client).list_lease_for_all_namespaces(
            field_selector=f"metadata.name={KARPENTER_LEASE}", _preload_content=False
        )
    except ApiException as error:
        if error.status == 404:
            return None
        raise
    listing: dict[str, Any] = json.loads(response.data)
    moment = now if now is not None else datetime.now(UTC)
    live = [lease for lease in map(_lease, listing.get("items") or ()) if lease is not None]
    live = [lease for lease in live if moment - lease.renewed <= KARPENTER_GONE_AFTER]
    return max(live, key=lambda lease: lease.renewed) if live else None


def _lease(raw: dict[str, Any]) -> KarpenterLease | None:
    """A listed Lease as a `KarpenterLease`; None when it was never renewed (no renewTime)."""
    spec = raw.get("spec") or {}
    stamp = spec.get("renewTime") or spec.get("acquireTime")
    if not isinstance(stamp, str):
        return None
    try:
        renewed = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    if renewed.tzinfo is None:
        renewed = renewed.replace(tzinfo=UTC)
    namespace = str((raw.get("metadata") or {}).get("namespace") or "")
    return KarpenterLease(namespace, str(spec.get("holderIdentity") or ""), renewed)
