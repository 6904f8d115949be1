"""Build the official client's `ApiClient` for a cluster: once per cold start, never at import.

Role: the one place Kubernetes API connections are configured. Two ways in:

* `from_cluster_info(info, token)`: for the Lambdas. `info` comes from DescribeCluster
  (`nodewright.adapters.aws.eks.describe_cluster`), `token` is a callable returning the current
  bearer token (an `EksTokenSource`). The cluster CA is written to a private file and the server
  certificate is always verified against it; there is no switch to skip verification. The file
  is named by the CA's digest, so a cluster has one file however many clients are built (a
  Lambda's /tmp outlives a cold start when the execution environment is reused): it is written
  once, atomically (a private temporary file renamed into place, so a reader never sees half a
  certificate), and reused while it holds the same bytes. A plain-HTTP endpoint (the local API
  emulators) has no TLS to verify: its CA is checked but not written.
  The token is asked for on every request (the client's `refresh_api_key_hook`), so a token the
  source refreshed, by age or after a 401, is used by the very next request without rebuilding
  the client or its connection pool.
* `from_kubeconfig(path, context)`: for the CLI and clusters outside EKS, through the client's own
  kubeconfig loader (exec plugins such as `aws eks get-token` included). The kubeconfig file is
  never written back.

Callers build the client in their handler's cold-start path and reuse it across invocations.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import os
import stat
import tempfile
from collections.abc import Callable
from typing import Any

from kubernetes.client import ApiClient, Configuration

from nodewright.model.cluster import ClusterInfo

# The key the generated client (36.x) looks the bearer token up under, and its header prefix.
_BEARER = "BearerToken"
_PEM_MARKER = b"-----BEGIN CERTIFICATE-----"


class InvalidCertificateAuthority(ValueError):
    """The cluster's CA data is not base64 of a PEM certificate bundle."""


def from_cluster_info(
    info: ClusterInfo,
    token: Callable[[], str],
    *,
    ca_directory: str | None = None,
) -> ApiClient:
    """An ApiClient for `info.endpoint` that verifies the server against `info`'s CA and sends
    `Authorization: Bearer <token()>` with every request.

    `ca_directory` is where the CA file goes (default: the system temporary directory, /tmp in
    Lambda). Raises InvalidCertificateAuthority when the CA data is not a base64 PEM bundle.
    """
    configuration = Configuration(host=info.endpoint.rstrip("/"))
    configuration.verify_ssl = True
    if info.endpoint.lower().startswith("http://"):
        decode_ca(info.certificate_authority)
    else:
        configuration.ssl_ca_cert = write_ca_file(info.certificate_authority, directory=ca_directory)
    configuration.api_key_prefix[_BEARER] = "Bearer"
    # A placeholder so the client knows bearer auth is configured; the hook replaces it with the
    # provider's current token on every request.
    configuration.api_key[_BEARER] = "pending"

    def refresh(conf: Any) -> None:
        conf.api_key[_BEARER] = token()

    configuration.refresh_api_key_hook = refresh
    return ApiClient(configuration)


def decode_ca(ca_data: str) -> bytes:
    """DescribeCluster's base64 CA data as PEM bytes. Raises InvalidCertificateAuthority for
    anything but a base64 PEM bundle.
    """
    try:
        pem = base64.b64decode(ca_data, validate=True)
    except (binascii.Error, ValueError) as error:
        raise InvalidCertificateAuthority(f"cluster CA data is not base64: {error}") from error
    if _PEM_MARKER not in pem:
        raise InvalidCertificateAuthority("cluster CA data is not a PEM certificate bundle")
    return pem


def write_ca_file(ca_data: str, *, directory: str | None = None) -> str:
    """The path of a file readable only by us holding the decoded CA (see the module docstring:
    one file per CA, written atomically, reused). Raises InvalidCertificateAuthority for anything
    but a base64 PEM bundle.
    """
    pem = decode_ca(ca_data)
    folder = directory if directory is not None else tempfile.gettempdir()
    path = os.path.join(folder, f"nodewright-ca-{hashlib.sha256(pem).hexdigest()[:32]}.crt")
    if _holds(path, pem):
        return path
    descriptor, partial = tempfile.mkstemp(prefix=".nodewright-ca-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(pem)
        os.replace(partial, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise
    return path


def _holds(path: str, pem: bytes) -> bool:
    """True when `path` is our own private regular file (not a link someone planted in a shared
    temporary directory) holding exactly `pem`.
    """
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    with os.fdopen(descriptor, "rb") as handle:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) & 0o077:
            return False
        return handle.read() == pem


def from_kubeconfig(path: str | None = None, context: str | None = None) -> ApiClient:
    """An ApiClient from a kubeconfig file (default: $KUBECONFIG or ~/.kube/config) and context
    (default: the current context). Errors from the loader (missing file, unknown context) propagate
    as `kubernetes.config.ConfigException`.
    """
    # The config loader pulls in YAML and auth-plugin code the Lambdas never need.
    from kubernetes import config

    client: ApiClient = config.new_client_from_config(config_file=path, context=context, persist_config=False)
    return client
