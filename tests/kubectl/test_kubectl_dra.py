"""DRA's kinds (resource.k8s.io/v1) as kubectl uses them against the API emulator.

Real: kubectl (apply, get, get -o yaml, delete), the emulator's discovery and the DRA endpoints
(`nodewright/inmemory/apidra.py`). Faked: the cluster (`InMemoryCluster`). Observed: kubectl's
output and exit status, and the objects the cluster holds (what the scheduler's view reads).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nodewright.inmemory.cluster import InMemoryCluster
from tests.kubectl.conftest import REPO, Kubectl

pytestmark = pytest.mark.integration

DEVICES = REPO / "examples" / "dra" / "devices.yaml"


def test_apply_get_and_delete_the_dra_example(kubectl: Kubectl, cluster: InMemoryCluster) -> None:
    applied = kubectl.ok("apply", "-f", str(DEVICES)).out.splitlines()
    assert applied == [
        "deviceclass.resource.k8s.io/gpu.nvidia.com created",
        "resourceclaimtemplate.resource.k8s.io/one-l40s created",
    ]
    assert "unchanged" in kubectl.ok("apply", "-f", str(DEVICES)).out
    assert set(cluster.snapshot().devices.templates) == {"inference/one-l40s"}
    assert set(cluster.snapshot().devices.classes) == {"gpu.nvidia.com"}

    names = kubectl.ok("get", "deviceclasses").lines
    assert names[0][0] == "NAME"
    assert names[1][0] == "gpu.nvidia.com"
    got = kubectl.ok("get", "resourceclaimtemplates", "-n", "inference", "-o", "yaml").out
    assert "deviceClassName: gpu.nvidia.com" in got

    kubectl.ok("delete", "resourceclaimtemplate", "one-l40s", "-n", "inference")
    assert cluster.snapshot().devices.templates == {}


def test_a_claim_with_a_bad_selector_is_refused_naming_the_field(kubectl: Kubectl, tmp_path: Path) -> None:
    bad = tmp_path / "claim.yaml"
    bad.write_text(
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c, namespace: default}\n"
        "spec:\n  devices:\n    requests:\n      - name: gpu\n        exactly:\n"
        "          deviceClassName: gpu.nvidia.com\n          selectors: [{cel: {expression: 'device.driver =='}}]\n"
    )
    result = kubectl("apply", "-f", str(bad))
    assert result.code != 0
    assert "spec.devices.requests[0].exactly.selectors[0].cel.expression" in result.err


def test_creating_a_taken_name_is_refused_as_the_api_server_words_it_for_dra_and_custom_kinds(
    kubectl: Kubectl, tmp_path: Path
) -> None:
    # The DRA kinds and the custom kinds share the emulator's create checks (`apiwire.posted`,
    # `apiwire.already_exists`): the same 409 for both.
    kubectl.ok("create", "-f", str(DEVICES))
    again = kubectl("create", "-f", str(DEVICES))
    assert again.code != 0
    assert 'deviceclasses.resource.k8s.io "gpu.nvidia.com" already exists' in again.err
    assert 'resourceclaimtemplates.resource.k8s.io "one-l40s" already exists' in again.err
    kubectl.ok("apply", "-f", str(REPO / "deploy" / "crds"))
    pool = REPO / "examples" / "nodepools" / "default.yaml"
    kubectl.ok("create", "-f", str(pool))
    taken = kubectl("create", "-f", str(pool))
    assert taken.code != 0
    assert 'nodepools.karpenter.sh "default" already exists' in taken.err
