"""The DynamoDB tables Nodewright keeps its configuration and working state in.

- config: NodePools and EC2NodeClasses written by `nodewright nodepool apply`; deletion-protected
  and retained on `cdk destroy`, because it is the one thing an operator wrote by hand.
- state: node claims, the capacity-error cache, leases, disruption commands, price cache; items
  expire through the `expires_at` TTL attribute.
- idempotency: Powertools idempotency records (`id` key, `expiration` TTL), so a re-delivered
  EventBridge or SQS event is not acted on twice (the interruption function's only).

All three are on-demand (the load is a few requests a minute) with point-in-time recovery.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from constructs import Construct

STATE_TTL_ATTRIBUTE = "expires_at"
IDEMPOTENCY_TTL_ATTRIBUTE = "expiration"
# The item calls the functions make on each table, no more (derived from the calls and checked by
# tests/infra/test_derived_grants.py): the state store writes with conditional puts, deletes and
# reads by Query (nodewright.adapters.aws.state_store); the config is read with a Scan
# (nodewright.adapters.aws.config_store); Powertools' idempotency layer puts, updates and
# deletes its records (it reads the old record from the failed conditional put, not GetItem).
STATE_ACTIONS: tuple[str, ...] = ("dynamodb:DeleteItem", "dynamodb:PutItem", "dynamodb:Query")
CONFIG_ACTIONS: tuple[str, ...] = ("dynamodb:Scan",)
IDEMPOTENCY_ACTIONS: tuple[str, ...] = ("dynamodb:DeleteItem", "dynamodb:PutItem", "dynamodb:UpdateItem")


class State(Construct):
    """Creates the config, state and idempotency tables; exposes them as attributes."""

    config_table: dynamodb.Table
    state_table: dynamodb.Table
    idempotency_table: dynamodb.Table

    def __init__(self, scope: Construct, construct_id: str, *, retain_config_table: bool = True) -> None:
        """Create the three tables (their shape is part of the runtime contract).

        `retain_config_table=False` (deploy key `retainConfigTable=false`) lets `cdk destroy`
        delete the config table too: no deletion protection, removal policy DESTROY.
        """
        super().__init__(scope, construct_id)
        # One item per document, keyed `Kind#name` (nodewright.adapters.aws.config_store);
        # the operator's configuration: by default kept when the stack is deleted, and protected.
        self.config_table = self._table(
            "ConfigTable", "pk", deletion_protection=retain_config_table, retain=retain_config_table
        )
        # Working state is rebuilt from the cluster and EC2 on the next pass.
        self.state_table = self._table("StateTable", "pk", sort_key="sk", ttl=STATE_TTL_ATTRIBUTE)
        self.idempotency_table = self._table("IdempotencyTable", "id", ttl=IDEMPOTENCY_TTL_ATTRIBUTE)

    def _table(
        self,
        construct_id: str,
        partition_key: str,
        *,
        sort_key: str | None = None,
        ttl: str | None = None,
        deletion_protection: bool = False,
        retain: bool = False,
    ) -> dynamodb.Table:
        """An on-demand table with point-in-time recovery and string keys."""
        string = dynamodb.AttributeType.STRING
        return dynamodb.Table(
            self,
            construct_id,
            partition_key=dynamodb.Attribute(name=partition_key, type=string),
            sort_key=dynamodb.Attribute(name=sort_key, type=string) if sort_key else None,
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            time_to_live_attribute=ttl,
            deletion_protection=deletion_protection or None,
            removal_policy=cdk.RemovalPolicy.RETAIN if retain else cdk.RemovalPolicy.DESTROY,
        )

    def grant_controller_access(self, grantee: iam.IGrantable) -> None:
        """What every function needs: read the config, read and write the state.

        Writing the config is the operator's job (`nodewright nodepool apply`), never a function's.
        (Not the L2 `grant_read_data`: it adds stream reads and DescribeTable no function makes.)
        """
        self.config_table.grant(grantee, *CONFIG_ACTIONS)
        self.state_table.grant(grantee, *STATE_ACTIONS)

    def grant_idempotency_access(self, grantee: iam.IGrantable) -> None:
        """The idempotency records: only the interruption function deduplicates its events."""
        self.idempotency_table.grant(grantee, *IDEMPOTENCY_ACTIONS)
