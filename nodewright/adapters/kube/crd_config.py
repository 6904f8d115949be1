"""Read NodePool, EC2NodeClass, NodeOverlay and CapacityBuffer objects from the cluster as validated documents.

Role: the in-cluster configuration source. Lists `nodewright.io/v1` NodePools and EC2NodeClasses
and, when Karpenter's CRDs are installed, `karpenter.sh/v1` NodePools, `karpenter.k8s.aws/v1`
EC2NodeClasses and `karpenter.sh/v1alpha1` NodeOverlays, through the official client's
CustomObjectsApi, and validates them with the same code as files and the config table
(`nodewright.config.documents`). A resource whose CRD is not installed (HTTP 404) contributes
nothing; any other API error is raised. The same name under both groups is a
duplicate-definition problem, as for files.

Karpenter's kinds during a migration: while a Karpenter controller runs in the cluster (its
leader-election Lease renewed lately: `karpenter_lease.running_karpenter`), a `karpenter.sh`
NodePool whose `nodeClassRef` names Karpenter's own EC2NodeClass (`karpenter.k8s.aws`) is
Karpenter's: it is not read, nor are Karpenter's EC2NodeClasses, and each one left is a warning
naming the Lease. A `karpenter.sh` NodePool whose `nodeClassRef` names `group: nodewright.io` is
Nodewright's (Karpenter acts only on NodePools whose NodeClass kind it serves) and is read. Once
the Lease is stale, every `karpenter.sh` NodePool and `karpenter.k8s.aws` EC2NodeClass is read.

With `include_buffers`, SIG Autoscaling's CapacityBuffers (namespaced) are listed too, under
`autoscaling.x-k8s.io/v1beta1`, or `v1alpha1` when the API server serves only that version (a CRD
serving both returns the same objects under each: one list is enough), and, when a buffer names
one by `podTemplateRef`, the core/v1 PodTemplates of every namespace (one list, only then).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kubernetes.client import ApiClient, CoreV1Api, CustomObjectsApi
from kubernetes.client.exceptions import ApiException

from nodewright.adapters.kube.karpenter_lease import KARPENTER_GONE_AFTER, KarpenterLease, running_karpenter
from nodewright.config.documents import (
    CAPACITYBUFFER,
    EC2NODECLASS,
    NODEOVERLAY,
    NODEPOOL,
    PODTEMPLATE,
    Loaded,
    combine,
    parse_manifest,
)
from nodewright.config.problems import Problem

PAGE_SIZE = 500


@dataclass(frozen=True, slots=True)
class CustomResource:
    """One custom resource to read: API group, version, plural and the kind its objects have."""

    group: str
    version: str
    plural: str
    kind: str

    @property
    def api_version(self) -> str:
        """`group/version` (`version` alone for the core group)."""
        return f"{self.group}/{self.version}" if self.group else self.version


NODEWRIGHT_RESOURCES = (
    CustomResource("nodewright.io", "v1", "nodepools", NODEPOOL),
    CustomResource("nodewright.io", "v1", "ec2nodeclasses", EC2NODECLASS),
)
KARPENTER_RESOURCES = (
    CustomResource("karpenter.sh", "v1", "nodepools", NODEPOOL),
    CustomResource("karpenter.k8s.aws", "v1", "ec2nodeclasses", EC2NODECLASS),
    CustomResource("karpenter.sh", "v1alpha1", "nodeoverlays", NODEOVERLAY),
)
# The group of a NodeClass only Nodewright serves: a karpenter.sh NodePool naming it is Nodewright's.
NODEWRIGHT_GROUP = "nodewright.io"
# Newest first: the first version the API server serves is the one read.
BUFFER_RESOURCES = (
    CustomResource("autoscaling.x-k8s.io", "v1beta1", "capacitybuffers", CAPACITYBUFFER),
    CustomResource("autoscaling.x-k8s.io", "v1alpha1", "capacitybuffers", CAPACITYBUFFER),
)
PODTEMPLATES = CustomResource("", "v1", "podtemplates", PODTEMPLATE)
NODECLAIMS = CustomResource("nodewright.io", "v1", "nodeclaims", "NodeClaim")


def _list_all(api: CustomObjectsApi | CoreV1Api, resource: CustomResource) -> list[dict[str, Any]] | None:
    """Every object of a resource across namespaces (following `continue`), or None if not served."""
    items: list[dict[str, Any]] = []
    token: str | None = None
    while True:
        kwargs: dict[str, Any] = {"limit": PAGE_SIZE}
        if token:
            kwargs["_continue"] = token
        try:
            if isinstance(api, CoreV1Api):
                # The typed client would turn the pods' specs into models: the raw JSON is what is validated.
                response = api.list_pod_template_for_all_namespaces(_preload_content=False, **kwargs)
                listing: dict[str, Any] = json.loads(response.data)
            else:
                # Cluster-scoped and namespaced resources alike: the group-wide path lists every namespace.
                listing = api.list_cluster_custom_object(resource.group, resource.version, resource.plural, **kwargs)
        except ApiException as error:
            if error.status == 404:
                return None
            raise
        items.extend(listing.get("items") or ())
        token = (listing.get("metadata") or {}).get("continue")
        if not token:
            return items


def _source(resource: CustomResource) -> str:
    """How a document read from a resource names its source: `nodepools.karpenter.sh/v1`."""
    group = f".{resource.group}" if resource.group else ""
    return f"{resource.plural}{group}/{resource.version}"


def _parsed(resource: CustomResource, objects: list[dict[str, Any]] | None) -> list[Loaded]:
    """Each listed object validated as a document whose source names the resource it came from."""
    out = []
    for index, raw in enumerate(objects or ()):
        body = dict(raw)
        # List responses may omit an item's apiVersion/kind; the resource they came from decides them.
        body.setdefault("apiVersion", resource.api_version)
        body.setdefault("kind", resource.kind)
        out.append(parse_manifest(body, source=_source(resource), index=index))
    return out


def _karpenters(resource: CustomResource, raw: dict[str, Any]) -> bool:
    """Whether an object is a running Karpenter's to act on (module docstring): its EC2NodeClasses,
    and its NodePools unless they name Nodewright's NodeClass group.
    """
    if resource.group == "karpenter.k8s.aws" and resource.kind == EC2NODECLASS:
        return True
    if resource.group != "karpenter.sh" or resource.kind != NODEPOOL:
        return False
    spec = raw.get("spec")
    template = spec.get("template") if isinstance(spec, dict) else None
    inner = template.get("spec") if isinstance(template, dict) else None
    ref = inner.get("nodeClassRef") if isinstance(inner, dict) else None
    return not (isinstance(ref, dict) and ref.get("group") == NODEWRIGHT_GROUP)


def _left_to_karpenter(resource: CustomResource, raw: dict[str, Any], lease: KarpenterLease) -> Loaded:
    """The warning for an object left to the running Karpenter."""
    name = str((raw.get("metadata") or {}).get("name") or "")
    warning = Problem(
        _source(resource),
        f"{resource.kind}/{name}",
        "",
        f"left to Karpenter, which runs in this cluster ({lease}); Nodewright reads it once that Lease "
        f"is not renewed for {int(KARPENTER_GONE_AFTER.total_seconds() // 60)} minutes, or now if its "
        f"nodeClassRef names group {NODEWRIGHT_GROUP}",
        warning=True,
    )
    return Loaded(warnings=(warning,))


def read_buffers(api_client: ApiClient) -> list[Loaded]:
    """The cluster's CapacityBuffers (the newest version served) and, when one names a PodTemplate,
    the PodTemplates: validated, problems included. Nothing when the CRD is not installed.
    """
    api = CustomObjectsApi(api_client)
    for resource in BUFFER_RESOURCES:
        buffers = _list_all(api, resource)
        if buffers is not None:
            break
    else:
        return []
    parts = _parsed(resource, buffers)
    named = {_template_named(b) for b in buffers} - {None}
    if named:
        # Only the templates buffers name: the others are no configuration of ours.
        templates = list_podtemplates(api_client) or []
        parts += _parsed(PODTEMPLATES, [t for t in templates if _identity(t) in named])
    return parts


def list_podtemplates(api_client: ApiClient) -> list[dict[str, Any]] | None:
    """Every core/v1 PodTemplate in the cluster, as the API server returns them (one paged list)."""
    return _list_all(CoreV1Api(api_client), PODTEMPLATES)


def list_nodeclaim_objects(api_client: ApiClient) -> list[dict[str, Any]] | None:
    """The cluster's NodeClaim objects (`nodeclaims.nodewright.io`, the claims' mirror) as the API
    server returns them; None when their CRD is not installed.
    """
    return _list_all(CustomObjectsApi(api_client), NODECLAIMS)


def _identity(raw: dict[str, Any]) -> tuple[str, str]:
    """An object's (namespace, name), as the API server stores it."""
    metadata = raw.get("metadata") or {}
    return str(metadata.get("namespace") or "default"), str(metadata.get("name") or "")


