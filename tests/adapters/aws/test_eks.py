"""EKS access: DescribeCluster into ClusterInfo, and the STS-presigned bearer token.

Faked: EKS by moto's in-process `mock_aws` (and, for an IPv6 cluster moto does not describe
fully, a client returning DescribeCluster's documented shape); STS needs no fake, since presigning
is local and uses a botocore client with static credentials. Observed: the ClusterInfo, and the
token decoded back into its URL, whose SigV4 signature the test recomputes independently to prove
it covers the `x-k8s-aws-id` header.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import urllib.parse
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from nodewright.adapters.aws.eks import (
    REFRESH_AFTER_SECONDS,
    TOKEN_PREFIX,
    ClusterNotReady,
    EksTokenSource,
    describe_cluster,
)
from nodewright.inmemory.clock import VirtualClock
from nodewright.model.cluster import ClusterInfo

ACCESS_KEY = "AKIAIOSFODNN7EXAMPLE"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
REGION = "eu-west-1"


class DescribedCluster:
    """An EKS client stand-in that answers DescribeCluster with a fixed `cluster` body."""

    def __init__(self, cluster: dict[str, Any]) -> None:
        self.cluster = cluster

    def describe_cluster(self, name: str) -> dict[str, Any]:
        return {"cluster": {"name": name, **self.cluster}}


@pytest.fixture
def eks() -> Iterator[Any]:
    with mock_aws():
        yield boto3.client("eks", region_name="us-east-1")


@pytest.fixture
def sts() -> Any:
    return boto3.client("sts", region_name=REGION, aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY)


def decode(token: str) -> str:
    assert token.startswith(TOKEN_PREFIX)
    body = token.removeprefix(TOKEN_PREFIX)
    return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode()


def signature_matches(url: str, headers: dict[str, str], secret: str) -> bool:
    """Recompute the SigV4 query signature of a presigned GET `url` sent with `headers`."""
    parsed = urllib.parse.urlsplit(url)
    params = dict(urllib.parse.parse_qsl(parsed.query, keep_blank_values=True))
    signature = params.pop("X-Amz-Signature")
    signed = params["X-Amz-SignedHeaders"].split(";")
    all_headers = {"host": parsed.netloc, **{k.lower(): v for k, v in headers.items()}}

    def quote(value: str) -> str:
        return urllib.parse.quote(value, safe="-_.~")

    canonical = "\n".join(
        [
            "GET",
            parsed.path or "/",
            "&".join(f"{quote(k)}={quote(v)}" for k, v in sorted(params.items())),
            "".join(f"{name}:{all_headers[name].strip()}\n" for name in signed),
            ";".join(signed),
            hashlib.sha256(b"").hexdigest(),
        ]
    )
    date, region, service, _ = params["X-Amz-Credential"].split("/")[1:]
    to_sign = "\n".join(
        [
            "AWS4-HMAC-SHA256",
            params["X-Amz-Date"],
            f"{date}/{region}/{service}/aws4_request",
            hashlib.sha256(canonical.encode()).hexdigest(),
        ]
    )
    key = f"AWS4{secret}".encode()
    for part in (date, region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return hmac.compare_digest(hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest(), signature)


def count_signings(sts: Any) -> list[str]:
    """Record every GetCallerIdentity the client signs (each one is a freshly minted token)."""
    signed: list[str] = []
    sts.meta.events.register("before-sign.sts.GetCallerIdentity", lambda request, **_: signed.append(request.url))
    return signed


# ---------------------------------------------------------------------- DescribeCluster


def test_describe_cluster_gives_endpoint_ca_version_and_service_cidr(eks: Any) -> None:
    eks.create_cluster(
        name="prod",
        version="1.31",
        roleArn="arn:aws:iam::123456789012:role/eks",
        resourcesVpcConfig={"subnetIds": []},
        kubernetesNetworkConfig={"serviceIpv4Cidr": "172.20.0.0/16", "ipFamily": "ipv4"},
    )
    described = eks.describe_cluster(name="prod")["cluster"]

    info = describe_cluster(eks, "prod")

    assert info == ClusterInfo(
        name="prod",
        endpoint=described["endpoint"].rstrip("/"),
        certificate_authority=described["certificateAuthority"]["data"],
        version="1.31",
        service_cidr="172.20.0.0/16",
        ip_family="ipv4",
    )
    assert info.endpoint.startswith("https://")


def test_an_ipv6_cluster_reports_its_ipv6_service_cidr() -> None:
    client = DescribedCluster(
        {
            "endpoint": "https://ABC.gr7.eu-west-1.eks.amazonaws.com",
            "certificateAuthority": {"data": "LS0tLS1CRUdJTg=="},
            "version": "1.32",
            "status": "ACTIVE",
            "kubernetesNetworkConfig": {"ipFamily": "ipv6", "serviceIpv6Cidr": "fd30:1c53:5f8a::/108"},
        }
    )

    info = describe_cluster(client, "v6")

    assert (info.ip_family, info.service_cidr, info.version) == ("ipv6", "fd30:1c53:5f8a::/108", "1.32")


def test_a_cluster_still_being_created_is_not_ready() -> None:
    client = DescribedCluster({"status": "CREATING", "version": "1.32", "certificateAuthority": {}})

    with pytest.raises(ClusterNotReady, match="CREATING"):
        describe_cluster(client, "new")


# ---------------------------------------------------------------------- the token


def test_the_token_is_a_presigned_get_caller_identity_url_in_url_safe_base64_without_padding(sts: Any) -> None:
    token = EksTokenSource(sts, "prod", VirtualClock(1000.0)).token()

    assert token.startswith("k8s-aws-v1.")
    assert "=" not in token
    assert "+" not in token
    assert "/" not in token.removeprefix(TOKEN_PREFIX)
    url = urllib.parse.urlsplit(decode(token))
    params = dict(urllib.parse.parse_qsl(url.query))
    assert (url.scheme, url.netloc, url.path) == ("https", f"sts.{REGION}.amazonaws.com", "/")
    assert params["Action"] == "GetCallerIdentity"
    assert params["Version"] == "2011-06-15"
    assert params["X-Amz-Expires"] == "60"
    assert params["X-Amz-Algorithm"] == "AWS4-HMAC-SHA256"
    assert params["X-Amz-Credential"].startswith(f"{ACCESS_KEY}/")
    assert params["X-Amz-Credential"].endswith(f"/{REGION}/sts/aws4_request")
    assert params["X-Amz-SignedHeaders"] == "host;x-k8s-aws-id"
    assert "x-k8s-aws-id" not in params


def test_the_signature_covers_the_cluster_name_header(sts: Any) -> None:
    url = decode(EksTokenSource(sts, "prod", VirtualClock()).token())

    assert signature_matches(url, {"x-k8s-aws-id": "prod"}, SECRET_KEY)
    assert not signature_matches(url, {"x-k8s-aws-id": "another-cluster"}, SECRET_KEY)


def test_the_token_is_reused_until_it_is_fourteen_minutes_old(sts: Any) -> None:
    clock = VirtualClock(1000.0)
    signed = count_signings(sts)
    source = EksTokenSource(sts, "prod", clock)

    first = source()
    clock.advance(REFRESH_AFTER_SECONDS - 1)
    assert source() == first
    assert len(signed) == 1

    clock.advance(1)
    source()
    assert len(signed) == 2
    assert REFRESH_AFTER_SECONDS == 14 * 60


def test_invalidate_makes_the_next_call_mint_a_new_token(sts: Any) -> None:
    signed = count_signings(sts)
    source = EksTokenSource(sts, "prod", VirtualClock(1000.0))
    source()

    source.invalidate()
    source()
    source()

    assert len(signed) == 2


def test_two_token_sources_on_one_client_each_sign_for_their_own_cluster(sts: Any) -> None:
    prod = EksTokenSource(sts, "prod", VirtualClock())
    dev = EksTokenSource(sts, "dev", VirtualClock())

    assert signature_matches(decode(prod.token()), {"x-k8s-aws-id": "prod"}, SECRET_KEY)
    assert signature_matches(decode(dev.token()), {"x-k8s-aws-id": "dev"}, SECRET_KEY)
