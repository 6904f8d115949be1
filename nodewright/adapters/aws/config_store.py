"""The DynamoDB config table: NodePool and EC2NodeClass documents, versioned, written all-or-nothing.

Item layout, one item per document:

    pk       S  "Kind#name"        (hash key; e.g. "NodePool#default")
    kind     S  "NodePool" | "EC2NodeClass"
    name     S
    version  N  1 on create, +1 on every change
    manifest S  the document's manifest as JSON (`Document.to_json`)

Concurrency contract: every write is conditional. `apply` writes each document on the condition
that its stored version is still the one the writer saw (or, for a new document, that none
exists); if another writer got there first the whole transaction is cancelled and
`ConflictError` names the documents. Nothing is ever overwritten silently.

All-or-nothing: `apply` is one TransactWriteItems call, so at most 100 documents per call
(DynamoDB's transaction limit); more raises `TooManyDocuments` before anything is written.

The boto3 client is injectable (`client=`), as in Powertools' DynamoDB persistence layer; tests
pass a moto-backed client.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from nodewright.adapters.aws.session import client as make_client
from nodewright.config.documents import KINDS, Document, parse_manifest
from nodewright.config.problems import ConfigError

MAX_TRANSACTION_ITEMS = 100


class ConfigStoreError(Exception):
    """A config table operation that could not be done; the message says why."""


class ConflictError(ConfigStoreError):
    """Another writer changed (or created, or deleted) a document since it was read."""

    def __init__(self, keys: Sequence[str], detail: str) -> None:
        self.keys = tuple(keys)
        super().__init__(detail)


class DocumentNotFound(ConfigStoreError):
    """The document does not exist in the table."""


class TooManyDocuments(ConfigStoreError):
    """More documents than one DynamoDB transaction can write atomically."""


@dataclass(frozen=True, slots=True)
class StoredDocument:
    """A document as stored, with the version a later conditional write must name."""

    document: Document
    version: int

    @property
    def key(self) -> str:
        """`Kind/name`."""
        return self.document.key


@dataclass(frozen=True, slots=True)
class Applied:
    """What `apply` did to one document: "created", "configured" or "unchanged", and its version now."""

    key: str
    action: str
    version: int


def pk(kind: str, name: str) -> str:
    """The table's hash key for a document."""
    return f"{kind}#{name}"


def split_key(key: str) -> tuple[str, str]:
    """`Kind/name` -> (kind, name); raise ConfigStoreError when the kind is unknown."""
    kind, sep, name = key.partition("/")
    if not sep or kind not in KINDS or not name:
        raise ConfigStoreError(f"{key!r} is not Kind/name with Kind one of {', '.join(KINDS)}")
    return kind, name


def create_table(client: Any, name: str) -> None:
    """Create an on-demand config table (hash key `pk`) and wait until it is active.

    For tests and local use; in AWS the CDK stack owns the table.
    """
    client.create_table(
        TableName=name,
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    client.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 30})


