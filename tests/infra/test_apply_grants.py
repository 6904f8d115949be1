"""A server-side apply needs create as well as patch (it may create the object): the RBAC
derivation's `kube_accesses` says so, and any other request needs what `kube_access` derives.
"""

from __future__ import annotations

from infra.grants import APPLY_PATCH, KubeAccess, kube_accesses

URL = "https://cluster.example/apis/nodewright.io/v1/nodeclaims/default-abc"


def test_an_apply_needs_patch_and_create_on_the_resource() -> None:
    assert kube_accesses("PATCH", URL, {"fieldManager": "nodewright-provisioner"}, APPLY_PATCH) == {
        KubeAccess("nodewright.io", "nodeclaims", "patch"),
        KubeAccess("nodewright.io", "nodeclaims", "create"),
    }


def test_a_merge_patch_needs_patch_only() -> None:
    assert kube_accesses("PATCH", URL, None, "application/merge-patch+json") == {
        KubeAccess("nodewright.io", "nodeclaims", "patch")
    }
