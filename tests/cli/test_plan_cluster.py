"""`nodewright plan --kubeconfig/--context` against a live (emulated) cluster, read-only.

What is real: the CLI entry point (Typer), the kubeconfig loader, the Lambdas' Kubernetes adapter
(`KubeCluster`, `read_config`) over real HTTP, the project's API server emulator
(nodewright.inmemory.apiserver) serving a cluster the simulator built by running the shipped scale-up
scenario, `solve()` and the bundled catalog. What is observed: the JSON report (pending pods,
claims, re-pack figures), the requests the emulator served (reads only), and that the re-pack
figures equal `bench.headroom`'s measure on the same cluster at the same moment.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from nodewright.cli import app
from nodewright.cli import commands as _commands  # noqa: F401 - registers the commands
from nodewright.controllers.provisionoptions import pool_capacities
from nodewright.engine.headroom import measure
from nodewright.inmemory.apiserver import ApiServer
from nodewright.inmemory.cluster import InMemoryCluster
from nodewright.model import labels as wk
from nodewright.model.node import Node
from nodewright.model.resources import Resources
from nodewright.simulator.runner import run_scenario
from nodewright.simulator.scenario import load_scenario
from tests.builders import pod

REPO = Path(__file__).resolve().parents[2]
SCENARIO = REPO / "examples" / "scenarios" / "scale-up.yaml"
NODEPOOLS = REPO / "examples" / "nodepools" / "default.yaml"


def write_kubeconfig(path: Path, url: str) -> Path:
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "emulated", "cluster": {"server": url}}],
                "users": [{"name": "reader", "user": {"token": "read-only"}}],
                "contexts": [{"name": "emulated", "context": {"cluster": "emulated", "user": "reader"}}],
                "current-context": "emulated",
            }
        )
    )
    return path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The scale-up scenario run for 6 virtual minutes, then served over HTTP, with bench.headroom's
    measure of that cluster (the claim prices the simulator paid, the scenario's NodePools)."""
    base = load_scenario(SCENARIO)
    world = run_scenario(dataclasses.replace(base, duration=360.0), plots=False).world
    assert world is not None
    assert world.store is not None
    snapshot = world.cluster.snapshot()
    pools = pool_capacities(list(base.nodepools), base.nodeclasses, world.catalog)
    paid = {c.node_name: c.price for c in world.store.claims() if c.node_name}

    def claim_price(node: Node) -> float | None:
        return paid.get(node.name)

    expected = measure(snapshot, pools, claim_price, world.clock.now())
    server = ApiServer(world.cluster)
    url = server.start()
    try:
        yield {
            "server": server,
            "cluster": world.cluster,
            "kubeconfig": write_kubeconfig(tmp_path_factory.mktemp("kube") / "config", url),
            "expected": expected,
            "snapshot": snapshot,
        }
    finally:
        server.stop()


def _plan(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["plan", *args, "--output", "json"])
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def test_repack_report_matches_the_headroom_measure_of_the_same_cluster(served: dict[str, Any]) -> None:
    report = _plan("--kubeconfig", str(served["kubeconfig"]), "--context", "emulated", "-f", str(NODEPOOLS))

    expected = served["expected"]
    repack = report["repack"]
    assert repack["current_price_per_hour"] == pytest.approx(expected.current, abs=1e-6)
    assert repack["fresh_price_per_hour"] == pytest.approx(expected.fresh, abs=1e-6)
    assert repack["savings_per_hour"] == pytest.approx(expected.current - expected.fresh, abs=1e-6)
    assert repack["unpriced_nodes"] == []
    # By NodePool and capacity type, adding up to the totals.
    assert {(g["nodepool"], g["capacity_type"]) for g in repack["by_group"]} == set(expected.current_by_group) | set(
        expected.fresh_by_group
    )
    assert sum(g["current_price_per_hour"] for g in repack["by_group"]) == pytest.approx(expected.current, abs=1e-5)
    assert sum(g["nodes"] for g in repack["by_group"]) == len(served["snapshot"].nodes)
    # What it read, and where prices came from.
    assert report["cluster"]["nodes"] == len(served["snapshot"].nodes)
    assert report["cluster"]["nodepools_from"] == "files"  # the emulator serves no CRDs
    assert report["prices"]["source"] == "bundled"
    assert report["prices"]["on_demand"] == "estimates"


def test_pending_pods_get_claims_and_nothing_is_written(served: dict[str, Any]) -> None:
    server: ApiServer = served["server"]
    world_pending = [p.key for p in served["snapshot"].pending()]
    # Add pending pods: a deployment scaled up after the run (as a user would see them).
    with server.lock:
        template = next(p for p in served["snapshot"].pods if not p.daemon)
        for index in range(5):
            late_pod = dataclasses.replace(
                template, name=f"late-{index}", node_name="", uid=f"late-{index}", unschedulable=True
            )
            served["cluster"].memory.add_pod(late_pod)

    report = _plan("--kubeconfig", str(served["kubeconfig"]), "-f", str(NODEPOOLS))

    late = sorted(f"{template.namespace}/late-{index}" for index in range(5))
    assert set(late) <= set(report["pending"])
    assert set(world_pending) <= set(report["pending"])
    placed = {pod for claim in report["nodeclaims"] for pod in claim["pods"]} | {
        pod for pods in report["existing"].values() for pod in pods
    }
    assert set(late) <= placed
    # Every request the emulator has served (the other tests' too): reads only.
    verbs = {usage.verb for usage in server.usage()}
    assert "list" in verbs
    assert verbs <= {"list", "get", "watch"}, verbs


