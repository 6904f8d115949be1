"""Building the ApiClient: bearer tokens per request, CA verification, kubeconfig.

Faked: the API server, by `ApiServer` over plain HTTP (kmock) for authentication and kubeconfig,
and by a tiny HTTPS server (`http.server` + `ssl`, a throwaway CA made with `cryptography`) for
certificate verification. Observed: the requests' Authorization headers and whether the TLS
handshake is accepted.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import ipaddress
import json
import os
import ssl
import stat
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from nodewright.adapters.kube.client import (
    InvalidCertificateAuthority,
    from_cluster_info,
    from_kubeconfig,
    write_ca_file,
)
from nodewright.adapters.kube.cluster import KubeApiError, KubeCluster
from nodewright.model.cluster import ClusterInfo
from tests.adapters.kube.emulator import NODES, ApiServer

NODE = {"metadata": {"name": "node-a"}, "spec": {}, "status": {}}


@dataclass(frozen=True)
class Authority:
    """A throwaway CA and a server certificate it signed for 127.0.0.1."""

    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes

    @property
    def ca_data(self) -> str:
        """The CA as DescribeCluster returns it: base64 of the PEM."""
        return base64.b64encode(self.ca_pem).decode()


def make_authority(name: str) -> Authority:
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return Authority(
        ca.public_bytes(serialization.Encoding.PEM),
        cert.public_bytes(serialization.Encoding.PEM),
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()),
    )


class _NodeHandler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = json.dumps(NODE).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def authority() -> Authority:
    return make_authority("cluster-ca")


@pytest.fixture
def https_endpoint(authority: Authority, tmp_path: Path) -> Iterator[str]:
    (tmp_path / "server.crt").write_bytes(authority.cert_pem)
    (tmp_path / "server.key").write_bytes(authority.key_pem)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "server.crt", tmp_path / "server.key")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NodeHandler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_the_server_certificate_is_verified_against_the_clusters_ca(
    authority: Authority, https_endpoint: str, tmp_path: Path
) -> None:
    info = ClusterInfo("test", https_endpoint, authority.ca_data, "1.31")
    cluster = KubeCluster.connect(from_cluster_info(info, lambda: "token", ca_directory=str(tmp_path)))

    node = cluster.get_node("node-a")

    assert node is not None
    assert node.name == "node-a"


def test_a_server_certificate_from_another_ca_is_refused(https_endpoint: str, tmp_path: Path) -> None:
    impostor = make_authority("someone-else")
    info = ClusterInfo("test", https_endpoint, impostor.ca_data, "1.31")
    api_client = from_cluster_info(info, lambda: "token", ca_directory=str(tmp_path))
    cluster = KubeCluster.connect(api_client)

    with pytest.raises(KubeApiError, match=r"read node node-a: .*CERTIFICATE_VERIFY_FAILED"):
        cluster.get_node("node-a")
    assert api_client.configuration.verify_ssl is True


def test_the_ca_is_written_to_a_private_file(authority: Authority, tmp_path: Path) -> None:
    path = write_ca_file(authority.ca_data, directory=str(tmp_path))

    assert Path(path).read_bytes() == authority.ca_pem
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_one_file_per_ca_is_written_once_and_reused(authority: Authority, tmp_path: Path) -> None:
    first = write_ca_file(authority.ca_data, directory=str(tmp_path))
    written = os.stat(first).st_mtime_ns
    again = write_ca_file(authority.ca_data, directory=str(tmp_path))
    other = write_ca_file(make_authority("another-cluster").ca_data, directory=str(tmp_path))

    assert again == first
    assert os.stat(first).st_mtime_ns == written  # reused, not rewritten
    assert other != first
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([Path(first).name, Path(other).name])


@pytest.mark.parametrize("planted", ["other bytes", "a link", "readable by others"])
def test_a_file_at_the_cas_path_that_is_not_ours_as_written_is_replaced_atomically(
    authority: Authority, tmp_path: Path, planted: str
) -> None:
    path = Path(write_ca_file(authority.ca_data, directory=str(tmp_path)))
    path.unlink()
    if planted == "a link":
        (tmp_path / "elsewhere.crt").write_bytes(b"not the cluster's CA")
        path.symlink_to(tmp_path / "elsewhere.crt")
    else:
        path.write_bytes(b"-----BEGIN CERTIFICATE-----\nstale" if planted == "other bytes" else authority.ca_pem)
        path.chmod(0o644)

    assert write_ca_file(authority.ca_data, directory=str(tmp_path)) == str(path)
    assert not path.is_symlink()
    assert path.read_bytes() == authority.ca_pem
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".nodewright-ca-")]  # no partial file left


def test_clients_of_one_cluster_share_one_ca_file_in_the_temp_directory(
    authority: Authority, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    info = ClusterInfo("test", "https://example.gr7.eks.amazonaws.com", authority.ca_data, "1.31")

    clients = [from_cluster_info(info, lambda: "t") for _ in range(3)]

    assert {c.configuration.ssl_ca_cert for c in clients} == {str(next(tmp_path.iterdir()))}
    assert len(list(tmp_path.iterdir())) == 1


def test_a_plain_http_endpoint_writes_no_ca_file(
    authority: Authority, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The local API emulators (the simulator, the benchmarks, the adapter tests) speak plain HTTP:
    nothing to verify, so nothing is left in the temporary directory."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    client = from_cluster_info(ClusterInfo("sim", "http://127.0.0.1:1", authority.ca_data, "1.31"), lambda: "t")

    assert client.configuration.ssl_ca_cert is None
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(InvalidCertificateAuthority):
        from_cluster_info(ClusterInfo("sim", "http://127.0.0.1:1", "not base64!", "1.31"), lambda: "t")


@pytest.mark.parametrize(
    "ca_data",
    [
        pytest.param("not base64!", id="not-base64"),
        pytest.param(base64.b64encode(b"hello").decode(), id="not-pem"),
    ],
)
def test_ca_data_that_is_not_a_base64_pem_bundle_is_refused(ca_data: str, tmp_path: Path) -> None:
    with pytest.raises(InvalidCertificateAuthority):
        from_cluster_info(
            ClusterInfo("test", "https://example", ca_data, "1.31"), lambda: "t", ca_directory=str(tmp_path)
        )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.integration
@pytest.mark.asyncio
@pytest.mark.kmock(cls=ApiServer)
async def test_the_token_is_asked_for_on_every_request_so_a_refreshed_one_is_used(
    kmock: ApiServer, authority: Authority, tmp_path: Path
) -> None:
    kmock.add(NODES, NODE)
    issued = iter(["first", "second", "third"])
    info = ClusterInfo("test", str(kmock.url).rstrip("/"), authority.ca_data, "1.31")
    cluster = KubeCluster.connect(from_cluster_info(info, lambda: next(issued), ca_directory=str(tmp_path)))

    for _ in range(3):
        await asyncio.to_thread(cluster.get_node, "node-a")

    assert [r.headers["Authorization"] for r in kmock] == ["Bearer first", "Bearer second", "Bearer third"]


@pytest.mark.integration
@pytest.mark.asyncio
@pytest.mark.kmock(cls=ApiServer)
async def test_a_kubeconfig_context_gives_a_client_for_its_cluster_and_user(kmock: ApiServer, tmp_path: Path) -> None:
    kmock.add(NODES, NODE)
    kubeconfig = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "other",
        "clusters": [
            {"name": "local", "cluster": {"server": str(kmock.url).rstrip("/")}},
            {"name": "elsewhere", "cluster": {"server": "http://127.0.0.1:9"}},
        ],
        "users": [{"name": "admin", "user": {"token": "kubeconfig-token"}}, {"name": "nobody", "user": {}}],
        "contexts": [
            {"name": "dev", "context": {"cluster": "local", "user": "admin"}},
            {"name": "other", "context": {"cluster": "elsewhere", "user": "nobody"}},
        ],
    }
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump(kubeconfig))

    cluster = KubeCluster.connect(from_kubeconfig(str(path), context="dev"))
    node = await asyncio.to_thread(cluster.get_node, "node-a")

    assert node is not None
    assert [r.headers["Authorization"] for r in kmock] == ["Bearer kubeconfig-token"]
    assert yaml.safe_load(path.read_text()) == kubeconfig
