"""Filling with topology: each class split by its topology domains, then placed. Pure.

Zone- and capacity-type-keyed spread and (anti-)affinity decide how many of a class's pods go to
which domain (`topology.py`); each part is placed with the domain added to its node requirements
(`place`). A part goes to existing nodes and in-flight claims first, then to the claims this pass
opened (first fit, scanning at most SCAN_LIMIT), then to new claims (`nodeclaim.py`). Pods that
still do not fit are retried with one preference fewer (`schedule`: the relaxation, whose order
`classes.PodClass.relaxed` keeps) and are reported with a reason once nothing is left to relax.
`zone_parts`, `unconstrained` and `zone_spread_only` tell the shape-mixing pass (`mix.py`) which
classes it may pack freely.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Iterable

from nodewright.engine.scheduling.classes import PodClass
from nodewright.engine.scheduling.domains import counted_domains, live_domains, pool_values, restrict
from nodewright.engine.scheduling.fit import assign_pods, bin_compatible, fits, hostname_bound, pool_tolerates
from nodewright.engine.scheduling.nodeclaim import drop_claim, open_claim, widen_claim
from nodewright.engine.scheduling.state import Bin, Pass
from nodewright.engine.scheduling.topology import spread_group
from nodewright.model import labels as wk
from nodewright.model.pod import AffinityTerm, Pod, SpreadConstraint
from nodewright.model.requirements import Requirement, Requirements
from nodewright.model.resources import CPU, MEMORY

# How many of this pass's open claims a class scans before it opens a new one. Bounds the work per
# class on huge plans; the claims scanned first are the oldest (first fit decreasing).
SCAN_LIMIT = 256
# Up to this many open claims the limits pass places pods one by one (`_round_robin`); it only
# runs when limits bind, so claims are few.
ROUND_ROBIN_LIMIT = 64


def zone_spread_only(p: Pass, cls: PodClass) -> bool:
    """True for a class whose only constraints are required spreads keyed on something other
    than hostname, counted only among its own pods: split by domain, its pods are as
    interchangeable within a domain as unconstrained ones.
    """
    sample = cls.sample
    if cls.affinity or cls.anti_affinity or cls.preferred_node or not cls.spread or hostname_bound(p, cls):
        return False
    if any(not c.required or c.topology_key == wk.HOSTNAME for c in sample.spread):
        return False
    own = {spread_group(c, sample.namespace) for c in cls.spread}
    others = (c.sample for c in p.classes if c.sample is not sample)
    return not any(g.selects(o.namespace, o.labels) for o in others for g in own)


def zone_parts(p: Pass, cls: PodClass) -> list[PodClass]:
    """The class split by its domain constraints; pods no domain can take are unschedulable."""
    parts: list[PodClass] = []

    def collect(part: PodClass) -> tuple[list[Pod], str]:
        parts.append(part)
        return [], ""

    leftover, reason = place(p, cls, frozenset(), collect)
    for pod in leftover:
        p.unschedulable[pod.key] = reason
    return parts


def unconstrained(p: Pass, cls: PodClass) -> bool:
    """True when nothing but resources, node requirements and taints constrain the class."""
    sample = cls.sample
    if cls.spread or cls.affinity or cls.anti_affinity or cls.preferred_node or sample.spread or sample.host_ports:
        return False
    keys = {g.key for g in p.topology.tracked()} | set(p.topology.anti_keys())
    return not any(p.topology.counts_on(sample, key) for key in keys)


def schedule(p: Pass, cls: PodClass) -> None:
    """Place the class; what does not fit is tried again with one preference fewer
    (`PodClass.relaxed`, in Karpenter's order), and reported with a reason once none is left.
    """
    current: PodClass | None = cls
    while current is not None:
        leftover, reason = place(p, current, frozenset())
        if not leftover:
            return
        relaxed = current.relaxed()
        if relaxed is None:
            for pod in leftover:
                p.unschedulable[pod.key] = reason
            return
        current = relaxed.with_pods(tuple(leftover))


def place(
    p: Pass, cls: PodClass, resolved: frozenset[int], fill: Callable[[PodClass], tuple[list[Pod], str]] | None = None
) -> tuple[list[Pod], str]:
    """Split the class by its domain constraints, then hand each part to `fill` (`fill_class`)."""
    for i, (constraint, anti) in enumerate(domain_constraints(cls)):
        if i in resolved:
            continue
        key = constraint.topology_key
        domains = reachable(p, cls, key)
        counted: frozenset[str] = frozenset()
        if isinstance(constraint, SpreadConstraint):
            counted = counted_domains(p, cls, constraint) | set(domains)
            domains = live_domains(p, cls, key, domains)
        split = p.topology.split(cls.sample, len(cls.pods), constraint, anti, domains, counted=counted)
        if not split.parts:
            return list(cls.pods), split.reason
        leftover: list[Pod] = []
        reason = ""
        start = 0
        for allowed, count in split.parts:
            part = restrict(p, cls, key, allowed, cls.pods[start : start + count])
            start += count
            rest, why = place(p, part, resolved | {i}, fill)
            leftover += rest
            reason = reason or why
        if start < len(cls.pods):
            leftover += cls.pods[start:]
            reason = reason or f"topology spread on {key}: maxSkew {getattr(constraint, 'max_skew', 1)}"
        return leftover, reason
    for key in p.topology.anti_keys():
        forbidden = p.topology.forbidden(cls.sample, key) if key != wk.HOSTNAME else set()
        if forbidden:
            # Other pods' required anti-affinity keeps this class out of those domains.
            cls = cls.restricted(Requirements([Requirement.new(key, "NotIn", sorted(forbidden))]))
    return fill(cls) if fill is not None else fill_class(p, cls)


def reachable(p: Pass, cls: PodClass, key: str) -> list[str]:
    """Domains of `key` this class could land in: from compatible pools and existing nodes."""
    cache_key = (cls.alternatives, p.tolerations_id(cls.sample.tolerations), cls.tolerate_prefer_no_schedule, key)
    out = p.reachable_cache.get(cache_key)
    if out is None:
        found: set[str] = set()
        for pool in p.pools:
            if not pool_tolerates(p, cls, pool):
                continue
            for alt in cls.alternatives:
                if pool.requirements.compatible(alt):
                    found |= pool_values(pool, key, alt.get(key))
        for b in p.existing:
            value = b.domain(key)
            if value is not None and any(bin_compatible(p, b, alt) for alt in cls.alternatives):
                found.add(value)
        out = p.reachable_cache[cache_key] = frozenset(found)
    return sorted(out - p.topology.forbidden(cls.sample, key))


def fill_class(p: Pass, cls: PodClass) -> tuple[list[Pod], str]:
    """Place the class's pods on existing bins, then this pass's open claims (first fit, at most
    SCAN_LIMIT of them; emptiest first with `Strategy.emptiest_first`), then on new claims. Returns
    the pods that found no place, and why.
    """
    pods = cls.pods
    want = len(pods)
    done = 0
    req = p.vec(cls.requests)
    ci, mi = p.index[CPU], p.index[MEMORY]
    need_cpu, need_memory = req[ci], req[mi]
    claims = sorted(p.open, key=lambda b: len(b.pods)) if p.strategy.emptiest_first else p.open
    one_by_one = p.strategy.widen_claims and p.strategy.emptiest_first and len(p.open) <= ROUND_ROBIN_LIMIT
    # Existing nodes and in-flight claims first, then this pass's open claims.
    roomy = p.strategy.forced_first and not one_by_one
    scan: Iterable[Bin] = () if one_by_one or roomy else claims[:SCAN_LIMIT]
    for b in itertools.chain(p.existing, scan):
        free = b.free
        if free[ci] < need_cpu or free[mi] < need_memory:
            continue  # the common rejection, without a call
        n = fits(p, cls, req, b, want - done)
        if n:
            assign_pods(p, cls, b, pods[done : done + n], req)
            done += n
            if done == want:
                break
    if roomy and done < want:
        done = _fill_roomy(p, cls, req, done, claims)
    if done == want:
        return [], ""
    # True while the round robin's last try to widen a claim for the next pod failed and no claim
    # changed since: trying again would fail again.
    widened = False
    if one_by_one:
        done += _round_robin(p, cls, req, done)
        widened = True
    while done < want:
        claim, reason = open_claim(p, cls, req)
        if claim is None and p.strategy.widen_claims and not widened:
            claim, n = widen_claim(p, cls, req, want - done)
            if claim is not None:
                assign_pods(p, cls, claim, pods[done : done + n], req)
                done += n
                continue
        if claim is None:
            return list(pods[done:]), reason
        n = fits(p, cls, req, claim, want - done)
        if n == 0:  # pragma: no cover - open_claim only opens claims that take a pod
            drop_claim(p, claim)
            return list(pods[done:]), "internal: a new claim took no pod"
        assign_pods(p, cls, claim, pods[done : done + n], req)
        done += n
        widened = False
    return [], ""


def _fill_roomy(p: Pass, cls: PodClass, req: tuple[int, ...], done: int, claims: list[Bin]) -> int:
    """Place the class's pods from `done` on the open claims (oldest first) a class of this size
    scans with `Strategy.forced_first`: the first SCAN_LIMIT with room for one pod; returns how
    many of its pods are placed now. With thousands of claims opened first for pods that each
    need a node, the oldest SCAN_LIMIT are soon too full for the pods that come next, and first
    fit over them alone would open a node per pod. A claim's room only shrinks while a pass
    fills, so one found too small for a size stays too small: `Pass.roomy` keeps, per size, the
    claims not yet found too small (and the last claim number it has seen), so each claim is
    passed over at most once per size.
    """
    pods = cls.pods
    want = len(pods)
    ci, mi = p.index[CPU], p.index[MEMORY]
    need_cpu, need_memory = req[ci], req[mi]
    size = (need_cpu, need_memory)
    known, seen = p.roomy.get(size) or ([], 0)
    last = claims[-1].seq if claims else seen
    if last > seen:
        known.extend(claims[bisect.bisect_right(claims, seen, key=lambda b: b.seq) :])
    stop = tried = 0
    for b in known:
        stop += 1
        free = b.free
        if free[ci] < need_cpu or free[mi] < need_memory:
            continue
        n = fits(p, cls, req, b, want - done)
        if n:
            assign_pods(p, cls, b, pods[done : done + n], req)
            done += n
            if done == want:
                break
        tried += 1
        if tried >= SCAN_LIMIT:
            break
    # What the scan passed and is too small now stays so: drop it for this size.
    head = [b for b in known[:stop] if b.free[ci] >= need_cpu and b.free[mi] >= need_memory]
    if len(head) < stop:
        known[:stop] = head
    p.roomy[size] = (known, last)
    return done


def _round_robin(p: Pass, cls: PodClass, req: tuple[int, ...], done: int) -> int:
    """Karpenter's order under binding limits: each pod of `cls` from `done` on goes to the open
    claim with the fewest pods that takes it (ties: the older), and when none does, to a claim
    that another of its types would let take it (`widen_claim`), before any new claim: Karpenter's
    claim accepts a pod while any of its instance types holds them all. Spreading a class pod by
    pod leaves the small pods that come later room on every claim, where filling claims one after
    the other strands a sliver of each. Returns how many were placed.
    """
    placed = 0
    pods = cls.pods
    while done + placed < len(pods):
        here = done + placed
        target = next((b for b in sorted(p.open, key=lambda b: len(b.pods)) if fits(p, cls, req, b, 1)), None)
        if target is None:
            target, _ = widen_claim(p, cls, req, len(pods) - here)
            if target is None:
                return placed
        assign_pods(p, cls, target, pods[here : here + 1], req)
        placed += 1
    return placed


def domain_constraints(cls: PodClass) -> list[tuple[SpreadConstraint | AffinityTerm, bool]]:
    """The class's constraints keyed on something other than hostname, in a fixed order."""
    out: list[tuple[SpreadConstraint | AffinityTerm, bool]] = []
    out += [(s, False) for s in cls.spread if s.topology_key != wk.HOSTNAME]
    out += [(t, False) for t in cls.affinity if t.topology_key != wk.HOSTNAME]
    out += [(t, True) for t in cls.anti_affinity if t.topology_key != wk.HOSTNAME]
    return out
