"""The DynamoDB state table as a `nodewright.ports.StateStore`: node claims, leases, capacity errors.

Item layout (string keys `pk` and `sk`; the table's TTL attribute is `expires_at`, see
infra/constructs/state.py):

    pk          sk                                  other attributes
    NodeClaim   <claim name>                        claim S (JSON of nodewright.model.codec),
                                                    state S, nodepool S (for people reading the table)
    Lease       <lease name>                        holder S, expires N, expires_at N
    Blocked     <capacity type>/<type>/<zone>       capacity_type S, instance_type S, zone S,
                                                    until N, expires_at N
    Command     <command id>                        command S (JSON of CommandRecord), state S
    Drain       <chain: instance/origin/started>    instance_id S, node S, drain S, deadline N,
                                                    started N, origin S,
                                                    replace_by N (absent when None), expires N,
                                                    expires_at N, verified BOOL (absent: True)

Schema versions: Command and Drain items carry `schema` N (`ITEM_SCHEMA`); an item without it was
written before versions were recorded (version 0). Versions: 0 and 1, a Drain item is keyed by its
instance id and has no `instance_id` attribute (read from `sk`); 2, keyed by its chain
(instance/origin/started) with `instance_id`. A record of the older layout is found only by its
instance id, so a drain chain in flight across that upgrade is not recognised by its next
continuation (the drain stops; the instance's next event starts a new one).
NodeClaim records carry theirs inside the claim JSON (nodewright.model.codec.SCHEMA). A reader
takes every version up to its own and refuses a newer one with InvalidValue naming the item:
acting on a record whose meaning it does not know (a half-finished command, a drain) is worse than
stopping. tests/adapters/test_state_schema.py replays records in the previous format.

Concurrency contract: every decision another writer could race is one conditional write, so
DynamoDB decides the winner atomically and nothing is read-then-written in Python:
  * `create_claim`: put if absent (`attribute_not_exists`); False when the claim exists.
  * `acquire_lease`: put if absent, expired (`expires <= now`) or held by the same holder;
    False otherwise. A renewal is the same put, so it also extends the lease.
  * `release_lease`: delete if the holder is still the caller; otherwise nothing happens.
  * `block_offerings`: put if absent or blocked until earlier, so a block is never shortened by
    a late writer with an older `until`.
`save_claim` and `delete_claim` are plain writes (the claim's owner is the only writer), and so
are `save_drain` and `delete_drain` (a drain chain's record, written by the interruption function
before each continuation it sends).

Expiry: DynamoDB deletes items past `expires_at` lazily (often hours later), so readers never
rely on it; `acquire_lease` compares `expires`, `blocked_offerings` filters on `until` and
`drain_record` on `expires`. The TTL only keeps the table from filling with stale leases, blocks
and drain records left by a chain that died. Claims have no TTL: they
live until the controller deletes them.

Reads are strongly consistent, because the provisioner reads right after it writes (a claim it
just created must be in `claims()`). Claims and blocks share one partition each: the state table
holds thousands of claims at most, not millions, and a Query of one partition is paginated.

Numbers are written in plain decimal notation (never exponent form) from the float's shortest
repr, so a time reads back exactly. Errors other than a failed condition (throttling after
botocore's retries, a missing table, permissions) propagate as botocore's ClientError.

The boto3 client is injectable, as in Powertools' DynamoDB persistence layer; tests pass a
moto-backed client.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from nodewright.model.codec import claim_from_dict, claim_to_dict
from nodewright.model.command import CommandRecord
from nodewright.model.errors import InvalidValue
from nodewright.model.instancetype import OfferingKey
from nodewright.model.nodeclaim import NodeClaim
from nodewright.ports import DrainRecord

if TYPE_CHECKING:
    from nodewright.ports import StateStore

CLAIM = "NodeClaim"
LEASE = "Lease"
BLOCKED = "Blocked"
COMMAND = "Command"
DRAIN = "Drain"
TTL_ATTRIBUTE = "expires_at"
# The item layout version written on Command and Drain items (see "Schema versions" above).
ITEM_SCHEMA = 2
SCHEMA_ATTRIBUTE = "schema"
_CONDITION_FAILED = "ConditionalCheckFailedException"
# Read through aliases: a plain word in a ProjectionExpression fails when DynamoDB reserves it.
_DRAIN_FIELDS = (
    "node",
    "drain",
    "deadline",
    "started",
    "origin",
    "replace_by",
    "expires",
    "verified",
    SCHEMA_ATTRIBUTE,
)


def create_table(client: Any, name: str) -> None:
    """Create an on-demand state table (`pk`/`sk`, TTL on `expires_at`) and wait until it is active.

    For tests and local use; in AWS the CDK stack owns the table (infra/constructs/state.py).
    """
    client.create_table(
        TableName=name,
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        BillingMode="PAY_PER_REQUEST",
    )
    client.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 30})
    client.update_time_to_live(
        TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": TTL_ATTRIBUTE}
    )


def offering_key(offering: OfferingKey) -> str:
    """The sort key of a capacity-error item: `capacity_type/instance_type/zone`."""
    return "/".join(offering)


def _number(value: float) -> str:
    # repr is the shortest string that reads back as the same float; format "f" keeps DynamoDB
    # from ever seeing exponent notation.
    return format(Decimal(repr(float(value))), "f")


def _ttl(value: float) -> str:
    # DynamoDB TTL wants whole epoch seconds; rounding up never deletes an item early.
    return str(math.ceil(value))


def _readable(item: dict[str, Any], what: str) -> dict[str, Any]:
    """`item` when its schema version is one this reader knows; InvalidValue naming it otherwise."""
    raw = item.get(SCHEMA_ATTRIBUTE, {}).get("N", "0")
    if not raw.isdigit() or int(raw) > ITEM_SCHEMA:
        raise InvalidValue(
            f"state table {what} {item.get('sk', {}).get('S', '?')!r}: schema version {raw} is newer than "
            f"{ITEM_SCHEMA}, the newest this Nodewright reads; upgrade the functions"
        )
    return item


def _condition_failed(error: ClientError) -> bool:
    return bool(error.response.get("Error", {}).get("Code") == _CONDITION_FAILED)


class DynamoStateStore:
    """A `nodewright.ports.StateStore` on the DynamoDB state table; see the module docstring."""

    def __init__(self, client: Any, table_name: str) -> None:
        self._client = client
        self.table_name = table_name

    # ------------------------------------------------------------------ claims

    def _claim_item(self, claim: NodeClaim) -> dict[str, Any]:
        return {
            "pk": {"S": CLAIM},
            "sk": {"S": claim.name},
            "claim": {"S": json.dumps(claim_to_dict(claim), separators=(",", ":"))},
            "state": {"S": claim.state},
            "nodepool": {"S": claim.nodepool},
        }

    def create_claim(self, claim: NodeClaim) -> bool:
        """Record a claim before its launch; False (and no change) when another claim of that name
        exists. Finding this very claim recorded counts as created: that is this write retried
        after its answer was lost (the SDK retries a timed-out PutItem, and the retry meets the
        condition the first attempt made false). Answering False there made the provisioner skip
        its own claim, which waited for housekeeping to abandon it while its pods waited.
        """
        item = self._claim_item(claim)
        try:
            self._client.put_item(
                TableName=self.table_name,
                Item=item,
                ConditionExpression="attribute_not_exists(pk)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as error:
            if _condition_failed(error):
                stored = error.response.get("Item") or {}
                return all(stored.get(key) == value for key, value in item.items())
            raise
        return True

    def save_claim(self, claim: NodeClaim) -> None:
        """Overwrite a claim's record (creating it if it is missing)."""
        self._client.put_item(TableName=self.table_name, Item=self._claim_item(claim))

    def claims(self) -> list[NodeClaim]:
        """Every recorded claim, sorted by name (the sort key's order).

        Raises nodewright.model.errors.InvalidValue when a record cannot be read.
        """
        return [
            claim_from_dict(json.loads(item["claim"]["S"]))
            for item in self._query(CLAIM, projection="#claim", names={"#claim": "claim"})
        ]

    def delete_claim(self, name: str) -> None:
        """Remove a claim's record; a missing one counts as removed (DeleteItem is idempotent)."""
        self._client.delete_item(TableName=self.table_name, Key={"pk": {"S": CLAIM}, "sk": {"S": name}})

    # ------------------------------------------------------------------ leases

    def acquire_lease(self, name: str, holder: str, now: float, ttl: float) -> bool:
        """Take or renew the lease `name` for `holder` until now + ttl.

        False while another holder's lease has not expired; a lease whose `expires` is at or
        before `now` is free. One conditional put, so of two racing callers only one wins.
        """
        expires = now + ttl
        try:
            self._client.put_item(
                TableName=self.table_name,
                Item={
                    "pk": {"S": LEASE},
                    "sk": {"S": name},
                    "holder": {"S": holder},
                    "expires": {"N": _number(expires)},
                    TTL_ATTRIBUTE: {"N": _ttl(expires)},
                },
                ConditionExpression="attribute_not_exists(pk) OR #expires <= :now OR #holder = :holder",
                ExpressionAttributeNames={"#expires": "expires", "#holder": "holder"},
                ExpressionAttributeValues={":now": {"N": _number(now)}, ":holder": {"S": holder}},
            )
        except ClientError as error:
            if _condition_failed(error):
                return False
            raise
        return True

    def release_lease(self, name: str, holder: str) -> None:
        """Give the lease up if `holder` still has it; otherwise (taken over, gone) do nothing."""
        try:
            self._client.delete_item(
                TableName=self.table_name,
                Key={"pk": {"S": LEASE}, "sk": {"S": name}},
                ConditionExpression="#holder = :holder",
                ExpressionAttributeNames={"#holder": "holder"},
                ExpressionAttributeValues={":holder": {"S": holder}},
            )
        except ClientError as error:
            if not _condition_failed(error):
                raise

    # ------------------------------------------------------------------ capacity-error cache

    def block_offerings(self, offerings: Iterable[OfferingKey], until: float) -> None:
        """Remember that these offerings failed, until `until`; a later block is never shortened.

        One conditional put per offering: a capacity error names a handful of offerings, and
        BatchWriteItem cannot carry conditions.
        """
        for offering in sorted(set(offerings)):
            capacity_type, instance_type, zone = offering
            try:
                self._client.put_item(
                    TableName=self.table_name,
                    Item={
                        "pk": {"S": BLOCKED},
                        "sk": {"S": offering_key(offering)},
                        "capacity_type": {"S": capacity_type},
                        "instance_type": {"S": instance_type},
                        "zone": {"S": zone},
                        "until": {"N": _number(until)},
                        TTL_ATTRIBUTE: {"N": _ttl(until)},
                    },
                    ConditionExpression="attribute_not_exists(pk) OR #until < :until",
                    ExpressionAttributeNames={"#until": "until"},
                    ExpressionAttributeValues={":until": {"N": _number(until)}},
                )
            except ClientError as error:
                if not _condition_failed(error):
                    raise

    def blocked_offerings(self, now: float) -> frozenset[OfferingKey]:
        """Offerings still blocked at `now` (until > now); items past it that TTL has not yet
        deleted are filtered out here.
        """
        items = self._query(
            BLOCKED,
            projection="capacity_type, instance_type, #zone",
            names={"#until": "until", "#zone": "zone"},
            filter_expression="#until > :now",
            values={":now": {"N": _number(now)}},
        )
        return frozenset((i["capacity_type"]["S"], i["instance_type"]["S"], i["zone"]["S"]) for i in items)

    # ------------------------------------------------------------------ disruption commands

    def save_command(self, record: CommandRecord) -> None:
        """Write a disruption command's record (its owner, the consolidator's lease holder, is the only writer)."""
        item = {
            "pk": {"S": COMMAND},
            "sk": {"S": record.id},
            "command": {"S": record.to_json()},
            "state": {"S": record.state},
            SCHEMA_ATTRIBUTE: {"N": str(ITEM_SCHEMA)},
        }
        self._client.put_item(TableName=self.table_name, Item=item)

    def commands(self) -> list[CommandRecord]:
        """Every command record, oldest first. Raises InvalidValue when a record cannot be read."""
        items = self._query(
            COMMAND, projection="sk, #command, #schema", names={"#command": "command", "#schema": SCHEMA_ATTRIBUTE}
        )
        records = [CommandRecord.from_json(_readable(item, COMMAND)["command"]["S"]) for item in items]
        return sorted(records, key=lambda r: (r.created_at, r.id))

    def delete_command(self, command_id: str) -> None:
        """Remove a command's record; a missing one counts as removed."""
        self._client.delete_item(TableName=self.table_name, Key={"pk": {"S": COMMAND}, "sk": {"S": command_id}})

    # ------------------------------------------------------------------ drain records

    def save_drain(self, record: DrainRecord) -> None:
        """Write the record of the drain chain `record.chain` (create or overwrite)."""
        item: dict[str, Any] = {
            "pk": {"S": DRAIN},
            "sk": {"S": record.chain},
            "instance_id": {"S": record.instance_id},
            "node": {"S": record.node},
            "drain": {"S": record.drain},
            "deadline": {"N": _number(record.deadline)},
            "started": {"N": _number(record.started)},
            "origin": {"S": record.origin},
            "expires": {"N": _number(record.expires)},
            "verified": {"BOOL": record.verified},
            TTL_ATTRIBUTE: {"N": _ttl(record.expires)},
            SCHEMA_ATTRIBUTE: {"N": str(ITEM_SCHEMA)},
        }
        if record.replace_by is not None:
            item["replace_by"] = {"N": _number(record.replace_by)}
        self._client.put_item(TableName=self.table_name, Item=item)

    def drain_record(self, chain: str, now: float) -> DrainRecord | None:
        """The record of this drain chain, or None when absent or expired (expires <= now).

        A Query on the full key rather than GetItem: the same read the role already holds.
        """
        items = self._query(
            DRAIN,
            sort_key=chain,
            projection="sk, instance_id, " + ", ".join(f"#{name}" for name in _DRAIN_FIELDS),
            names={f"#{name}": name for name in _DRAIN_FIELDS},
            filter_expression="#expires > :now",
            values={":now": {"N": _number(now)}},
        )
        if not items:
            return None
        item = _readable(items[0], DRAIN)
        replace_by = item.get("replace_by")
        # Layouts 0 and 1 keyed the record by the instance id and did not repeat it.
        instance_id = item.get("instance_id", item["sk"])["S"]
        return DrainRecord(
            instance_id=instance_id,
            node=item["node"]["S"],
            drain=item["drain"]["S"],
            deadline=float(item["deadline"]["N"]),
            started=float(item["started"]["N"]),
            origin=item["origin"]["S"],
            replace_by=float(replace_by["N"]) if replace_by else None,
            expires=float(item["expires"]["N"]),
            # Written before unconfirmed drains existed: every drain then was a confirmed one's.
            verified=bool(item.get("verified", {"BOOL": True})["BOOL"]),
        )

    def delete_drain(self, chain: str) -> None:
        """Remove the record of this drain chain; a missing one counts as removed."""
        self._client.delete_item(TableName=self.table_name, Key={"pk": {"S": DRAIN}, "sk": {"S": chain}})

    # ------------------------------------------------------------------ internals

    def _query(
        self,
        partition: str,
        *,
        sort_key: str | None = None,
        projection: str,
        names: dict[str, str] | None = None,
        filter_expression: str | None = None,
        values: dict[str, Any] | None = None,
    ) -> list[dict[str, Any]]:
        kwargs: dict[str, Any] = {
            "TableName": self.table_name,
            "KeyConditionExpression": "pk = :pk" if sort_key is None else "pk = :pk AND sk = :sk",
            "ExpressionAttributeValues": {
                ":pk": {"S": partition},
                **({} if sort_key is None else {":sk": {"S": sort_key}}),
                **(values or {}),
            },
            "ProjectionExpression": projection,
            "ConsistentRead": True,
        }
        if names:
            kwargs["ExpressionAttributeNames"] = names
        if filter_expression:
            kwargs["FilterExpression"] = filter_expression
        items: list[dict[str, Any]] = []
        for page in self._client.get_paginator("query").paginate(**kwargs):
            items.extend(page.get("Items", ()))
        return items


if TYPE_CHECKING:
    # Static proof that the adapter satisfies the port (checked by mypy --strict, never run).
    _store: StateStore = DynamoStateStore(None, "")

__all__ = [
    "BLOCKED",
    "CLAIM",
    "COMMAND",
    "DRAIN",
    "LEASE",
    "TTL_ATTRIBUTE",
    "DynamoStateStore",
    "create_table",
    "offering_key",
]
