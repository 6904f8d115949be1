"""`nodewright explain` and `status` with a kubeconfig and no AWS at all.

What is real: the CLI entry point, the Kubernetes adapter over HTTP against the project's API
emulator (the in-memory cluster with a pending pod, a node and an Event), and an environment with
no AWS region, credentials or files. Observed: the JSON answer (what the cluster shows) and its
`sources`, which say what the AWS parts would need.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nodewright.cli import app
from nodewright.cli import commands as _commands  # noqa: F401 - registers the commands
from nodewright.inmemory.apiserver import ApiServer
from nodewright.inmemory.claimobjects import InMemoryClaimObjects
from nodewright.inmemory.clock import VirtualClock
from nodewright.inmemory.cluster import InMemoryCluster
from nodewright.model import labels as wk
from nodewright.model.event import pod_failed_to_schedule
from tests.builders import node, pod
from tests.cli.test_failures import no_aws  # noqa: F401 - the fixture
from tests.cli.test_plan_cluster import write_kubeconfig


def test_explain_and_status_answer_from_the_cluster_and_say_what_aws_would_add(
    no_aws: pytest.MonkeyPatch,  # noqa: F811 - the fixture
    tmp_path: Path,
) -> None:
    now = time.time()
    cluster = InMemoryCluster(VirtualClock(now))
    cluster.add_node(node("ip-10-0-1-1", cpu="2", memory="8Gi"))
    cluster.add_pods([pod("web-0", cpu="64", memory="1Gi")])
    cluster.record(pod_failed_to_schedule("default/web-0", "no NodePool fits 64 cpu"), now - 5)
    server = ApiServer(cluster)
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", server.start())
    try:
        explained = CliRunner().invoke(
            app, ["explain", "pod", "default/web-0", "--kubeconfig", str(kubeconfig), "-o", "json"]
        )
        state = CliRunner().invoke(app, ["status", "--kubeconfig", str(kubeconfig), "-o", "json"])
    finally:
        server.stop()

    assert explained.exit_code == 0, explained.output
    answer = json.loads(explained.stdout)
    assert answer["sources"]["cluster"].startswith("kubeconfig:")
    assert answer["sources"]["state_table"].startswith("not read (a kubeconfig only)")
    assert "dynamodb:Query" in answer["sources"]["state_table"]
    assert "logs:StartQuery" in answer["sources"]["logs"]
    assert "no NodePool fits 64 cpu" in json.dumps(answer)  # the Event the cluster holds
    assert state.exit_code == 0, state.output
    assert json.loads(state.stdout)["sources"]["state_table"].startswith("not read (a kubeconfig only)")


def test_explain_node_and_status_read_the_nodeclaim_objects_without_aws(
    no_aws: pytest.MonkeyPatch,  # noqa: F811 - the fixture
    tmp_path: Path,
) -> None:
    now = time.time()
    cluster = InMemoryCluster(VirtualClock(now))
    cluster.add_node(node("ip-10-0-1-1", cpu="2", memory="8Gi", labels={wk.NW_NODECLAIM: "default-x7k2p"}))
    cluster.add_node(node("ip-10-0-1-2", cpu="2", memory="8Gi"))
    server = ApiServer(cluster)
    server.claims = InMemoryClaimObjects(clock=cluster.clock)
    server.claims.objects["default-x7k2p"] = {
        "apiVersion": "nodewright.io/v1",
        "kind": "NodeClaim",
        "metadata": {
            "name": "default-x7k2p",
            "labels": {
                "karpenter.sh/nodepool": "default",
                "node.kubernetes.io/instance-type": "m7i.large",
                "karpenter.sh/capacity-type": "spot",
                "topology.kubernetes.io/zone": "us-east-1a",
            },
        },
        "status": {
            "nodeName": "ip-10-0-1-1",
            "providerID": "aws:///us-east-1a/i-0aaa",
            "conditions": [{"type": "Ready", "status": "True", "reason": "Ready"}],
        },
    }
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", server.start())
    try:
        ours = CliRunner().invoke(
            app, ["explain", "node", "ip-10-0-1-1", "--kubeconfig", str(kubeconfig), "-o", "json"]
        )
        other = CliRunner().invoke(
            app, ["explain", "node", "ip-10-0-1-2", "--kubeconfig", str(kubeconfig), "-o", "json"]
        )
        state = CliRunner().invoke(app, ["status", "--kubeconfig", str(kubeconfig), "-o", "json"])
    finally:
        server.stop()

    assert ours.exit_code == 0, ours.output
    answer = json.loads(ours.stdout)
    assert answer["nodeclaim_object"]["name"] == "default-x7k2p"
    assert answer["nodeclaim_object"]["instance_type"] == "m7i.large"
    assert answer["nodeclaim_object"]["conditions"] == [{"type": "Ready", "status": "True", "reason": "Ready"}]
    assert answer["next"].startswith("launched by Nodewright (its NodeClaim object)")
    assert answer["sources"]["nodeclaims"] == "1 NodeClaim objects (nodeclaims.nodewright.io)"
    assert json.loads(other.stdout)["next"].startswith("nothing: Nodewright did not launch this node")
    assert json.loads(state.stdout)["nodeclaim_objects"] == {"total": 1, "ready": 1}
