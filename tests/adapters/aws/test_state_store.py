"""What the DynamoDB state store writes and how it reads, beyond the shared contract.

Faked: DynamoDB, by moto in-process (`mock_aws`), and by botocore's Stubber where moto cannot
show a behaviour (a Query answered in several pages). Observed: the raw items in the table and
the requests sent. The `StateStore` behaviour both stores share is in
tests/adapters/test_state_store_contract.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import ANY, Stubber
from moto import mock_aws

from nodewright.adapters.aws.state_store import TTL_ATTRIBUTE, DynamoStateStore, create_table
from nodewright.model.codec import claim_to_dict
from nodewright.model.errors import InvalidValue
from nodewright.model.nodeclaim import NodeClaim
from nodewright.ports import DrainRecord

TABLE = "nodewright-state"


@pytest.fixture
def client() -> Iterator[Any]:
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        create_table(dynamodb, TABLE)
        yield dynamodb


@pytest.fixture
def store(client: Any) -> DynamoStateStore:
    return DynamoStateStore(client, TABLE)


def item(client: Any, pk: str, sk: str) -> dict[str, Any] | None:
    found: dict[str, Any] | None = client.get_item(
        TableName=TABLE, Key={"pk": {"S": pk}, "sk": {"S": sk}}, ConsistentRead=True
    ).get("Item")
    return found


def test_the_helper_creates_the_table_the_stack_declares(client: Any) -> None:
    table = client.describe_table(TableName=TABLE)["Table"]
    assert {k["AttributeName"]: k["KeyType"] for k in table["KeySchema"]} == {"pk": "HASH", "sk": "RANGE"}
    ttl = client.describe_time_to_live(TableName=TABLE)["TimeToLiveDescription"]
    assert ttl == {"TimeToLiveStatus": "ENABLED", "AttributeName": "expires_at"}


def test_a_claim_is_one_item_holding_its_codec_json_and_no_expiry(client: Any, store: DynamoStateStore) -> None:
    claim = NodeClaim(name="default-1", nodepool="default", state="launched", created_at=1_700_000_000.5)
    store.create_claim(claim)
    stored = item(client, "NodeClaim", "default-1")
    assert stored is not None
    assert json.loads(stored["claim"]["S"]) == claim_to_dict(claim)
    assert stored["state"] == {"S": "launched"}
    assert stored["nodepool"] == {"S": "default"}
    assert TTL_ATTRIBUTE not in stored


def test_a_lease_item_carries_its_holder_expiry_and_a_whole_second_ttl(client: Any, store: DynamoStateStore) -> None:
    store.acquire_lease("provisioner", "invocation-1", now=1_700_000_000.25, ttl=60.0)
    stored = item(client, "Lease", "provisioner")
    assert stored is not None
    assert stored["holder"] == {"S": "invocation-1"}
    assert stored["expires"] == {"N": "1700000060.25"}
    # Rounded up: TTL must never delete a lease before it expires.
    assert stored[TTL_ATTRIBUTE] == {"N": "1700000061"}


def test_a_blocked_offering_item_is_keyed_by_its_offering_and_expires_with_it(
    client: Any, store: DynamoStateStore
) -> None:
    store.block_offerings([("spot", "m5.large", "us-east-1a")], until=1_700_000_180.0)
    stored = item(client, "Blocked", "spot/m5.large/us-east-1a")
    assert stored is not None
    assert stored["until"] == {"N": "1700000180.0"}
    assert stored[TTL_ATTRIBUTE] == {"N": "1700000180"}
    assert (stored["capacity_type"], stored["instance_type"], stored["zone"]) == (
        {"S": "spot"},
        {"S": "m5.large"},
        {"S": "us-east-1a"},
    )


def test_a_drain_record_is_keyed_by_its_chain_and_expires_by_ttl(client: Any, store: DynamoStateStore) -> None:
    record = DrainRecord("i-1", "node-a", "now", 0.0, 1_700_000_000.5, "spot-interruption", None, 1_700_003_600.5)
    store.save_drain(record)
    stored = item(client, "Drain", "i-1/spot-interruption/1700000000.5")
    assert stored is not None
    assert stored["instance_id"] == {"S": "i-1"}
    assert stored["node"] == {"S": "node-a"}
    assert "replace_by" not in stored
    # Rounded up: TTL must never delete a record a continuation still needs.
    assert stored[TTL_ATTRIBUTE] == {"N": "1700003601"}


def test_an_unconfirmed_drain_is_read_back_unconfirmed_and_an_older_item_as_confirmed(
    client: Any, store: DynamoStateStore
) -> None:
    record = DrainRecord("i-1", "node-a", "now", 0.0, 1_700_000_000.5, "spot-interruption", None, 1_700_003_600.5)
    store.save_drain(replace(record, verified=False))
    assert store.drain_record(record.chain, 1_700_000_001.0) == replace(record, verified=False)
    # An item written before the attribute existed: every drain then was a confirmed message's.
    client.update_item(
        TableName=store.table_name,
        Key={"pk": {"S": "Drain"}, "sk": {"S": record.chain}},
        UpdateExpression="REMOVE verified",
    )
    assert store.drain_record(record.chain, 1_700_000_001.0) == record


def test_a_block_past_its_time_that_ttl_has_not_deleted_yet_is_not_returned(
    client: Any, store: DynamoStateStore
) -> None:
    store.block_offerings([("spot", "m5.large", "us-east-1a")], until=100.0)
    assert item(client, "Blocked", "spot/m5.large/us-east-1a") is not None
    assert store.blocked_offerings(1_000.0) == frozenset()


@pytest.mark.parametrize(
    ("value", "written"),
    [
        pytest.param(1e20, "100000000000000000000", id="large-no-exponent"),
        pytest.param(1e-7, "0.0000001", id="small-no-exponent"),
        pytest.param(1_700_000_000.123456, "1700000000.123456", id="epoch-with-microseconds"),
    ],
)
def test_times_are_written_in_plain_decimals_and_read_back_exactly(
    client: Any, store: DynamoStateStore, value: float, written: str
) -> None:
    store.acquire_lease("l", "a", now=value, ttl=0.0)
    stored = item(client, "Lease", "l")
    assert stored is not None
    assert stored["expires"]["N"] == written
    assert not store.acquire_lease("l", "b", now=value - value / 4, ttl=1.0)
    assert store.acquire_lease("l", "b", now=value, ttl=1.0)


def test_a_claim_record_that_cannot_be_read_is_reported_not_skipped(client: Any, store: DynamoStateStore) -> None:
    client.put_item(
        TableName=TABLE,
        Item={"pk": {"S": "NodeClaim"}, "sk": {"S": "broken"}, "claim": {"S": json.dumps({"name": "broken"})}},
    )
    with pytest.raises(InvalidValue, match="nodepool"):
        store.claims()


def test_items_of_other_kinds_in_the_table_are_not_claims(client: Any, store: DynamoStateStore) -> None:
    store.acquire_lease("provisioner", "a", now=0.0, ttl=10.0)
    store.block_offerings([("spot", "m5.large", "us-east-1a")], until=10.0)
    client.put_item(TableName=TABLE, Item={"pk": {"S": "Command"}, "sk": {"S": "x"}})
    assert store.claims() == []


def test_errors_other_than_a_failed_condition_propagate() -> None:
    with mock_aws():
        store = DynamoStateStore(boto3.client("dynamodb", region_name="us-east-1"), "no-such-table")
        with pytest.raises(ClientError, match="ResourceNotFoundException"):
            store.create_claim(NodeClaim(name="a", nodepool="p"))
        with pytest.raises(ClientError, match="ResourceNotFoundException"):
            store.acquire_lease("provisioner", "a", now=0.0, ttl=1.0)
        with pytest.raises(ClientError, match="ResourceNotFoundException"):
            store.release_lease("provisioner", "a")


def _page(names: list[str], last: str | None) -> dict[str, Any]:
    page: dict[str, Any] = {
        "Items": [{"claim": {"S": json.dumps(claim_to_dict(NodeClaim(name=n, nodepool="p")))}} for n in names],
        "Count": len(names),
        "ScannedCount": len(names),
    }
    if last is not None:
        page["LastEvaluatedKey"] = {"pk": {"S": "NodeClaim"}, "sk": {"S": last}}
    return page


def test_claims_follow_every_page_of_the_query() -> None:
    client = boto3.client("dynamodb", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    expected = {"TableName": TABLE, "KeyConditionExpression": "pk = :pk", "ConsistentRead": True}
    with Stubber(client) as stubber:
        stubber.add_response("query", _page(["a", "b"], last="b"), {**expected, **_any_rest()})
        stubber.add_response(
            "query",
            _page(["c"], last=None),
            {**expected, **_any_rest(), "ExclusiveStartKey": {"pk": {"S": "NodeClaim"}, "sk": {"S": "b"}}},
        )
        assert [c.name for c in DynamoStateStore(client, TABLE).claims()] == ["a", "b", "c"]
        stubber.assert_no_pending_responses()


def _any_rest() -> dict[str, Any]:
    return {"ExpressionAttributeValues": ANY, "ExpressionAttributeNames": ANY, "ProjectionExpression": ANY}
