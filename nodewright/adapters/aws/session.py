"""Build boto3 clients: the one place a boto3 session is created outside tests.

Callers at the edge (CLI, Lambda handlers) pass what they read from their settings; anything
left out falls back to boto3's standard configuration (AWS_PROFILE, credentials chain,
AWS_DEFAULT_REGION, AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_<SERVICE>), so the same code talks to
AWS or to a moto server.
"""

from __future__ import annotations

from typing import Any

import boto3
from botocore.config import Config

_CONFIG = Config(retries={"mode": "standard", "max_attempts": 5}, user_agent_extra="nodewright")


def client(
    service: str,
    *,
    region: str | None = None,
    endpoint_url: str | None = None,
    profile: str | None = None,
) -> Any:
    """A boto3 client for `service` with standard retries.

    `region` defaults to boto3's own lookup (AWS_DEFAULT_REGION, the profile's region);
    `endpoint_url` to AWS_ENDPOINT_URL(_<SERVICE>) or the real AWS endpoint.
    """
    session = boto3.session.Session(region_name=region, profile_name=profile)
    return session.client(service, endpoint_url=endpoint_url, config=_CONFIG)
