"""EKS access from a Lambda: what DescribeCluster says about the cluster, and the API bearer token.

Role: the AWS half of talking to an EKS cluster's Kubernetes API. `describe_cluster` turns
DescribeCluster into a `ClusterInfo` (endpoint, CA, version, service CIDR); `EksTokenSource`
mints the bearer token EKS accepts from IAM principals, exactly as `aws eks get-token` and
aws-iam-authenticator do: a presigned STS GetCallerIdentity URL whose signature covers the header
`x-k8s-aws-id: <cluster name>`, encoded as `k8s-aws-v1.` + URL-safe base64 without padding.
The API server's authenticator replays that URL against STS to learn who is calling, and
accepts it for 15 minutes after it was signed; the token source refreshes it before that and
on demand after a 401. The Kubernetes side (the client that sends it) is
`nodewright.adapters.kube.client`; this module only needs botocore clients, passed in.
"""

from __future__ import annotations

import base64
import threading
from typing import Any

from nodewright.model.cluster import ClusterInfo
from nodewright.ports import Clock

TOKEN_PREFIX = "k8s-aws-v1."
CLUSTER_ID_HEADER = "x-k8s-aws-id"
# The presigned URL's X-Amz-Expires, as aws-iam-authenticator and `aws eks get-token` set it.
# EKS ignores it and accepts a token for 15 minutes from its signing time instead.
URL_EXPIRES_SECONDS = 60
TOKEN_LIFETIME_SECONDS = 15 * 60
# Refresh a minute early so a token never expires in flight or on a skewed server clock.
REFRESH_AFTER_SECONDS = 14 * 60


class ClusterNotReady(Exception):
    """DescribeCluster answered, but the cluster has no endpoint or CA yet (still CREATING)."""


def describe_cluster(eks_client: Any, name: str) -> ClusterInfo:
    """The cluster's endpoint, CA data (base64 PEM), Kubernetes version, service CIDR and IP family.

    `eks_client` is a boto3 EKS client. Errors from DescribeCluster (ResourceNotFoundException,
    AccessDenied...) propagate as botocore ClientErrors; a cluster without an endpoint or CA yet
    raises ClusterNotReady.
    """
    cluster = eks_client.describe_cluster(name=name)["cluster"]
    endpoint = str(cluster.get("endpoint") or "")
    ca_data = str((cluster.get("certificateAuthority") or {}).get("data") or "")
    if not endpoint or not ca_data:
        raise ClusterNotReady(f"EKS cluster {name} has no API endpoint or CA yet (status {cluster.get('status')})")
    network = cluster.get("kubernetesNetworkConfig") or {}
    ip_family = str(network.get("ipFamily") or "ipv4")
    cidr_key = "serviceIpv6Cidr" if ip_family == "ipv6" else "serviceIpv4Cidr"
    # EKS always reports the CIDR of an active cluster; the default is EKS's own default range.
    service_cidr = str(network.get(cidr_key) or ClusterInfo.__dataclass_fields__["service_cidr"].default)
    return ClusterInfo(
        name=name,
        endpoint=endpoint.rstrip("/"),
        certificate_authority=ca_data,
        version=str(cluster.get("version") or ""),
        service_cidr=service_cidr,
        ip_family=ip_family,
    )


class EksTokenSource:
    """Bearer tokens for the EKS cluster `cluster_name`, cached until they are 14 minutes old.

    Call the instance (`token()` or `source()`) for the current token: it is minted on first use,
    reused until `REFRESH_AFTER_SECONDS` have passed on `clock`, then minted again; `invalidate()`
    (after a 401) makes the next call mint a fresh one. Minting is local (SigV4 presigning with the
    STS client's credentials): no network call is made here, so an invalid identity surfaces as a
    401 from the API server, not as an error from this class. Thread-safe.

    `sts_client` is a boto3 STS client for the Lambda's region: the token names the STS endpoint
    the client is configured for, and EKS accepts regional STS endpoints (botocore's default).
    """

    def __init__(self, sts_client: Any, cluster_name: str, clock: Clock) -> None:
        self._sts = sts_client
        self._cluster_name = cluster_name
        self._clock = clock
        self._lock = threading.Lock()
        self._token = ""
        self._minted_at = 0.0
        events = sts_client.meta.events
        # GetCallerIdentity has no parameter for the header, so it travels from the call's Params
        # into the request context and onto the request just before signing (the same two hooks
        # `aws eks get-token` registers). unique_id keeps one registration per client.
        events.register(
            "provide-client-params.sts.GetCallerIdentity",
            _retrieve_cluster_id,
            unique_id="nodewright-eks-token-params",
        )
        events.register(
            "before-sign.sts.GetCallerIdentity",
            _inject_cluster_id_header,
            unique_id="nodewright-eks-token-header",
        )

    @property
    def cluster_name(self) -> str:
        """The cluster the tokens are for."""
        return self._cluster_name

    def token(self) -> str:
        """The current token, minted anew when none is cached or it is 14 minutes old."""
        with self._lock:
            now = self._clock.now()
            if not self._token or now - self._minted_at >= REFRESH_AFTER_SECONDS:
                self._token = self._mint()
                self._minted_at = now
            return self._token

    __call__ = token

    def invalidate(self) -> None:
        """Forget the cached token (the API server refused it); the next call mints a new one."""
        with self._lock:
            self._token = ""

    def _mint(self) -> str:
        url = self._sts.generate_presigned_url(
            "get_caller_identity",
            Params={CLUSTER_ID_HEADER: self._cluster_name},
            ExpiresIn=URL_EXPIRES_SECONDS,
            HttpMethod="GET",
        )
        return TOKEN_PREFIX + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")


def _retrieve_cluster_id(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
    if CLUSTER_ID_HEADER in params:
        context[CLUSTER_ID_HEADER] = params.pop(CLUSTER_ID_HEADER)


def _inject_cluster_id_header(request: Any, **_: Any) -> None:
    if CLUSTER_ID_HEADER in request.context:
        request.headers[CLUSTER_ID_HEADER] = request.context[CLUSTER_ID_HEADER]
