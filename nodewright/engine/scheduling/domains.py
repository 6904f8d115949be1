"""The domains a topology spread counts, as Karpenter counts them. Pure.

A spread's skew is measured against the least-populated domain among all domains the constraint
counts, not only those the pass can put pods in. As Karpenter's topology does, those are:

* every domain a NodePool could launch a node in (the values its types' offerings and its own
  requirements and template labels allow for the key), whether or not its limits have room left;
  with `nodeAffinityPolicy: Honor` (the default) only NodePools and values the pod's *required*
  node affinity allows (a preference never shrinks the set), and with `nodeTaintsPolicy: Honor`
  only NodePools whose taints the pod tolerates (the default, Ignore, counts tainted ones too);
* the domain of every existing node carrying the key that the same two policies admit, whether
  or not it has room.

`fill.place` gives these to `Topology.split`, which puts pods only in the domains the class can
reach and measures the skew over both. So an existing pod in a zone no NodePool launches in, a
NodePool limited to zero, or a zone the pod's preference avoids all hold the spread back as they
do in Karpenter and in kube-scheduler.
"""

from __future__ import annotations

from nodewright.engine.scheduling.classes import PodClass
from nodewright.engine.scheduling.fit import capacity_types, fits, pool_conflicts, pool_tolerates
from nodewright.engine.scheduling.nodeclaim import claim_target
from nodewright.engine.scheduling.prepare import Pool, tolerated
from nodewright.engine.scheduling.state import Pass
from nodewright.model import labels as wk
from nodewright.model.pod import Pod, SpreadConstraint
from nodewright.model.requirements import Requirement, Requirements, label_matches


def pool_values(pool: Pool, key: str, narrowed: Requirement | None) -> set[str]:
    """The values of `key` NodePool `pool` can launch a node with, within `narrowed` (what one of
    a pod's node-affinity alternatives requires of the key; None: anything). A key the NodePool's
    requirements or template labels decide (a rack, a tier: not well-known) has the pool's own
    values, whatever the type; any other key, the values its types' offerings carry.
    """
    own = pool.requirements.get(key)
    if own is not None and not own.complement and key not in wk.WELL_KNOWN:
        return {v for v in own.values if narrowed is None or narrowed.has(v)}
    found: set[str] = set()
    for t in pool.types:
        req = t.offer_reqs.get(key)
        if req is None or req.complement:
            continue
        found |= {v for v in req.values if (narrowed is None or narrowed.has(v)) and (own is None or own.has(v))}
    return found


def counted_domains(p: Pass, cls: PodClass, constraint: SpreadConstraint) -> frozenset[str]:
    """The domains of `constraint.topology_key` the spread counts for pods of `cls` (see above)."""
    sample = cls.sample
    honor_affinity = constraint.node_affinity_policy != "Ignore"
    honor_taints = constraint.node_taints_policy == "Honor"
    required = sample.node_requirements()
    cache_key = (
        constraint.topology_key,
        required if honor_affinity else None,
        p.tolerations_id(sample.tolerations) if honor_taints else None,
    )
    hit = p.counted_cache.get(cache_key)
    if hit is not None:
        return hit
    key = constraint.topology_key
    found: set[str] = set()
    for pool in (*p.pools, *p.static_pools):
        if honor_taints and not tolerated(sample.tolerations, pool.taints, prefer=False):
            continue
        alts = [a for a in required if pool.requirements.compatible(a)] if honor_affinity else [None]
        for alt in alts:
            found |= pool_values(pool, key, alt.get(key) if alt is not None else None)
    for node in p.inp.nodes:
        value = node.labels.get(key)
        if value is None:
            continue
        if honor_affinity and not any(label_matches(a, node.labels) for a in required):
            continue
        if honor_taints and not tolerated(sample.tolerations, node.taints, prefer=False):
            continue
        found.add(value)
    out = p.counted_cache[cache_key] = frozenset(found)
    return out


def restrict(p: Pass, cls: PodClass, key: str, allowed: tuple[str, ...], pods: tuple[Pod, ...]) -> PodClass:
    """`cls` holding `pods`, each alternative restricted to `key` In `allowed` (a domain part).
    The restricted alternatives are remembered by the identity of the class's (the entry holds
    them): every part of a class in a domain then has the very same requirement objects, whose
    hashes are computed once, and the fit checks' memos find them by identity.
    """
    memo_key = (id(cls.alternatives), key, allowed)
    hit = p.restrictions.get(memo_key)
    if hit is None or hit[0] is not cls.alternatives:
        pin = Requirements([Requirement.new(key, "In", allowed)])
        hit = p.restrictions[memo_key] = (cls.alternatives, tuple(a.intersection(pin) for a in cls.alternatives))
    return cls.narrowed(pods, hit[1])


def live_domains(p: Pass, cls: PodClass, key: str, domains: list[str]) -> list[str]:
    """The `domains` of `key` the class's pods could really go to now: a NodePool can open a node
    there (a type fits, within its limits) or an existing node or claim there has room. A domain
    that is reachable on paper only (a NodePool at its limits, a full node in a zone no NodePool
    launches in) still counts for the skew but takes no pod, so the water-fill never hands it
    pods that would come back while the other domains keep theirs.
    """
    req = p.vec(cls.requests)
    out = []
    for domain in domains:
        part = restrict(p, cls, key, (domain,), cls.pods)
        if _pool_opens(p, part, req) or any(
            b.domain(key) in (domain, None) and fits(p, part, req, b, 1) for b in (*p.existing, *p.open)
        ):
            out.append(domain)
    return out


def _pool_opens(p: Pass, cls: PodClass, req: tuple[int, ...]) -> bool:
    """True when some NodePool could open a claim for a pod of `cls` (as `open_claim` would)."""
    for pool in p.pools:
        if not pool_tolerates(p, cls, pool):
            continue
        cts = capacity_types(p, cls, pool)
        for alt in cls.alternatives:
            if not pool_conflicts(p, pool, alt) and claim_target(p, pool, alt, req, cts)[0] is not None:
                return True
    return False
