"""What kubectl changes through the API emulator, and that the in-memory cluster sees it.

Real: kubectl (cordon, uncordon, taint, label, annotate nodes and pods, patch of every type, drain, delete) and
the emulator over HTTP. Faked: the cluster (`InMemoryCluster`), whose state after each command is
the observation, with kubectl's output and exit status.
"""

from __future__ import annotations

import pytest

from nodewright.inmemory.cluster import InMemoryCluster
from nodewright.model.taints import Taint
from tests.kubectl.conftest import Kubectl

pytestmark = pytest.mark.integration


def test_cordon_and_uncordon_reach_the_cluster(kubectl: Kubectl, cluster: InMemoryCluster) -> None:
    assert kubectl.ok("cordon", "node-1").out.strip() == "node/node-1 cordoned"
    assert cluster.get_node("node-1").unschedulable  # type: ignore[union-attr]
    assert kubectl.ok("cordon", "node-1").out.strip() == "node/node-1 already cordoned"
    assert kubectl.ok("uncordon", "node-1").out.strip() == "node/node-1 uncordoned"
    assert not cluster.get_node("node-1").unschedulable  # type: ignore[union-attr]


def test_taint_label_and_annotate_reach_the_cluster(kubectl: Kubectl, cluster: InMemoryCluster) -> None:
    assert kubectl.ok("taint", "node", "node-1", "dedicated=batch:NoSchedule").out.strip() == "node/node-1 tainted"
    assert Taint("dedicated", "NoSchedule", "batch") in cluster.get_node("node-1").taints  # type: ignore[union-attr]
    kubectl.ok("taint", "node", "node-2", "gpu:NoSchedule-")
    assert cluster.get_node("node-2").taints == ()  # type: ignore[union-attr]
    kubectl.ok("label", "node", "node-1", "team=a")
    kubectl.ok("annotate", "node", "node-1", "owner=platform")
    node = cluster.get_node("node-1")
    assert node is not None
    assert (node.labels["team"], node.annotations["owner"]) == ("a", "platform")
    assert kubectl.ok("get", "nodes", "-l", "team=a", "-o", "name").out.split() == ["node/node-1"]
    kubectl.ok("label", "node", "node-1", "team-")
    assert "team" not in cluster.get_node("node-1").labels  # type: ignore[union-attr]


def test_annotate_a_pod_sets_and_removes_its_deletion_cost(kubectl: Kubectl, cluster: InMemoryCluster) -> None:
    """`kubectl annotate pod` (a merge patch of the pod, the request the consolidator's deletion-cost
    steering sends through the adapter) reaches the cluster; `key-` removes the annotation.
    """
    done = kubectl.ok("annotate", "pod", "solo-1", "controller.kubernetes.io/pod-deletion-cost=-5")
    assert done.out.strip() == "pod/solo-1 annotated"
    stored = cluster.get_pod("default/solo-1")
    assert stored is not None
    assert stored.annotations["controller.kubernetes.io/pod-deletion-cost"] == "-5"
    shown = kubectl.ok("get", "pod", "solo-1", "-o", "jsonpath={.metadata.annotations}").out
    assert '"controller.kubernetes.io/pod-deletion-cost":"-5"' in shown
    kubectl.ok("annotate", "pod", "solo-1", "controller.kubernetes.io/pod-deletion-cost-")
    assert "controller.kubernetes.io/pod-deletion-cost" not in cluster.get_pod("default/solo-1").annotations  # type: ignore[union-attr]
    missing = kubectl("annotate", "pod", "nope", "a=b")
    assert (missing.code, 'pods "nope" not found' in missing.err) == (1, True)