class ConfigStore:
    """NodePools and EC2NodeClasses in a DynamoDB table, with optimistic concurrency."""

    def __init__(self, table_name: str, *, client: Any | None = None) -> None:
        self.table_name = table_name
        self._client = client if client is not None else make_client("dynamodb")

    def _source(self, key: str) -> str:
        return f"dynamodb:{self.table_name}/{key}"

    def _from_item(self, item: Mapping[str, Any]) -> StoredDocument:
        key = item["pk"]["S"]
        loaded = parse_manifest(json.loads(item["manifest"]["S"]), source=self._source(key))
        (document,) = loaded.require()
        return StoredDocument(document, int(item["version"]["N"]))

    def get(self, kind: str, name: str) -> StoredDocument | None:
        """The stored document, or None. Raises ConfigError if what is stored no longer validates."""
        response = self._client.get_item(
            TableName=self.table_name, Key={"pk": {"S": pk(kind, name)}}, ConsistentRead=True
        )
        item = response.get("Item")
        return None if item is None else self._from_item(item)

    def list(self, kind: str | None = None) -> builtins.list[StoredDocument]:
        """Every stored document (of one kind, if given), sorted by kind then name.

        A Scan: the config table holds tens of documents, not millions.
        """
        kwargs: dict[str, Any] = {"TableName": self.table_name, "ConsistentRead": True}
        if kind is not None:
            kwargs["FilterExpression"] = "#kind = :kind"
            kwargs["ExpressionAttributeNames"] = {"#kind": "kind"}
            kwargs["ExpressionAttributeValues"] = {":kind": {"S": kind}}
        found: list[StoredDocument] = []
        for page in self._client.get_paginator("scan").paginate(**kwargs):
            found.extend(self._from_item(item) for item in page.get("Items", ()))
        return sorted(found, key=lambda s: (s.document.kind, s.document.name))

    def _current_versions(self, keys: Sequence[str]) -> dict[str, tuple[int, str]]:
        """pk -> (version, manifest JSON) for those of `keys` that exist (consistent reads)."""
        found: dict[str, tuple[int, str]] = {}
        request: dict[str, Any] = {self.table_name: {"Keys": [{"pk": {"S": k}} for k in keys], "ConsistentRead": True}}
        while request:
            response = self._client.batch_get_item(RequestItems=request)
            for item in response.get("Responses", {}).get(self.table_name, ()):
                found[item["pk"]["S"]] = (int(item["version"]["N"]), item["manifest"]["S"])
            request = response.get("UnprocessedKeys") or {}
        return found

    def apply(
        self,
        documents: Sequence[Document],
        *,
        expected_versions: Mapping[str, int | None] | None = None,
    ) -> builtins.list[Applied]:
        """Store every document in one transaction, or none of them.

        Each write is conditioned on the version this call read just before (or, for a key in
        `expected_versions`, on the version given there; None meaning "must not exist yet").
        Unchanged documents are only condition-checked, so their version stays.
        Raises ConflictError naming the documents another writer changed, TooManyDocuments over
        100 documents, ConfigStoreError for duplicate keys.
        """
        if not documents:
            return []
        keys = [d.key for d in documents]
        if len(set(keys)) != len(keys):
            duplicates = sorted({k for k in keys if keys.count(k) > 1})
            raise ConfigStoreError(f"documents given more than once: {', '.join(duplicates)}")
        if len(documents) > MAX_TRANSACTION_ITEMS:
            raise TooManyDocuments(
                f"{len(documents)} documents cannot be applied atomically: a DynamoDB transaction holds at most "
                f"{MAX_TRANSACTION_ITEMS} items; apply them in smaller sets"
            )
        current = self._current_versions([pk(d.kind, d.name) for d in documents])
        expected_versions = expected_versions or {}
        actions: list[dict[str, Any]] = []
        applied: list[Applied] = []
        for document in documents:
            key = pk(document.kind, document.name)
            stored = current.get(key)
            if document.key in expected_versions:
                expected = expected_versions[document.key]
            else:
                expected = stored[0] if stored is not None else None
            manifest = document.to_json()
            if stored is not None and expected == stored[0] and stored[1] == manifest:
                actions.append({"ConditionCheck": self._condition(key, expected)})
                applied.append(Applied(document.key, "unchanged", stored[0]))
                continue
            version = 1 if expected is None else expected + 1
            put = {
                "TableName": self.table_name,
                "Item": {
                    "pk": {"S": key},
                    "kind": {"S": document.kind},
                    "name": {"S": document.name},
                    "version": {"N": str(version)},
                    "manifest": {"S": manifest},
                },
                **self._condition(key, expected),
            }
            put.pop("Key")
            actions.append({"Put": put})
            applied.append(Applied(document.key, "created" if expected is None else "configured", version))
        if all("ConditionCheck" in a for a in actions) and not expected_versions:
            return applied  # nothing to write, and nothing was promised about versions
        try:
            self._client.transact_write_items(TransactItems=actions)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "TransactionCanceledException":
                raise
            reasons = error.response.get("CancellationReasons") or []
            failed = [
                (
                    document,
                    expected_versions.get(document.key, current.get(pk(document.kind, document.name), (None,))[0]),
                )
                for document, reason in zip(documents, reasons, strict=False)
                if reason.get("Code") == "ConditionalCheckFailed"
            ]
            if not failed:
                raise
            raise ConflictError(
                [d.key for d, _ in failed],
                "; ".join(
                    f"{d.key} already exists (it was created by another writer)"
                    if version is None
                    else f"{d.key} was changed by another writer (expected version {version})"
                    for d, version in failed
                )
                + "; nothing was stored: read the documents again and re-apply",
            ) from None
        return applied

    def _condition(self, key: str, expected: int | None) -> dict[str, Any]:
        if expected is None:
            return {
                "TableName": self.table_name,
                "Key": {"pk": {"S": key}},
                "ConditionExpression": "attribute_not_exists(pk)",
            }
        return {
            "TableName": self.table_name,
            "Key": {"pk": {"S": key}},
            "ConditionExpression": "#version = :version",
            "ExpressionAttributeNames": {"#version": "version"},
            "ExpressionAttributeValues": {":version": {"N": str(expected)}},
        }

    def delete(self, kind: str, name: str, *, expected_version: int | None = None) -> None:
        """Delete a document (only at `expected_version`, if given).

        Raises DocumentNotFound when it does not exist, ConflictError when its version moved.
        """
        key = pk(kind, name)
        condition = self._condition(key, expected_version) if expected_version is not None else {}
        condition.pop("TableName", None)
        condition.pop("Key", None)
        expression = "attribute_exists(pk)"
        if condition:
            expression += " AND " + condition.pop("ConditionExpression")
        try:
            self._client.delete_item(
                TableName=self.table_name, Key={"pk": {"S": key}}, ConditionExpression=expression, **condition
            )
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise
            if self.get(kind, name) is None:
                raise DocumentNotFound(f"{kind}/{name} is not in table {self.table_name}") from None
            raise ConflictError(
                [f"{kind}/{name}"], f"{kind}/{name} was changed by another writer (expected version {expected_version})"
            ) from None


__all__ = [
    "MAX_TRANSACTION_ITEMS",
    "Applied",
    "ConfigError",
    "ConfigStore",
    "ConfigStoreError",
    "ConflictError",
    "DocumentNotFound",
    "StoredDocument",
    "TooManyDocuments",
    "create_table",
    "pk",
    "split_key",
]
