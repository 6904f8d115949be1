"""CapacityBuffer (`autoscaling.x-k8s.io/v1beta1`, `v1alpha1`) and PodTemplate (`v1`) documents. Pure.

`parse_capacitybuffer` checks the spec as SIG Autoscaling's CRD does: exactly one of
`podTemplateRef` ({name}) and `scalableRef` ({apiGroup, kind, name}); `replicas` and `percentage`
non-negative integers (32-bit); `percentage` only with `scalableRef`; a `podTemplateRef` buffer
needs `replicas` or `limits`; `limits` a resource list; `provisioningStrategy` any string (the
default, `buffer.x-k8s.io/active-capacity`, asks for running room; Nodewright's
`nodewright.io/standby-capacity` for stopped instances, `nodewright.engine.standby`; another warns
that Nodewright leaves the buffer to whatever implements it). `parse_podtemplate` reads a core/v1 PodTemplate's
`template` (its pod spec as the scheduler sees it), so a configuration can carry the template a
buffer names. Every problem names its field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodewright.config import fields as f
from nodewright.config.nodepool import resource_list
from nodewright.config.problems import At
from nodewright.model.capacitybuffer import ACTIVE_CAPACITY, CapacityBuffer, PodTemplate, ScalableRef
from nodewright.model.errors import InvalidValue
from nodewright.model.pod import Pod
from nodewright.model.standby import STANDBY_CAPACITY

SPEC_FIELDS = ("provisioningStrategy", "podTemplateRef", "scalableRef", "replicas", "percentage", "limits")
_LOCAL_REF = ("name",)
_SCALABLE_REF = ("apiGroup", "kind", "name")
_TEMPLATE = ("metadata", "spec")
INT32 = 2**31 - 1


def _body(at: At, value: Any, fields: tuple[str, ...]) -> Mapping[str, Any] | None:
    """A document's required body object (`spec`, `template`); None, with the problem, when it is not one."""
    if value is None:
        at.error("is required")
        return None
    return f.kube_obj(at, value, fields)


def parse_capacitybuffer(
    at: At, name: str, metadata: Mapping[str, Any], spec_value: Any, api_version: str
) -> CapacityBuffer | None:
    """Validate a CapacityBuffer's spec; None when anything is wrong (`at`: the document root)."""
    at_spec = at / "spec"
    spec = _body(at_spec, spec_value, SPEC_FIELDS)
    if spec is None:
        return None
    template_ref: str | None = None
    raw_template = spec.get("podTemplateRef")
    if raw_template is not None:
        ref = f.kube_obj(at_spec / "podTemplateRef", raw_template, _LOCAL_REF)
        template_ref = f.string(
            at_spec / "podTemplateRef" / "name", f.required(at_spec / "podTemplateRef", ref, "name"), non_empty=True
        )
    scalable: ScalableRef | None = None
    raw_scalable = spec.get("scalableRef")
    if raw_scalable is not None:
        at_ref = at_spec / "scalableRef"
        ref = f.kube_obj(at_ref, raw_scalable, _SCALABLE_REF)
        kind = f.string(at_ref / "kind", f.required(at_ref, ref, "kind"), non_empty=True)
        target = f.string(at_ref / "name", f.required(at_ref, ref, "name"), non_empty=True)
        group = f.string(at_ref / "apiGroup", (ref or {}).get("apiGroup")) or ""
        if kind and target:
            scalable = ScalableRef(kind, target, group)
    if raw_template is not None and raw_scalable is not None:
        at_spec.error("must set either podTemplateRef or scalableRef, not both")
    elif raw_template is None and raw_scalable is None:
        at_spec.error("must set one of podTemplateRef and scalableRef")
    replicas = f.integer(at_spec / "replicas", spec.get("replicas"), minimum=0, maximum=INT32)
    percentage = f.integer(at_spec / "percentage", spec.get("percentage"), minimum=0, maximum=INT32)
    limits = resource_list(at_spec / "limits", spec.get("limits"))
    if spec.get("percentage") is not None and raw_scalable is None:
        (at_spec / "percentage").error("applies only with scalableRef (a share of the workload's replicas)")
    if raw_template is not None and spec.get("replicas") is None and spec.get("limits") is None:
        at_spec.error("a podTemplateRef buffer must also set replicas or limits")
    strategy = f.string(at_spec / "provisioningStrategy", spec.get("provisioningStrategy")) or ACTIVE_CAPACITY
    if at.failed_since():
        return None
    if strategy not in (ACTIVE_CAPACITY, STANDBY_CAPACITY):
        (at_spec / "provisioningStrategy").warn(
            f"only {ACTIVE_CAPACITY} and {STANDBY_CAPACITY} ask Nodewright for capacity; "
            f"this buffer is left to what implements {strategy}"
        )
    return CapacityBuffer(
        name=name,
        namespace=str(metadata.get("namespace") or "default"),
        pod_template_ref=template_ref,
        scalable_ref=scalable,
        replicas=replicas,
        percentage=percentage,
        limits=limits,
        provisioning_strategy=strategy,
        api_version=api_version,
        resource_version=str(metadata.get("resourceVersion") or ""),
    )


def parse_podtemplate(
    at: At, name: str, metadata: Mapping[str, Any], template_value: Any, api_version: str
) -> PodTemplate | None:
    """Validate a PodTemplate's `template` into the pod it describes; None when anything is wrong."""
    at_template = at / "template"
    template = _body(at_template, template_value, _TEMPLATE)
    if template is None:
        return None
    meta = template.get("metadata") or {}
    if not isinstance(meta, Mapping):
        f.wrong_type(at_template / "metadata", dict, meta)
        return None
    labels = f.string_map(at_template / "metadata" / "labels", meta.get("labels")) or {}
    spec = f.required(at_template, template, "spec")
    if spec is None:
        return None
    if not isinstance(spec, Mapping):
        f.wrong_type(at_template / "spec", dict, spec)
        return None
    if not spec.get("containers"):
        (at_template / "spec" / "containers").error("is required: a pod needs at least one container")
        return None
    namespace = str(metadata.get("namespace") or "default")
    try:
        pod = Pod.parse({"metadata": {"name": name, "namespace": namespace, "labels": labels}, "spec": spec})
    except (InvalidValue, ValueError, TypeError, AttributeError) as error:
        (at_template / "spec").error(str(error))
        return None
    return PodTemplate(
        name=name,
        namespace=namespace,
        pod=pod,
        api_version=api_version,
        resource_version=str(metadata.get("resourceVersion") or ""),
    )