def test_every_patch_type_applies(kubectl: Kubectl, cluster: InMemoryCluster) -> None:
    kubectl.ok("patch", "node", "node-1", "-p", '{"metadata":{"labels":{"by":"strategic"}}}')
    kubectl.ok("patch", "node", "node-1", "--type=merge", "-p", '{"metadata":{"labels":{"by":"merge"}}}')
    assert cluster.get_node("node-1").labels["by"] == "merge"  # type: ignore[union-attr]
    kubectl.ok(
        "patch", "node", "node-1", "--type=json", "-p", '[{"op":"add","path":"/spec/unschedulable","value":true}]'
    )
    assert cluster.get_node("node-1").unschedulable  # type: ignore[union-attr]
    failed = kubectl(
        "patch", "node", "node-1", "--type=json", "-p", '[{"op":"test","path":"/spec/unschedulable","value":false}]'
    )
    assert failed.code == 1
    assert "test failed" in failed.err


def test_drain_cordons_evicts_within_pdbs_and_retries_a_held_pod(kubectl: Kubectl, cluster: InMemoryCluster) -> None:
    drained = kubectl.ok("drain", "node-2", "--ignore-daemonsets", "--timeout=20s")
    assert "node/node-2 cordoned" in drained.out
    assert "node/node-2 drained" in drained.out
    assert cluster.pods_on("node-2") == []
    assert cluster.get_node("node-2").unschedulable  # type: ignore[union-attr]

    # node-1: web-1/web-2 under a PDB allowing one disruption, api-1 under two PDBs.
    held = kubectl("drain", "node-1", "--ignore-daemonsets", "--timeout=4s")
    assert held.code == 1
    assert "This pod has more than one PodDisruptionBudget" in held.err
    assert "global timeout reached: 4s" in held.err
    left = sorted(p.name for p in cluster.pods_on("node-1"))
    assert len(left) == 2
    assert "api-1" in left
    assert cluster.get_node("node-1").unschedulable  # type: ignore[union-attr]


def test_delete_pod_and_node(kubectl: Kubectl, cluster: InMemoryCluster) -> None:
    assert kubectl.ok("delete", "pod", "pending-1").out.strip() == 'pod "pending-1" deleted from default namespace'
    assert cluster.get_pod("default/pending-1") is None
    kubectl.ok("delete", "pod", "solo-1", "--grace-period=0", "--force")
    assert cluster.get_pod("default/solo-1") is None
    missing = kubectl("delete", "pod", "nope")
    assert (missing.code, 'pods "nope" not found' in missing.err) == (1, True)
    kubectl.ok("delete", "node", "node-2")
    assert cluster.get_node("node-2") is None


def test_writes_the_emulator_does_not_support_are_refused(kubectl: Kubectl) -> None:
    # Pods belong to the simulation: replacing one is refused (nodes and custom objects can be
    # replaced: tests/kubectl/test_kubectl_karpenter_kinds.py).
    pod = '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"solo-1","namespace":"default"},"spec":{"containers":[]}}'
    replaced = kubectl("replace", "-f", "-", stdin=pod)
    assert replaced.code == 1
    assert "MethodNotAllowed" in replaced.err or "not supported" in replaced.err
    created = kubectl("run", "web-3", "--image=nginx")
    assert created.code == 1
    assert "not supported" in created.err


def test_the_migration_guides_drain_loop(kubectl: Kubectl, cluster: InMemoryCluster) -> None:
    """docs/migrate-from-karpenter.md: pick Karpenter's nodes Nodewright does not own, drain, delete."""
    kubectl.ok("label", "node", "node-2", "karpenter.sh/nodepool=default")
    kubectl.ok("label", "node", "node-1", "karpenter.sh/nodepool=default", "nodewright.io/nodepool=default")
    picked = kubectl.ok("get", "nodes", "-l", "karpenter.sh/nodepool,!nodewright.io/nodepool", "-o", "name")
    assert picked.out.split() == ["node/node-2"]
    drained = kubectl.ok("drain", "node/node-2", "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=30s")
    assert "node/node-2 drained" in drained.out
    assert kubectl.ok("delete", "node/node-2").out.strip() == 'node "node-2" deleted'
    assert cluster.get_node("node-2") is None