def _template_named(buffer: dict[str, Any]) -> tuple[str, str] | None:
    """(namespace, name) of the PodTemplate a buffer's `podTemplateRef` names; None without one
    (a malformed reference is left for validation to report against the buffer).
    """
    spec = buffer.get("spec")
    ref = spec.get("podTemplateRef") if isinstance(spec, dict) else None
    if not isinstance(ref, dict) or not isinstance(ref.get("name"), str):
        return None
    return _identity(buffer)[0], ref["name"]


def read_config(
    api_client: ApiClient,
    *,
    include_karpenter: bool = True,
    include_buffers: bool = False,
    now: datetime | None = None,
) -> Loaded:
    """Every NodePool, EC2NodeClass and NodeOverlay in the cluster that is Nodewright's to act on
    (with `include_buffers`, the CapacityBuffers and the PodTemplates they name too), validated
    (problems included, not raised); Karpenter's kinds left to a running Karpenter are warnings
    (module docstring; `now`, the wall clock when None, judges its Lease).
    """
    api = CustomObjectsApi(api_client)
    resources = NODEWRIGHT_RESOURCES + (KARPENTER_RESOURCES if include_karpenter else ())
    lease = running_karpenter(api_client, now) if include_karpenter else None
    parts: list[Loaded] = []
    for resource in resources:
        objects = _list_all(api, resource) or []
        if lease is not None:
            parts += [_left_to_karpenter(resource, raw, lease) for raw in objects if _karpenters(resource, raw)]
            objects = [raw for raw in objects if not _karpenters(resource, raw)]
        parts += _parsed(resource, objects)
    loaded = combine(parts)
    if not include_buffers:
        return loaded
    # Namespaced: the same name in two namespaces is two objects, not a name defined twice (which
    # `combine` checks by `Kind/name`); the API server already keeps one per namespace and name.
    buffers = read_buffers(api_client)
    return Loaded(
        loaded.documents + tuple(d for part in buffers for d in part.documents),
        loaded.problems + tuple(p for part in buffers for p in part.problems),
        loaded.warnings + tuple(w for part in buffers for w in part.warnings),
    )
