"""Node expiry: when a node claim has outlived its NodePool's `expireAfter`. Pure.

Karpenter's rule (the NodeClaim expiration controller): a claim is expired once
`creationTimestamp + expireAfter` is reached (`now >= born + expireAfter`); `expireAfter: Never`
(None here) never expires it. A claim's birth is its creation time, else (records written before
creation times were kept) its launch time; a claim whose birth is unknown (both 0) is never
expired: a forceful, unbudgeted replacement acts only on a known age.

`lifetime_left` is Karpenter's `LifetimeRemaining` (the share of the lifetime still ahead, in
[0, 1]; 1 without `expireAfter`), which weighs a candidate's disruption cost.
"""

from __future__ import annotations

from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.nodepool import NodePool


def born(claim: NodeClaim) -> float:
    """When `claim` came to be: its creation time, else its launch time (0: unknown)."""
    return claim.created_at or claim.launched_at


def expired(pool: NodePool, claim: NodeClaim, now: float) -> bool:
    """Whether `claim` has reached its NodePool's `expireAfter` at `now` (see the module docstring)."""
    ttl = pool.expire_after
    start = born(claim)
    return ttl is not None and bool(start) and now - start >= ttl


def lifetime_left(pool: NodePool, claim: NodeClaim, now: float) -> float:
    """The share of `claim`'s lifetime still ahead at `now`, in [0, 1] (1 without `expireAfter`;
    0 with `expireAfter: 0s`, which expires a node at once).
    """
    ttl = pool.expire_after
    if ttl is None:
        return 1.0
    if ttl <= 0:
        return 0.0
    return min(1.0, max(0.0, 1.0 - (now - born(claim)) / ttl))
