"""CapacityBuffers (`autoscaling.x-k8s.io/v1beta1`): spare room kept for pods that do not exist yet. Pure.

A buffer names the shape of one chunk (a PodTemplate by `pod_template_ref`, or the pods of a
workload by `scalable_ref`) and how many chunks to keep room for: `replicas`, `percentage` of the
workload's current replicas (rounded up, at least 1), the larger of the two when both are set, and
never more than fit in `limits` (the chunks' total requests); with neither count, as many as fit
in `limits`. Only the default strategy, `buffer.x-k8s.io/active-capacity`, asks for capacity.
Parsing is in `nodewright.config.capacitybuffer`; the virtual pods in `nodewright.engine.buffer`.
"""

from __future__ import annotations

from dataclasses import dataclass

from nodewright.model.pod import Pod
from nodewright.model.resources import Resources

ACTIVE_CAPACITY = "buffer.x-k8s.io/active-capacity"
# Labels every virtual pod of a buffer carries (Karpenter's design for buffer pods).
BUFFER_LABEL = "autoscaling.x-k8s.io/buffer"
BUFFER_NAMESPACE_LABEL = "autoscaling.x-k8s.io/buffer-namespace"


@dataclass(frozen=True, slots=True)
class ScalableRef:
    """A workload with a scale subresource (Deployment, StatefulSet, ReplicaSet, Job, ...)."""

    kind: str
    name: str
    api_group: str = ""


@dataclass(frozen=True, slots=True)
class CapacityBuffer:
    """One CapacityBuffer; exactly one of `pod_template_ref` and `scalable_ref` is set."""

    name: str
    namespace: str = "default"
    pod_template_ref: str | None = None
    scalable_ref: ScalableRef | None = None
    replicas: int | None = None
    percentage: int | None = None
    limits: Resources | None = None
    provisioning_strategy: str = ACTIVE_CAPACITY
    api_version: str = "autoscaling.x-k8s.io/v1beta1"
    resource_version: str = ""


@dataclass(frozen=True, slots=True)
class PodTemplate:
    """A core/v1 PodTemplate: the pod a buffer's `podTemplateRef` names, as the scheduler sees it."""

    name: str
    namespace: str
    pod: Pod
    api_version: str = "v1"
    resource_version: str = ""
