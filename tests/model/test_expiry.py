"""`model.expiry`: Karpenter's expiry (now >= creation + expireAfter) and lifetime left."""

from __future__ import annotations

import pytest

from nodewright.model.expiry import expired, lifetime_left
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.nodepool import NodePool

HOUR = 3600.0

# (case, expireAfter, created, launched, now, expired, lifetime left)
CASES = [
    ("younger than expireAfter", 10 * HOUR, 1000.0, 0.0, 1000.0 + 5 * HOUR, False, 0.5),
    ("exactly at expireAfter", 10 * HOUR, 1000.0, 0.0, 1000.0 + 10 * HOUR, True, 0.0),
    ("past expireAfter", 10 * HOUR, 1000.0, 0.0, 1000.0 + 11 * HOUR, True, 0.0),
    ("Never", None, 1000.0, 0.0, 1e12, False, 1.0),
    ("no creation time: counted from launch", 10 * HOUR, 0.0, 2000.0, 2000.0 + 10 * HOUR, True, 0.0),
    ("creation time wins over launch", 10 * HOUR, 1000.0, 9e9, 1000.0 + 10 * HOUR, True, 0.0),
    ("age unknown: never expired", 10 * HOUR, 0.0, 0.0, 1e12, False, 0.0),
    ("expireAfter 0s: expired at once", 0.0, 1000.0, 0.0, 1000.0, True, 0.0),
]


@pytest.mark.parametrize(
    ("case", "ttl", "created", "launched", "now", "is_expired", "left"), CASES, ids=[c[0] for c in CASES]
)
def test_expiry(
    case: str, ttl: float | None, created: float, launched: float, now: float, is_expired: bool, left: float
) -> None:
    pool = NodePool("default", expire_after=ttl)
    claim = NodeClaim("c1", "default", created_at=created, launched_at=launched)
    assert expired(pool, claim, now) is is_expired
    assert lifetime_left(pool, claim, now) == pytest.approx(left)
