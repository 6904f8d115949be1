"""DRA device claims: CEL selectors on published devices, and the placements they lead to.

Driven through the real entry points: `nodewright plan` on files, the Kubernetes adapter over
HTTP against the API emulator, and the provisioning input the provisioner's pass builds.
"""

from __future__ import annotations

import json
import urllib.request
from dataclasses import replace
from pathlib import Path

import pytest
from kubernetes.client import ApiClient, Configuration
from typer.testing import CliRunner

from nodewright.adapters.kube.cluster import KubeCluster
from nodewright.adapters.offline_catalog import load_catalog
from nodewright.cli import app
from nodewright.cli import commands as _commands  # noqa: F401  (registers the commands)
from nodewright.engine.devices import lower
from nodewright.engine.disruption import compute_commands
from nodewright.engine.scheduling.inputs import provisioning_input
from nodewright.engine.scheduling.solver import solve
from nodewright.engine.scheduling.types import PoolCapacity
from nodewright.inmemory.apiserver import ApiServer
from nodewright.inmemory.cluster import InMemoryCluster
from nodewright.model.cel import CelError, Selector, UnsupportedExpression
from nodewright.model.dra import NEURON_DRIVER, NVIDIA_DRIVER, DeviceObjects, PodClaim, published_devices
from nodewright.model.errors import InvalidValue
from nodewright.model.pod import Pod
from nodewright.model.snapshot import ClusterSnapshot
from tests.builders import node_pool
from tests.engine.disruption.scenario import World, catalog

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "dra"
L40S = {
    "karpenter.k8s.aws/instance-gpu-count": "1",
    "karpenter.k8s.aws/instance-gpu-manufacturer": "nvidia",
    "karpenter.k8s.aws/instance-gpu-name": "l40s",
    "karpenter.k8s.aws/instance-gpu-memory": "45776",
}
CLASS = {
    "metadata": {"name": "gpu.nvidia.com"},
    "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.nvidia.com"'}}]},
}


def _template(expression: str, count: int = 1, name: str = "t") -> dict[str, object]:
    exactly = {"deviceClassName": "gpu.nvidia.com", "count": count, "selectors": [{"cel": {"expression": expression}}]}
    return {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}},
    }


def _pod(name: str, template: str = "t") -> Pod:
    return Pod.parse(
        {
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}, "claims": [{"name": "gpu"}]}}],
                "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": template}],
            },
            "status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]},
        }
    )


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ('device.attributes["gpu.nvidia.com"].productName == "NVIDIA L40S"', True),
        ("device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA A')", False),
        ('device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0', True),
        ('device.capacity["gpu.nvidia.com"].memory.isGreaterThan(quantity("80Gi"))', False),
        ('device.attributes["gpu.nvidia.com"].architecture in ["Ada Lovelace", "Hopper"]', True),
        # Another driver's domain is an empty map; && absorbs the error of the missing key.
        ('device.driver == "neuron.aws.com" && device.attributes["neuron.aws.com"].instanceType == "x"', False),
        ('!(device.attributes["gpu.nvidia.com"].type == "gpu")', False),
    ],
    ids=["product", "prefix", "memory-at-least", "memory-greater", "in-list", "other-driver", "negation"],
)
def test_selectors_on_an_l40s_device(expression: str, expected: bool) -> None:
    (group,) = published_devices(L40S)
    assert group.driver == NVIDIA_DRIVER
    assert group.count == 1
    assert Selector.parse(expression).matches(group.device) is expected


def test_a_missing_attribute_is_an_error_and_unknown_functions_are_refused() -> None:
    (group,) = published_devices(L40S)
    with pytest.raises(CelError, match="no such key"):
        Selector.parse('device.attributes["gpu.nvidia.com"].nope == 1').matches(group.device)
    with pytest.raises(UnsupportedExpression, match="function"):
        Selector.parse('device.driver == "x" || ext("y")').matches(published_devices(L40S)[0].device)
    with pytest.raises(
        InvalidValue,
        match=r"ResourceClaimTemplate default/t: spec.spec.devices.requests\[0\].exactly.selectors\[0\].cel.expression",
    ):
        DeviceObjects.parse(templates=[_template("device.driver ==")])


def test_trainium_types_publish_neuron_devices() -> None:
    trn = next(t for t in load_catalog() if t.name == "trn1.32xlarge")
    labels = {
        k: v
        for k in ("karpenter.k8s.aws/instance-accelerator-name", "karpenter.k8s.aws/instance-accelerator-count")
        if (v := trn.label(k))
    }
    (group,) = published_devices({**labels, "node.kubernetes.io/instance-type": trn.name})
    assert (group.driver, group.count) == (NEURON_DRIVER, 16)
    assert group.device.attributes[NEURON_DRIVER]["instanceType"] == "trn1.32xlarge"


