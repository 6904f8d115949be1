"""One clean line per failure, exit 2, for the commands that talk to AWS or Kubernetes.

What is real: the CLI entry point (the `nodewright` Typer app and its failure-reporting group),
boto3 with the environment each failure class needs (no region, no credentials), moto over HTTP
(a missing table, a missing stack), a closed port (an endpoint nobody answers), and a tiny HTTP
server answering as AWS and the Kubernetes API server answer a refusal (AccessDenied; 401 and
403 Status objects), reached through --endpoint-url and a kubeconfig. What is observed: stderr
(one line, no traceback) and the exit code.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import boto3
import pytest
from typer.testing import CliRunner

from nodewright.cli import app
from nodewright.cli import commands as _commands  # noqa: F401 - registers the commands
from nodewright.inmemory.apiserver import ApiServer
from nodewright.inmemory.clock import VirtualClock
from nodewright.inmemory.cluster import InMemoryCluster
from tests.cli.test_plan_cluster import write_kubeconfig
from tests.cli.test_uninstall import REGION, moto  # noqa: F401 - the moto server fixture

FORBIDDEN = 'nodes is forbidden: User "dev" cannot list resource "nodes" in API group "" at the cluster scope'
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "nodepools"


def run(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def one_line(result: Any) -> str:
    """The single stderr line of a failed command (no traceback, nothing else)."""
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.output
    return str(lines[0])


@pytest.fixture
def no_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """An environment with no AWS configuration at all (no files, no variables, no IMDS)."""
    for name in (
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_PROFILE",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_ENDPOINT_URL",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "NODEWRIGHT_CONFIG_TABLE",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return monkeypatch


class Refusing(BaseHTTPRequestHandler):
    """Answers every request with `self.server.answer` (status, JSON body)."""

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        status, body = self.server.answer  # type: ignore[attr-defined]
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = _answer

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def refusing() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Refusing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def test_no_region(no_aws: pytest.MonkeyPatch) -> None:
    result = run("nodepool", "list", "--table", "nodewright-config")

    assert result.exit_code == 2
    assert one_line(result) == "error: config table nodewright-config: no AWS region: pass --region or set AWS_REGION"


def test_no_credentials(no_aws: pytest.MonkeyPatch) -> None:
    result = run("nodepool", "get", "default", "--table", "t", "--region", REGION)

    assert result.exit_code == 2
    assert one_line(result).startswith("error: config table t: no AWS credentials: set AWS_PROFILE")


def test_access_denied(no_aws: pytest.MonkeyPatch, refusing: ThreadingHTTPServer) -> None:
    no_aws.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    no_aws.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    refusing.answer = (  # type: ignore[attr-defined]
        400,
        {
            "__type": "com.amazon.coral.service#AccessDeniedException",
            "message": "User: arn:aws:iam::123456789012:user/dev is not authorized to perform: dynamodb:Scan",
        },
    )
    url = f"http://127.0.0.1:{refusing.server_address[1]}"

    result = run("nodepool", "list", "--table", "t", "--region", REGION, "--endpoint-url", url)

    assert result.exit_code == 2
    line = one_line(result)
    assert line.startswith("error: config table t: access denied to Scan (User: arn:aws:iam::123456789012:user/dev")
    assert line.endswith("grant it to your identity, or use one that has it")


@pytest.mark.integration
def test_missing_table(moto: str) -> None:  # noqa: F811 - the fixture
    result = run("nodepool", "apply", "-f", str(EXAMPLES / "default.yaml"), "--table", "no-such-table")

    assert result.exit_code == 2
    assert one_line(result) == (
        "error: config table no-such-table: not found (Requested resource not found): "
        "check the name and the region (--region)"
    )


@pytest.mark.integration
def test_missing_stack(moto: str, tmp_path: Path) -> None:  # noqa: F811 - the fixture
    server = ApiServer(InMemoryCluster(VirtualClock(1_800_000_000.0)))
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", server.start())
    try:
        result = run("status", "--kubeconfig", str(kubeconfig), "--name", "gone", "-o", "json")
    finally:
        server.stop()

    assert result.exit_code == 2
    line = one_line(result)
    assert line.startswith("cannot read the state table (not found in the stack): not found (Stack")
    assert "Nodewright-gone does not exist" in line
    assert line.endswith("check the name and the region (--region)")


def test_unreachable_endpoint(no_aws: pytest.MonkeyPatch) -> None:
    no_aws.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    no_aws.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    no_aws.setenv("AWS_MAX_ATTEMPTS", "1")
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    url = f"http://127.0.0.1:{closed}"

    result = run("nodepool", "list", "--table", "t", "--region", REGION, "--endpoint-url", url)

    assert result.exit_code == 2
    assert one_line(result) == (
        f"error: config table t: cannot reach {url}/: "
        "check --endpoint-url (AWS_ENDPOINT_URL), the region and the network"
    )


@pytest.mark.parametrize(
    ("status", "says"),
    [
        (401, "the Kubernetes API server refused the credentials to list nodes (401 Unauthorized): refresh"),
        (403, 'forbidden to list nodes (403: nodes is forbidden: User "dev" cannot list resource "nodes"'),
    ],
    ids=["401", "403"],
)
def test_kubernetes_refusals(refusing: ThreadingHTTPServer, tmp_path: Path, status: int, says: str) -> None:
    refusing.answer = (  # type: ignore[attr-defined]
        status,
        {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "message": FORBIDDEN if status == 403 else "Unauthorized",
            "reason": "Forbidden" if status == 403 else "Unauthorized",
            "code": status,
        },
    )
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", f"http://127.0.0.1:{refusing.server_address[1]}")

    result = run("plan", "--kubeconfig", str(kubeconfig))

    assert result.exit_code == 2
    line = one_line(result)
    assert line.startswith("cannot list nodes, pods, daemonsets and PDBs: ")
    assert says in line


def test_boto3_is_not_needed_to_describe_an_unrelated_error() -> None:
    from nodewright.cli.failures import describe

    assert describe(ValueError("a bug")) is None
    assert describe(RuntimeError("wrapped")) is None
    assert boto3.__name__ == "boto3"
