"""Host ports in use, per bin of one pass: two pods binding one `hostPort` never share a node. Pure.

kube-scheduler's NodePorts filter refuses a pod whose host port a pod on the node already binds
(`HostPort.conflicts`), and a DaemonSet's pods are on every node it runs on. So a bin's ports in
use are its bound pods' (existing nodes, `existing.add_existing`), its pool's DaemonSets' (claims
of this pass and in flight, looked up on first use) and those of the pods the pass put there
(`fit.assign_pods`). A class whose pods bind a host port fits at most one pod per bin, since each
conflicts with its twin. Pods without host ports never reach this module.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from nodewright.engine.scheduling.prepare import Pool, tolerated
from nodewright.model.pod import HostPort
from nodewright.model.workloads import DaemonSet


class HostPorts:
    """The host ports in use on each bin of one pass (by bin name)."""

    def __init__(self, daemonsets: Sequence[DaemonSet]) -> None:
        self._daemonsets = [ds for ds in daemonsets if ds.template.host_ports]
        self._used: dict[str, list[HostPort]] = {}
        self._by_pool: dict[str, list[HostPort]] = {}

    def room(self, name: str, pool: Pool | None, ports: Sequence[HostPort]) -> int:
        """How many pods binding `ports` the bin `name` (of `pool`, for a claim) still takes: 0 or 1."""
        used = self._in_use(name, pool)
        return 0 if any(p.conflicts(u) for p in ports for u in used) else 1

    def take(self, name: str, pool: Pool | None, ports: Iterable[HostPort]) -> None:
        """Mark `ports` in use on the bin `name`."""
        self._in_use(name, pool).extend(ports)

    def compatible(self, a: str, b: str, pool: Pool | None) -> bool:
        """True when the pods of bins `a` and `b` (claims of `pool`) may share one node."""
        if not self._used and not self._daemonsets:
            return True  # no host port anywhere in this pass
        daemons = self._pool_ports(pool)
        mine = self._in_use(a, pool)[len(daemons) :]
        theirs = self._in_use(b, pool)
        return not any(m.conflicts(t) for m in mine for t in theirs)

    def merge(self, a: str, b: str, pool: Pool | None) -> None:
        """Bin `a`'s pods moved to `b`: their ports are in use there."""
        daemons = self._pool_ports(pool)
        self._in_use(b, pool).extend(self._in_use(a, pool)[len(daemons) :])

    def _in_use(self, name: str, pool: Pool | None) -> list[HostPort]:
        used = self._used.get(name)
        if used is None:
            used = self._used[name] = list(self._pool_ports(pool))
        return used

    def _pool_ports(self, pool: Pool | None) -> list[HostPort]:
        """The host ports of the DaemonSets that run on `pool`'s nodes (none for an existing node,
        whose DaemonSet pods are bound pods).
        """
        if pool is None or not self._daemonsets:
            return []
        hit = self._by_pool.get(pool.name)
        if hit is None:
            hit = self._by_pool[pool.name] = [
                port
                for ds in self._daemonsets
                if tolerated(ds.template.tolerations, pool.taints, prefer=False)
                and any(pool.requirements.compatible(alt) for alt in ds.template.node_requirements())
                for port in ds.template.host_ports
            ]
        return hit
