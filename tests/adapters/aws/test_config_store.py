"""The DynamoDB config table, against moto's in-process DynamoDB (`mock_aws`).

Faked: DynamoDB (moto implements conditional writes and TransactWriteItems with cancellation
reasons). Observed: what `get`/`list` read back and the raw items in the table.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from nodewright.adapters.aws.config_store import (
    ConfigStore,
    ConfigStoreError,
    ConflictError,
    DocumentNotFound,
    TooManyDocuments,
    create_table,
)
from nodewright.config.documents import Document, parse_manifest
from nodewright.config.files import read_paths
from nodewright.model.nodepool import NodePool

EXAMPLES = Path(__file__).parents[3] / "examples" / "nodepools"
TABLE = "nodewright-config"


@pytest.fixture
def client() -> Iterator[Any]:
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        create_table(dynamodb, TABLE)
        yield dynamodb


@pytest.fixture
def store(client: Any) -> ConfigStore:
    return ConfigStore(TABLE, client=client)


def examples() -> tuple[Document, ...]:
    return read_paths([EXAMPLES]).require()


def pool(name: str = "default", weight: int = 0) -> Document:
    body = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {
            **({"weight": weight} if weight else {}),  # Karpenter's weight is 1 to 100, or absent
            "template": {
                "spec": {
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                    "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}],
                }
            },
        },
    }
    (document,) = parse_manifest(copy.deepcopy(body), source="test").require()
    return document


def test_applied_documents_read_back_with_equal_models_and_version_one(store: ConfigStore) -> None:
    documents = examples()

    applied = store.apply(documents)

    assert {(a.key, a.action, a.version) for a in applied} == {(d.key, "created", 1) for d in documents}
    for document in documents:
        stored = store.get(document.kind, document.name)
        assert stored is not None
        assert stored.version == 1
        assert stored.document.model == document.model
        assert stored.document.to_manifest() == document.to_manifest()
        assert stored.document.source == f"dynamodb:{TABLE}/{document.kind}#{document.name}"


def test_items_are_keyed_by_kind_and_name_and_hold_the_manifest_as_json(store: ConfigStore, client: Any) -> None:
    store.apply([pool()])

    item = client.get_item(TableName=TABLE, Key={"pk": {"S": "NodePool#default"}})["Item"]

    assert item["kind"] == {"S": "NodePool"}
    assert item["name"] == {"S": "default"}
    assert item["version"] == {"N": "1"}
    assert item["manifest"]["S"].startswith('{"apiVersion":"karpenter.sh/v1"')


def test_list_returns_every_document_sorted_and_filters_by_kind(store: ConfigStore) -> None:
    store.apply(examples())

    assert [s.key for s in store.list()] == [
        "EC2NodeClass/default",
        "EC2NodeClass/gpu",
        "NodePool/arm64",
        "NodePool/default",
        "NodePool/gpu",
    ]
    assert [s.key for s in store.list("EC2NodeClass")] == ["EC2NodeClass/default", "EC2NodeClass/gpu"]


def test_reapplying_unchanged_documents_keeps_their_versions(store: ConfigStore) -> None:
    store.apply([pool()])

    applied = store.apply([pool()])

    assert [(a.action, a.version) for a in applied] == [("unchanged", 1)]


def test_a_changed_document_gets_the_next_version(store: ConfigStore) -> None:
    store.apply([pool(weight=1)])

    applied = store.apply([pool(weight=2)])

    assert [(a.action, a.version) for a in applied] == [("configured", 2)]
    stored = store.get("NodePool", "default")
    assert stored is not None
    assert isinstance(stored.document.model, NodePool)
    assert stored.document.model.weight == 2


def test_a_writer_holding_an_old_version_gets_a_conflict_naming_the_document(store: ConfigStore) -> None:
    store.apply([pool(weight=1)])
    seen = store.get("NodePool", "default")
    assert seen is not None
    store.apply([pool(weight=2)])  # another writer moves it to version 2

    with pytest.raises(ConflictError) as raised:
        store.apply([pool(weight=3)], expected_versions={seen.key: seen.version})

    assert raised.value.keys == ("NodePool/default",)
    assert "NodePool/default was changed by another writer (expected version 1)" in str(raised.value)
    stored = store.get("NodePool", "default")
    assert stored is not None
    assert isinstance(stored.document.model, NodePool)
    assert (stored.version, stored.document.model.weight) == (2, 2)


def test_creating_a_document_that_another_writer_created_is_a_conflict(store: ConfigStore) -> None:
    store.apply([pool(weight=1)])

    with pytest.raises(ConflictError, match="NodePool/default already exists"):
        store.apply([pool(weight=5)], expected_versions={"NodePool/default": None})


def test_a_conflict_on_one_document_stores_none_of_the_others(store: ConfigStore) -> None:
    store.apply([pool("taken")])

    with pytest.raises(ConflictError) as raised:
        store.apply(
            [pool("new-a"), pool("taken", weight=9), pool("new-b")],
            expected_versions={"NodePool/taken": None},
        )

    assert raised.value.keys == ("NodePool/taken",)
    assert [s.key for s in store.list()] == ["NodePool/taken"]


def test_more_documents_than_one_transaction_holds_are_refused_before_writing(store: ConfigStore) -> None:
    documents = [pool(f"pool-{i}") for i in range(101)]

    with pytest.raises(TooManyDocuments, match="at most 100 items"):
        store.apply(documents)

    assert store.list() == []


def test_a_hundred_documents_are_applied_in_one_transaction(store: ConfigStore) -> None:
    store.apply([pool(f"pool-{i}") for i in range(100)])

    assert len(store.list("NodePool")) == 100


def test_the_same_document_twice_in_one_apply_is_refused(store: ConfigStore) -> None:
    with pytest.raises(ConfigStoreError, match="given more than once: NodePool/default"):
        store.apply([pool(), pool(weight=3)])


def test_delete_removes_the_document_and_a_second_delete_is_not_found(store: ConfigStore) -> None:
    store.apply([pool()])

    store.delete("NodePool", "default")

    assert store.get("NodePool", "default") is None
    with pytest.raises(DocumentNotFound, match="NodePool/default is not in table nodewright-config"):
        store.delete("NodePool", "default")


def test_delete_at_an_old_version_is_a_conflict(store: ConfigStore) -> None:
    store.apply([pool(weight=1)])
    store.apply([pool(weight=2)])

    with pytest.raises(ConflictError):
        store.delete("NodePool", "default", expected_version=1)

    assert store.get("NodePool", "default") is not None
