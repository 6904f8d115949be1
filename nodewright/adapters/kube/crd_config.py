"""Read NodePool, EC2NodeClass and NodeOverlay custom objects from the cluster as validated documents.

Role: the in-cluster configuration source. Lists `nodewright.io/v1` NodePools and EC2NodeClasses
and, when Karpenter's CRDs are installed, `karpenter.sh/v1` NodePools, `karpenter.k8s.aws/v1`
EC2NodeClasses and `karpenter.sh/v1alpha1` NodeOverlays, through the official client's
CustomObjectsApi, and validates them with the same code as files and the config table
(`nodewright.config.documents`). A resource whose CRD is not installed (HTTP 404) contributes
nothing; any other API error is raised. The same name under both groups is a
duplicate-definition problem, as for files.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubernetes.client import ApiClient, CustomObjectsApi
from kubernetes.client.exceptions import ApiException

from nodewright.config.documents import EC2NODECLASS, NODEOVERLAY, NODEPOOL, Loaded, combine, parse_manifest

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
        """`group/version`."""
        return f"{self.group}/{self.version}"


NODEWRIGHT_RESOURCES = (
    CustomResource("nodewright.io", "v1", "nodepools", NODEPOOL),
    CustomResource("nodewright.io", "v1", "ec2nodeclasses", EC2NODECLASS),
)
KARPENTER_RESOURCES = (
    CustomResource("karpenter.sh", "v1", "nodepools", NODEPOOL),
    CustomResource("karpenter.k8s.aws", "v1", "ec2nodeclasses", EC2NODECLASS),
    CustomResource("karpenter.sh", "v1alpha1", "nodeoverlays", NODEOVERLAY),
)


def _list_all(api: CustomObjectsApi, resource: CustomResource) -> list[dict[str, Any]] | None:
    """Every object of a cluster-scoped resource (following `continue`), or None if not served."""
    items: list[dict[str, Any]] = []
    token: str | None = None
    while True:
        kwargs: dict[str, Any] = {"limit": PAGE_SIZE}
        if token:
            kwargs["_continue"] = token
        try:
            listing = api.list_cluster_custom_object(resource.group, resource.version, resource.plural, **kwargs)
        except ApiException as error:
            if error.status == 404:
                return None
            raise
        items.extend(listing.get("items") or ())
        token = (listing.get("metadata") or {}).get("continue")
        if not token:
            return items


def read_config(api_client: ApiClient, *, include_karpenter: bool = True) -> Loaded:
    """Every NodePool, EC2NodeClass and NodeOverlay in the cluster, validated (problems included, not raised)."""
    api = CustomObjectsApi(api_client)
    resources = NODEWRIGHT_RESOURCES + (KARPENTER_RESOURCES if include_karpenter else ())
    parts: list[Loaded] = []
    for resource in resources:
        objects = _list_all(api, resource)
        for index, raw in enumerate(objects or ()):
            body = dict(raw)
            # List responses may omit an item's apiVersion/kind; the resource they came from decides them.
            body.setdefault("apiVersion", resource.api_version)
            body.setdefault("kind", resource.kind)
            parts.append(parse_manifest(body, source=f"{resource.plural}.{resource.api_version}", index=index))
    return combine(parts)