def test_claims_get_new_nodes_only_of_types_with_the_devices() -> None:
    types = tuple(load_catalog())
    objects = DeviceObjects.parse(
        [CLASS], templates=[_template('device.attributes["gpu.nvidia.com"].productName == "NVIDIA A10G"', count=2)]
    )
    pods = tuple(_pod(f"p{i}") for i in range(3))
    snapshot = ClusterSnapshot(pods=pods, devices=objects)
    result = solve(provisioning_input(snapshot, pending=snapshot.pending(), pools=(PoolCapacity(node_pool(), types),)))
    assert not result.unschedulable
    assert result.claims
    for claim in result.claims:
        for option in claim.options:
            assert option.label("karpenter.k8s.aws/instance-gpu-name") == "a10g"
            assert int(option.label("karpenter.k8s.aws/instance-gpu-count") or 0) >= 2 * len(claim.pods)


def test_an_unknown_class_leaves_the_pod_out_with_the_reason() -> None:
    objects = DeviceObjects.parse(templates=[_template("true")])
    lowered = lower(ClusterSnapshot(pods=(_pod("p"),), devices=objects), (_pod("p"),), load_catalog())
    assert lowered.problems == {
        "default/p": "ResourceClaimTemplate default/t request gpu: DeviceClass gpu.nvidia.com not found"
    }


def test_nodewright_plan_places_the_example_on_l40s_types_only() -> None:
    result = CliRunner().invoke(
        app,
        [
            "plan",
            "-f",
            str(EXAMPLES),
            "-f",
            str(EXAMPLES.parent / "nodepools" / "default.yaml"),
            "--output",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    claims = report["nodeclaims"]
    assert sum(len(c["pods"]) for c in claims) == 6
    assert {t.partition(".")[0] for c in claims for t in c["instance_type_options"]} == {"g6e"}


def test_the_adapter_reads_the_emulators_dra_objects_over_http() -> None:
    cluster = InMemoryCluster()
    cluster.devices.put({"kind": "DeviceClass", **CLASS})
    with ApiServer(cluster) as server:
        body = json.dumps(
            {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", **_template("true")}
        ).encode()
        request = urllib.request.Request(
            f"{server.url}/apis/resource.k8s.io/v1/namespaces/default/resourceclaimtemplates",
            body,
            {"Content-Type": "application/json"},
            method="POST",
        )
        assert urllib.request.urlopen(request).status == 201
        with server.lock:
            cluster.add_pod(_pod("p"))
        config = Configuration()
        config.host = server.url
        kube = KubeCluster.connect(ApiClient(config))
        try:
            assert set(kube.snapshot().devices.templates) == {"default/t"}
            kube.follow(5)
            followed = kube.snapshot()
            assert set(followed.devices.classes) == {"gpu.nvidia.com"}
            assert "resourceclaimtemplates" in kube.watchers()
        finally:
            kube.close()
    assert set(cluster.snapshot().devices.templates) == {"default/t"}


def test_consolidation_keeps_a_device_pod_on_a_type_with_its_devices() -> None:
    """An on-demand g6e.xlarge holding one small pod: without a claim consolidation replaces it
    by a cheap CPU node; with the pod's L40S claim (lowered as the consolidator's input is) only
    by a type publishing L40S devices.
    """
    g6e = next(t for t in load_catalog() if t.name == "g6e.xlarge")
    world = World(types=(*catalog(), g6e))
    world.node("gpu", "g6e.xlarge")
    (plain,) = world.put("gpu", cpu="1", memory="2Gi")
    claimed = replace(plain, device_claims=(PodClaim("gpu", template_name="t"),))
    objects = DeviceObjects.parse(
        [CLASS], templates=[_template('device.attributes["gpu.nvidia.com"].productName == "NVIDIA L40S"')]
    )

    before = world.run()
    assert [c.replacement_price < 1 for c in before.commands] == [True]
    assert {t.name for r in before.commands[0].replacements for t in r.options} <= {t.name for t in catalog()}

    world.pods = [claimed]
    inp = world.input()
    lowered = replace(inp, snapshot=lower(replace(inp.snapshot, devices=objects), (), (*catalog(), g6e)).snapshot)
    after = compute_commands(lowered)
    # Still consolidated (spot g6e is cheaper), but only onto the type that has the devices.
    assert [c.candidates for c in after.commands] == [("gpu",)]
    assert {t.name for r in after.commands[0].replacements for t in r.options} == {"g6e.xlarge"}
