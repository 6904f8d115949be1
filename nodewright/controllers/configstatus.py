"""The status of the configuration objects read from the cluster (configSource=crd), written back.

Role: `ConfigStatus` tells `kubectl get` what Nodewright made of the CapacityBuffers and
NodeOverlays it read, in the fields their owners define, as the Cluster Autoscaler and Karpenter
write them:

* a CapacityBuffer (`autoscaling.x-k8s.io`): `podTemplateRef` (the PodTemplate its chunks copy;
  none for a `scalableRef` buffer, whose chunk is a live pod of the workload), `replicas` (the
  chunks Nodewright keeps room for, once resolved), `provisioningStrategy`, and the conditions
  `ReadyForProvisioning` (True once the chunk and the count are resolved; False with why: the
  PodTemplate is missing, the workload has no live pod) and `Provisioning` (True while the
  chunks fit a NodePool; False with why, e.g. the NodePools' limits bind). A buffer with another
  `provisioningStrategy` is left alone: its status belongs to whatever implements that strategy;
* a NodeOverlay (`karpenter.sh/v1alpha1`): `ValidationSucceeded` and `Ready`, both False with
  reason `Conflict` while an overlay of the same weight has it refused (`engine.overlay`), else
  True.

Cost: a status is written only when it differs from the one this warm container last wrote or,
before its first write, from the one the object had when the configuration was read (`listed`):
a cluster at rest costs no write, even after a cold start. A condition keeps its
`lastTransitionTime` while its status holds. Writes go through `StatusWrites` (the cluster
adapter's counted request path); a failure is reported (`StatusWriteFailures` metric, a
`status-write-failed` decision) and never stops provisioning: the status is tried again when it
changes, or by the next container.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from nodewright.engine.buffer import BufferPods
from nodewright.model.capacitybuffer import ACTIVE_CAPACITY, CapacityBuffer
from nodewright.model.manifests import format_timestamp
from nodewright.model.nodeoverlay import NodeOverlay
from nodewright.ports import Clock, Observer, StatusWrites

CAPACITYBUFFER = "CapacityBuffer"
NODEOVERLAY = "NodeOverlay"


class ConfigStatus:
    """Writes CapacityBuffer and NodeOverlay status when it changes (see the module docstring)."""

    def __init__(
        self,
        writes: StatusWrites,
        clock: Clock,
        observer: Observer,
        listed: Callable[[], Mapping[tuple[str, str, str], Mapping[str, Any]]] | None = None,
    ) -> None:
        self.writes = writes
        self.clock = clock
        self.observer = observer
        # The status each object had when the configuration was read (StoredConfiguration.statuses):
        # after a cold start, an object whose status already says the same is not written again.
        self.listed = listed or dict
        # By (kind, namespace, name): the status last written (or found to have no object).
        self._written: dict[tuple[str, str, str], dict[str, Any]] = {}

    def buffers(self, buffers: Sequence[CapacityBuffer], virtual: BufferPods, problems: Mapping[str, str]) -> None:
        """Each active-capacity buffer's status from its virtual pods, the reasons it has none
        (`virtual.problems`) and the reasons its chunks fit no NodePool (`problems`, keyed `ns/name`).
        """
        counts: dict[tuple[str, str], int] = {}
        for pod in virtual.pods:
            counts[pod.namespace, pod.owner_name] = counts.get((pod.namespace, pod.owner_name), 0) + 1
        for buffer in buffers:
            if buffer.provisioning_strategy != ACTIVE_CAPACITY:
                continue
            key = f"{buffer.namespace}/{buffer.name}"
            unresolved = virtual.problems.get(key)
            short = problems.get(key) if unresolved is None else None
            replicas = counts.get((buffer.namespace, buffer.name), 0)
            template = {"name": buffer.pod_template_ref} if buffer.pod_template_ref and not unresolved else None
            ready = ("ReadyForProvisioning", True, "Resolved", f"room kept for {replicas} chunk(s)")
            provisioning = ("Provisioning", True, "Provisioning", "the chunks fit a NodePool")
            if unresolved is not None:
                ready = ("ReadyForProvisioning", False, "NotResolved", unresolved)
                provisioning = ("Provisioning", False, "NotReadyForProvisioning", unresolved)
            elif short is not None:
                provisioning = ("Provisioning", False, "NoCapacity", short)
            status = {
                "podTemplateRef": template,
                "replicas": None if unresolved else replicas,
                "provisioningStrategy": buffer.provisioning_strategy,
            }
            self._put(
                CAPACITYBUFFER,
                buffer.api_version,
                buffer.namespace,
                buffer.name,
                fields=status,
                conditions=(ready, provisioning),
            )

    def overlays(self, overlays: Sequence[NodeOverlay], conflicts: Mapping[str, str]) -> None:
        """Each NodeOverlay's ValidationSucceeded and Ready: False, reason Conflict, when refused."""
        for overlay in overlays:
            why = conflicts.get(overlay.name)
            conditions = [
                ("ValidationSucceeded", why is None, "Conflict" if why else "ValidationSucceeded", why or ""),
                ("Ready", why is None, "Conflict" if why else "Ready", why or ""),
            ]
            self._put(NODEOVERLAY, overlay.api_version, None, overlay.name, fields={}, conditions=conditions)

    def _put(
        self,
        kind: str,
        api_version: str,
        namespace: str | None,
        name: str,
        *,
        fields: Mapping[str, Any],
        conditions: Sequence[tuple[str, bool, str, str]],
    ) -> None:
        """Write `fields` and `conditions` as the object's status unless that is what was written last."""
        key = (kind, namespace or "", name)
        previous = self._written.get(key)
        if previous is None:
            previous = _present(self.listed().get(key) or {}) or None
        # Conditions as read may come from another writer: only well-formed ones are kept.
        rows_before = (previous or {}).get("conditions") or ()
        kept = {c.get("type"): c for c in rows_before if isinstance(c, Mapping)}
        now = format_timestamp(self.clock.now())
        rows = []
        for kind_of, ok, reason, message in conditions:
            state = "True" if ok else "False"
            before = kept.get(kind_of)
            # The time the condition last changed status, not the time of this write.
            since = str(before.get("lastTransitionTime") or now) if before and before.get("status") == state else now
            rows.append(
                {"type": kind_of, "status": state, "reason": reason, "message": message, "lastTransitionTime": since}
            )
        status = {**fields, "conditions": sorted(rows, key=lambda c: c["type"])}
        if _present(status) == previous:
            return
        try:
            self.writes.put_status(kind, api_version, namespace, name, status)
        except Exception as error:  # a status is for people reading it: never stop provisioning
            self.observer.metric("StatusWriteFailures", 1)
            self.observer.decision("status-write-failed", object=f"{kind}/{key[1]}/{name}", error=str(error))
        # Remembered even when the write failed (the adapter already retried what was transient;
        # a 403 would fail at every check) or found no object: asked again when the status
        # changes, or in the next container (the object's status as read differs then).
        self._written[key] = _present(status)


def _present(status: Mapping[str, Any]) -> dict[str, Any]:
    """`status` as the API server stores it after a merge patch: a null field is removed."""
    return {name: value for name, value in status.items() if value is not None}
