"""The configuration the simulated functions read: the scenario's documents as of the virtual time.

`ScenarioConfiguration` is a Configuration (`nodewright.ports`) over a fixed
one, with the scenario's `nodepool_changes` applied once their time has come, as `kubectl
apply` or `kubectl scale nodepool` would change what the config table or the CRDs hold: a
static NodePool's `replicas` raised or lowered, a template changed so its nodes drift.

`from_cluster`, set by `simulate --serve`, is a second Configuration: the NodePools and
EC2NodeClasses kubectl applied to the served cluster, read as the functions read them with
`configSource=crd`. Its NodePools are added to the scenario's (one of the same name replaces the
scenario's), its EC2NodeClasses likewise.
"""

from __future__ import annotations

from collections.abc import Sequence

from nodewright.controllers.provisionoptions import StaticConfiguration
from nodewright.model.capacitybuffer import CapacityBuffer, PodTemplate
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodeoverlay import NodeOverlay
from nodewright.model.nodepool import NodePool
from nodewright.ports import Clock, Configuration
from nodewright.simulator.scenario.model import NodePoolChange


class ScenarioConfiguration:
    """`base`'s documents with each change in `changes` applied from `start + change.at` on."""

    def __init__(
        self, base: StaticConfiguration, changes: Sequence[NodePoolChange], clock: Clock, start: float
    ) -> None:
        self.base = base
        self.changes = tuple(sorted(changes, key=lambda c: c.at))
        self.clock = clock
        self.start = start
        self.from_cluster: Configuration | None = None

    def load(self) -> tuple[list[NodePool], dict[str, EC2NodeClass]]:
        """The NodePools as of now (changes whose time has come replace the pool of their name)."""
        nodepools, nodeclasses = self.base.load()
        now = self.clock.now() - self.start
        current = {p.name: p for p in nodepools}
        for change in self.changes:
            if change.at <= now:
                current[change.nodepool.name] = change.nodepool
        pools = [current[p.name] for p in nodepools]
        if self.from_cluster is None:
            return pools, nodeclasses
        applied, classes = self.from_cluster.load()
        named = {p.name for p in applied}
        return [p for p in pools if p.name not in named] + list(applied), {**nodeclasses, **classes}

    def overlays(self) -> list[NodeOverlay]:
        """The scenario's NodeOverlays."""
        return self.base.overlays()

    def buffers(self) -> tuple[tuple[CapacityBuffer, ...], tuple[PodTemplate, ...]]:
        """The scenario's CapacityBuffers and PodTemplates."""
        return self.base.buffers()