def test_an_unreachable_cluster_is_one_readable_line(tmp_path: Path) -> None:
    config = write_kubeconfig(tmp_path / "config", "http://127.0.0.1:9")
    result = CliRunner().invoke(app, ["plan", "--kubeconfig", str(config), "--output", "json"])
    assert result.exit_code == 2  # AWS or the cluster could not be reached (cli.failures)
    assert "cannot list nodes, pods, daemonsets and PDBs" in result.output
    assert "cannot reach the Kubernetes API server to list nodes" in result.output


def test_kubectl_output_files_still_plan_offline(tmp_path: Path) -> None:
    # The file path (no cluster) is unchanged: `kubectl get nodes,pods -o json` style input.
    pods = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"web-{i}", "namespace": "shop"},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]},
                "status": {"phase": "Pending"},
            }
            for i in range(3)
        ],
    }
    path = tmp_path / "pods.json"
    path.write_text(json.dumps(pods))

    report = _plan("-f", str(path), "-f", str(NODEPOOLS))

    assert sorted(p for claim in report["nodeclaims"] for p in claim["pods"]) == [f"shop/web-{i}" for i in range(3)]


def test_the_table_names_the_savings_and_where_prices_came_from(served: dict[str, Any]) -> None:
    result = CliRunner().invoke(app, ["plan", "--kubeconfig", str(served["kubeconfig"]), "-f", str(NODEPOOLS)])

    assert result.exit_code == 0, result.output
    expected = served["expected"]
    assert f"now ${expected.current:.4f}/h, fresh plan ${expected.fresh:.4f}/h" in result.stdout
    assert "prices: bundled (us-east-1): on-demand estimates" in result.stdout


def test_cluster_flag_connects_as_the_functions_do(
    served: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`--cluster`: DescribeCluster (moto over HTTP, its cluster pointed at the emulator) and a
    presigned STS token, then the same read; prices fall back to the estimates (moto has no Price
    List API) and the report says why."""
    import base64

    import boto3
    from moto.backends import get_backend

    from tests.moto_server import moto_server

    with moto_server() as endpoint:
        for name, value in {
            "AWS_ENDPOINT_URL": endpoint,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_CONFIG_FILE": str(tmp_path / "none"),
            "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
        }.items():
            monkeypatch.setenv(name, value)
        boto3.client("eks").create_cluster(
            name="shop", roleArn="arn:aws:iam::123456789012:role/eks", resourcesVpcConfig={"subnetIds": []}
        )
        stored = get_backend("eks")["123456789012"]["us-east-1"].clusters["shop"]
        stored.endpoint = served["server"].url
        pem = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
        stored.certificate_authority = {"data": base64.b64encode(pem).decode()}

        result = CliRunner().invoke(
            app, ["plan", "--cluster", "shop", "--region", "us-east-1", "-f", str(NODEPOOLS), "--output", "json"]
        )

    assert result.exit_code == 0, result.output
    # moto's server, in this process, prints a line of its own to stdout when asked for Pricing.
    report = json.loads(result.stdout[result.stdout.index("{\n") :])
    assert report["cluster"]["source"] == "eks:shop"
    assert report["repack"]["current_price_per_hour"] == pytest.approx(served["expected"].current, abs=1e-6)
    assert report["prices"]["source"] == "bundled"
    assert report["prices"]["live_prices_failed"]


def test_a_cluster_in_another_region_is_planned_in_its_own_zones(tmp_path: Path) -> None:
    cluster = InMemoryCluster()
    capacity = Resources.parse({"cpu": "2", "memory": "8Gi", "pods": "29"})
    cluster.add_node(
        Node(
            name="ip-10-1-0-1",
            labels={wk.HOSTNAME: "ip-10-1-0-1", wk.ZONE: "eu-west-1b", wk.INSTANCE_TYPE: "m5.large"},
            capacity=capacity,
            allocatable=capacity,
            ready=True,
        )
    )
    cluster.add_pods([pod("big-0", cpu="6", memory="1Gi")])
    server = ApiServer(cluster)
    config = write_kubeconfig(tmp_path / "config", server.start())
    try:
        report = _plan("--kubeconfig", str(config), "-f", str(NODEPOOLS))
    finally:
        server.stop()

    assert report["prices"]["region"] == "eu-west-1"
    assert report["prices"]["zones"] == ["eu-west-1b"]
    assert "assumed offered in the nodes' zones (eu-west-1b)" in report["prices"]["note"]
    assert [claim["zone"] for claim in report["nodeclaims"]] == ["eu-west-1b"]
