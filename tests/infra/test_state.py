"""State construct: the three DynamoDB tables and their keys, TTLs, billing and protection."""

from __future__ import annotations

from aws_cdk.assertions import Match

from tests.infra.conftest import Synthesized

PITR = {"PointInTimeRecoveryEnabled": True}


def test_config_table_is_deletion_protected_retained_and_recoverable(synthesized: Synthesized) -> None:
    synthesized.template.has_resource(
        "AWS::DynamoDB::Table",
        {
            "DeletionPolicy": "Retain",
            "UpdateReplacePolicy": "Retain",
            "Properties": Match.object_like(
                {
                    "DeletionProtectionEnabled": True,
                    "BillingMode": "PAY_PER_REQUEST",
                    "PointInTimeRecoverySpecification": PITR,
                    # The config store's key: one item per document (Kind#name), no sort key.
                    "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
                }
            ),
        },
    )


def test_state_table_has_string_pk_sk_and_expires_at_ttl(synthesized: Synthesized) -> None:
    synthesized.template.has_resource_properties(
        "AWS::DynamoDB::Table",
        {
            "KeySchema": [
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            "AttributeDefinitions": Match.array_with(
                [{"AttributeName": "pk", "AttributeType": "S"}, {"AttributeName": "sk", "AttributeType": "S"}]
            ),
            "TimeToLiveSpecification": {"AttributeName": "expires_at", "Enabled": True},
            "BillingMode": "PAY_PER_REQUEST",
            "PointInTimeRecoverySpecification": PITR,
        },
    )


def test_idempotency_table_has_id_key_and_expiration_ttl(synthesized: Synthesized) -> None:
    synthesized.template.has_resource_properties(
        "AWS::DynamoDB::Table",
        {
            "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
            "TimeToLiveSpecification": {"AttributeName": "expiration", "Enabled": True},
            "BillingMode": "PAY_PER_REQUEST",
            "PointInTimeRecoverySpecification": PITR,
        },
    )


def test_only_the_config_table_survives_cdk_destroy(synthesized: Synthesized) -> None:
    tables = synthesized.resources("AWS::DynamoDB::Table")
    config_id = synthesized.resolve(synthesized.stack.state.config_table.table_name)["Ref"]

    assert len(tables) == 3
    for logical_id, table in tables.items():
        expected = "Retain" if logical_id == config_id else "Delete"
        assert table["DeletionPolicy"] == expected, logical_id


def test_functions_read_config_but_never_write_it(synthesized: Synthesized) -> None:
    stack = synthesized.stack
    config_arn = synthesized.resolve(stack.state.config_table.table_arn)
    for role in (stack.provisioner.role, stack.interruption.role, stack.consolidator.role):
        on_config = {
            action
            for statement in synthesized.statements_of(role)
            if config_arn
            in (statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]])
            for action in (statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]])
        }
        assert on_config == {"dynamodb:Scan"}
        assert not {a for a in on_config if a.startswith(("dynamodb:Put", "dynamodb:Update", "dynamodb:Delete"))}
