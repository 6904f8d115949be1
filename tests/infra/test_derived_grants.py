"""Least privilege derived from the calls: each role grants exactly what its function calls.

Recorded (tests/infra/derive.py): every AWS operation each function makes while the simulator
runs the shipped scenarios (and three for paths they skip) with the real handlers, and each
function's cold start. Mapped to IAM actions by infra.grants (its table names the sources).
Compared with the synthesized template's statements for that function's role, both ways: a
grant nothing uses fails, and so does a call nothing grants. The mutation tests below show the
check catching each on a copy of the policy or of the calls.

Print what the functions call with `python -m tests.infra.derive`.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from infra.grants import PLATFORM_ACTIONS, Operation, drift, granted, needed
from tests.infra.conftest import Synthesized
from tests.infra.derive import FUNCTIONS, Recorder


def _tables(synthesized: Synthesized) -> dict[str, Any]:
    state = synthesized.stack.state
    return {
        name: synthesized.resolve(getattr(state, f"{name}_table").table_arn)
        for name in ("config", "state", "idempotency")
    }


def _statements(synthesized: Synthesized, function: str) -> list[dict[str, Any]]:
    return synthesized.statements_of(getattr(synthesized.stack, function).role)


def _used(derived: Recorder, function: str) -> set[str]:
    return needed(derived.aws[function], PLATFORM_ACTIONS[function])


@pytest.mark.parametrize("function", FUNCTIONS)
def test_each_role_grants_exactly_what_its_function_calls(
    synthesized: Synthesized, derived: Recorder, function: str
) -> None:
    allowed = granted(_statements(synthesized, function), _tables(synthesized))

    found = drift(_used(derived, function), allowed)

    assert not found, f"{function}: {found}"


def test_the_recording_sees_each_function_at_work(derived: Recorder) -> None:
    assert Operation("ec2", "CreateFleet") in derived.aws["provisioner"]
    assert Operation("ec2", "CreateFleet") in derived.aws["consolidator"]
    assert Operation("ec2", "TerminateInstances") in derived.aws["interruption"]
    assert Operation("dynamodb", "PutItem", "idempotency") in derived.aws["interruption"]
    assert all(Operation("eks", "DescribeCluster") in derived.aws[f] for f in FUNCTIONS)
    # The world's own calls (setting up the account, EventBridge) are nobody's.
    assert not any(op.service == "events" for f in FUNCTIONS for op in derived.aws[f])


@pytest.mark.parametrize(
    ("function", "extra", "label"),
    [
        ("provisioner", {"Action": "ec2:DescribeVolumes", "Resource": "*"}, "ec2:DescribeVolumes"),
        (
            "interruption",
            {"Action": ["ec2:CreateTags", "ec2:TerminateInstances"], "Resource": "arn:aws:ec2:*:*:instance/*"},
            "ec2:CreateTags",
        ),
        ("consolidator", {"Action": "dynamodb:PutItem", "Resource": "idempotency"}, "dynamodb:PutItem on idempotency"),
    ],
    ids=["describe-on-star", "tag-existing-instances", "another-table"],
)
def test_a_grant_nothing_uses_fails_the_check(
    synthesized: Synthesized, derived: Recorder, function: str, extra: dict[str, Any], label: str
) -> None:
    tables = _tables(synthesized)
    statements = copy.deepcopy(_statements(synthesized, function))
    resource = tables.get(extra["Resource"], extra["Resource"])
    statements.append({"Effect": "Allow", **extra, "Resource": resource})

    found = drift(_used(derived, function), granted(statements, tables))

    assert found.unused == {label}
    assert not found.ungranted


def test_a_call_nothing_grants_fails_the_check(synthesized: Synthesized, derived: Recorder) -> None:
    calls = {*derived.aws["consolidator"], Operation("ec2", "DescribeInstances")}

    found = drift(
        needed(calls, PLATFORM_ACTIONS["consolidator"]),
        granted(_statements(synthesized, "consolidator"), _tables(synthesized)),
    )

    assert found.ungranted == {"ec2:DescribeInstances"}
    assert not found.unused


def test_a_grant_removed_from_a_copy_of_the_policy_fails_the_check(synthesized: Synthesized, derived: Recorder) -> None:
    statements = [s for s in copy.deepcopy(_statements(synthesized, "provisioner")) if s["Action"] != "iam:PassRole"]

    found = drift(_used(derived, "provisioner"), granted(statements, _tables(synthesized)))

    assert found.ungranted == {"iam:PassRole"}
