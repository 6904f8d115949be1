"""Upgrades: a newer function reads the state records an older one wrote, and refuses newer ones.

What is real: the DynamoDB state store (`DynamoStateStore`) over moto's DynamoDB (in process),
and records in the exact item layout of the previous format, captured from the store before
schema versions were recorded (tests/adapters/fixtures/state-table-v0.json: two claims, a
disruption command, a drain record). What is observed: what the store reads back, the `schema`
attribute of what it writes now, and the error on a record from a newer version.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from nodewright.adapters.aws.state_store import ITEM_SCHEMA, DynamoStateStore, create_table
from nodewright.model.codec import SCHEMA
from nodewright.model.errors import InvalidValue

FIXTURE = Path(__file__).parent / "fixtures" / "state-table-v0.json"
TABLE = "state"


@pytest.fixture
def table(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "x",
        "AWS_SECRET_ACCESS_KEY": "x",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        client = boto3.client("dynamodb")
        create_table(client, TABLE)
        for item in json.loads(FIXTURE.read_text())["items"]:
            client.put_item(TableName=TABLE, Item=item)
        yield client


def test_records_of_the_previous_format_are_read(table: Any) -> None:
    store = DynamoStateStore(table, TABLE)

    claims = store.claims()
    (command,) = store.commands()
    drain = store.drain_record("i-0aaaaaaaaaaaaaaa2", now=1767571260.0)

    assert [(c.name, c.state, c.nodepool) for c in claims] == [
        ("default-1", "pending", "default"),
        ("default-2", "initialized", "default"),
    ]
    assert (command.id, command.method, command.candidates, command.savings) == ("cmd-1", "delete", ("ip-1",), 0.192)
    assert drain is not None
    assert (drain.node, drain.drain, drain.deadline, drain.replace_by) == ("ip-2", "tiered", 1767571320.0, None)


def test_records_written_now_carry_their_schema_version_and_read_back(table: Any) -> None:
    store = DynamoStateStore(table, TABLE)
    (command,) = store.commands()
    drain = store.drain_record("i-0aaaaaaaaaaaaaaa2", now=1767571260.0)
    assert drain is not None

    store.save_command(command.advanced("launching", 1767571230.0))
    store.save_drain(drain)  # written in today's layout, under its chain key
    store.save_claim(store.claims()[0])

    items = {(i["pk"]["S"], i["sk"]["S"]): i for i in table.scan(TableName=TABLE)["Items"]}
    assert items[("Command", "cmd-1")]["schema"] == {"N": str(ITEM_SCHEMA)}
    assert items[("Drain", drain.chain)]["schema"] == {"N": str(ITEM_SCHEMA)}
    assert json.loads(items[("NodeClaim", "default-1")]["claim"]["S"])["schema"] == SCHEMA
    assert store.commands()[0].state == "launching"
    assert items[("Drain", drain.chain)]["instance_id"] == {"S": "i-0aaaaaaaaaaaaaaa2"}
    assert store.drain_record(drain.chain, now=1767571260.0) == drain


def test_a_record_from_a_newer_version_is_refused_naming_it(table: Any) -> None:
    store = DynamoStateStore(table, TABLE)
    item = next(i for i in json.loads(FIXTURE.read_text())["items"] if i["pk"]["S"] == "Command")
    table.put_item(TableName=TABLE, Item={**item, "schema": {"N": str(ITEM_SCHEMA + 1)}})

    newer_than = rf"Command 'cmd-1': schema version {ITEM_SCHEMA + 1} is newer than {ITEM_SCHEMA}"
    with pytest.raises(InvalidValue, match=newer_than):
        store.commands()

    claim = next(i for i in json.loads(FIXTURE.read_text())["items"] if i["sk"]["S"] == "default-1")
    newer = {**json.loads(claim["claim"]["S"]), "schema": SCHEMA + 1}
    table.put_item(TableName=TABLE, Item={**claim, "claim": {"S": json.dumps(newer)}})
    with pytest.raises(InvalidValue, match="node claim record version 2"):
        store.claims()
