"""What a Kubernetes failure means to the person at the command line: its cause and the fix, in one line.

Role: the Kubernetes half of `nodewright.cli.failures` (the AWS half is
`nodewright.adapters.aws.failures`). `describe_kube(error)` gives "cause: fix", or None for
anything else (a bug, which keeps its traceback):

| failure                                            | says                                             |
| -------------------------------------------------- | ------------------------------------------------ |
| HTTP 401 (ApiException, KubeApiError, WatchError)  | the API server refused the credentials: refresh  |
|                                                    | the kubeconfig (aws eks update-kubeconfig)       |
| HTTP 403                                           | forbidden: <the server's message>: grant the RBAC|
| ConfigException (no kubeconfig, unknown context)   | the kubeconfig: <why>: pass --kubeconfig/--context|
| status 0, urllib3 MaxRetryError / connection error | cannot reach the API server: check the endpoint  |
"""

from __future__ import annotations

import json

from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException
from urllib3.exceptions import HTTPError as Urllib3Error

from nodewright.adapters.kube.transport import KubeApiError
from nodewright.adapters.kube.watch import WatchError

REFRESH = "refresh the kubeconfig (`aws eks update-kubeconfig --name CLUSTER`) or use --cluster"


def describe_kube(error: BaseException) -> str | None:
    """The failure's cause and fix in one line (see the module docstring), or None if not Kubernetes's."""
    if isinstance(error, ConfigException):
        return f"cannot use the kubeconfig ({error}): pass --kubeconfig PATH and --context NAME, or --cluster"
    if isinstance(error, ApiException):
        return _status(int(error.status or 0), _message(error.body) or str(error.reason or ""))
    if isinstance(error, KubeApiError):
        return _status(error.status, error.message, error.call)
    if isinstance(error, WatchError):
        return _status(error.status, str(error))
    if isinstance(error, Urllib3Error):
        return f"cannot reach the Kubernetes API server ({type(error).__name__}): check the endpoint and the network"
    return None


def _status(status: int, message: str, call: str = "") -> str | None:
    doing = f" to {call}" if call else ""
    if status == 401:
        return f"the Kubernetes API server refused the credentials{doing} (401 Unauthorized): {REFRESH}"
    if status == 403:
        return (
            f"forbidden{doing} (403: {message}): grant your identity that verb on that resource "
            "(read-only: get, list, watch)"
        )
    if status == 0:
        return f"cannot reach the Kubernetes API server{doing} ({message}): check the endpoint and the network"
    return None


def _message(body: object) -> str:
    if not isinstance(body, (str, bytes)):
        return ""
    try:
        status = json.loads(body)
    except ValueError:
        return ""
    return str(status.get("message") or "") if isinstance(status, dict) else ""
