"""A claim write whose answer was lost: the SDK's retry meets the record its first attempt made.

Faked: DynamoDB, by moto in-process; the lost answer, by a botocore `before-send` hook that lets
moto carry out the first PutItem and then fails it as a read timeout, as a dropped connection
would. Real: botocore's retry (standard mode), the store. Observed: what `create_claim` answers
and what the table holds.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ReadTimeoutError
from moto import mock_aws
from moto.core.models import botocore_stubber

from nodewright.adapters.aws.state_store import DynamoStateStore, create_table
from nodewright.model.nodeclaim import NodeClaim

TABLE = "nodewright-state"


class LoseFirstAnswer:
    """Carry out the first PutItem, then fail it with a read timeout; later ones pass."""

    def __init__(self) -> None:
        self.lost = 0

    def __call__(self, request: Any, event_name: str = "", **_: Any) -> None:
        if self.lost == 0:
            self.lost += 1
            botocore_stubber(event_name=event_name, request=request)
            raise ReadTimeoutError(endpoint_url=request.url)


@pytest.fixture
def client() -> Iterator[Any]:
    with mock_aws():
        dynamodb = boto3.client(
            "dynamodb", region_name="us-east-1", config=Config(retries={"mode": "standard", "max_attempts": 5})
        )
        create_table(dynamodb, TABLE)
        yield dynamodb


def claim(name: str = "default-abc", **changes: Any) -> NodeClaim:
    return replace(NodeClaim(name=name, nodepool="default", created_at=1_767_571_200.0), **changes)


def test_a_claim_write_retried_after_its_answer_was_lost_counts_as_created(client: Any, monkeypatch: Any) -> None:
    monkeypatch.setattr("time.sleep", lambda seconds: None)  # the SDK's backoff before its retry
    lose = LoseFirstAnswer()
    client.meta.events.register_first("before-send.dynamodb.PutItem", lose)
    store = DynamoStateStore(client, TABLE)

    assert store.create_claim(claim())

    assert lose.lost == 1
    assert [c.name for c in store.claims()] == ["default-abc"]


def test_another_claim_of_the_same_name_is_still_refused(client: Any) -> None:
    store = DynamoStateStore(client, TABLE)
    assert store.create_claim(claim())

    assert not store.create_claim(claim(nodepool="other"))

    assert [c.nodepool for c in store.claims()] == ["default"]
