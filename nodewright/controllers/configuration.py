"""NodePools, EC2NodeClasses and NodeOverlays for the controllers, from wherever they are stored.

`StoredConfiguration` wraps a reader (the DynamoDB config table, or the cluster's CRDs) and turns
its validated documents into models. A document that fails validation was refused when it was
written, so reads see only valid ones; if a read fails outright, the last good configuration is
used and the failure is reported, so a passing glitch never stops provisioning.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from nodewright.config.documents import Document
from nodewright.model.capacitybuffer import CapacityBuffer, PodTemplate
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodeoverlay import NodeOverlay
from nodewright.model.nodepool import NodePool
from nodewright.ports import Observer


class StoredConfiguration:
    """A Configuration (`nodewright.ports`) over a document reader."""

    def __init__(self, read: Callable[[], Sequence[Document]], observer: Observer) -> None:
        self._read = read
        self._observer = observer
        self._last: tuple[list[NodePool], dict[str, EC2NodeClass]] | None = None
        self._overlays: list[NodeOverlay] = []
        self._buffers: tuple[tuple[CapacityBuffer, ...], tuple[PodTemplate, ...]] = ((), ())
        self._statuses: dict[tuple[str, str, str], Mapping[str, Any]] = {}

    def load(self) -> tuple[list[NodePool], dict[str, EC2NodeClass]]:
        """The NodePools (by name) and EC2NodeClasses by name; the last good set if reading fails."""
        try:
            documents = self._read()
        except Exception as error:  # any failure of the store: keep going on what we had
            if self._last is None:
                raise
            self._observer.decision("config-read-failed", error=str(error), using="last good configuration")
            return self._last
        nodepools = sorted((d.model for d in documents if isinstance(d.model, NodePool)), key=lambda p: p.name)
        nodeclasses = {d.name: d.model for d in documents if isinstance(d.model, EC2NodeClass)}
        self._last = (nodepools, nodeclasses)
        self._overlays = sorted((d.model for d in documents if isinstance(d.model, NodeOverlay)), key=lambda o: o.name)
        self._buffers = (
            tuple(d.model for d in documents if isinstance(d.model, CapacityBuffer)),
            tuple(d.model for d in documents if isinstance(d.model, PodTemplate)),
        )
        self._statuses = {
            (d.kind, str((d.body.get("metadata") or {}).get("namespace") or ""), d.name): d.body["status"]
            for d in documents
            if isinstance(d.model, (CapacityBuffer, NodeOverlay)) and isinstance(d.body.get("status"), Mapping)
        }
        return self._last

    def overlays(self) -> list[NodeOverlay]:
        """The NodeOverlays read by the last `load()` (the last good ones if that read failed)."""
        return list(self._overlays)

    def buffers(self) -> tuple[tuple[CapacityBuffer, ...], tuple[PodTemplate, ...]]:
        """The CapacityBuffers and PodTemplates read by the last `load()`."""
        return self._buffers

    def statuses(self) -> dict[tuple[str, str, str], Mapping[str, Any]]:
        """The status the last `load()` read with each CapacityBuffer and NodeOverlay, by (kind,
        namespace or "", name): what `ConfigStatus` need not write again after a cold start.
        """
        return dict(self._statuses)
