"""The scenario's `faults:` key: what a valid entry means, and each problem named by file, line and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodewright.simulator.scenario import EC2_THROTTLED, FUNCTIONS, KUBE_VERBS, Fault, ScenarioError, parse_scenario
from tests.simulator.conftest import NODECLASS, nodepool

BASE = f"name: faulty\nduration: 30m\nnodepools:{nodepool()}nodeclasses:{NODECLASS}"


def faults(text: str, tmp_path: Path) -> tuple[Fault, ...]:
    return parse_scenario(BASE + "faults:\n" + text, tmp_path / "faulty.yaml").faults


def problems(text: str, tmp_path: Path) -> list[str]:
    with pytest.raises(ScenarioError) as raised:
        parse_scenario(BASE + "faults:\n" + text, tmp_path / "faulty.yaml")
    return [str(p) for p in raised.value.problems]


def test_a_fault_entry_keeps_its_window_and_the_settings_of_its_kind(tmp_path: Path) -> None:
    found = faults(
        "  - {kind: kube-429, rate: 0.2, verbs: [evict], retry_after: 3s, from: 5m, until: 10m}\n"
        "  - {kind: ec2-throttle, rate: 1, operations: [CreateFleet, Describe*]}\n"
        "  - {kind: dynamodb-throttle, rate: 0.1, code: ThrottlingException}\n"
        "  - {kind: crash, rate: 0.5, functions: [provisioner]}\n",
        tmp_path,
    )
    throttle429, ec2, dynamodb, crash = found
    assert (throttle429.kind, throttle429.rate, throttle429.verbs, throttle429.retry_after) == (
        "kube-429",
        0.2,
        ("evict",),
        3.0,
    )
    assert (throttle429.start, throttle429.end) == (300.0, 600.0)
    assert [throttle429.active(t) for t in (299.0, 300.0, 599.0, 600.0)] == [False, True, True, False]
    assert [ec2.throttles(o) for o in ("CreateFleet", "DescribeInstances", "TerminateInstances")] == [True, True, False]
    assert dynamodb.code == "ThrottlingException"
    assert crash.functions == ("provisioner",)


def test_defaults_cover_every_verb_operation_and_function_and_the_whole_run(tmp_path: Path) -> None:
    kube, ec2, crash = faults(
        "  - {kind: kube-5xx, rate: 0.1}\n  - {kind: ec2-throttle, rate: 0.1}\n  - {kind: timeout, rate: 0.1}\n",
        tmp_path,
    )
    assert (kube.verbs, kube.status, kube.end) == (KUBE_VERBS, 503, None)
    assert ec2.operations == EC2_THROTTLED
    assert ec2.throttles("DescribeSpotPriceHistory")
    assert crash.functions == FUNCTIONS


def test_the_last_fault_window_closes_at_the_latest_until_or_the_run_end(tmp_path: Path) -> None:
    scenario = parse_scenario(
        BASE
        + "faults:\n  - {kind: kube-5xx, rate: 0.1, until: 10m}\n  - {kind: sqs-duplicate, rate: 0.5, until: 4m}\n",
        tmp_path / "faulty.yaml",
    )
    assert scenario.faults_end == 600.0
    assert parse_scenario(BASE, tmp_path / "faulty.yaml").faults_end is None
    scenario = parse_scenario(BASE + "faults:\n  - {kind: crash, rate: 0.1, from: 1m}\n", tmp_path / "faulty.yaml")
    assert scenario.faults_end == 1800.0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("  - {kind: kube-5xx}\n", "faults[0].rate: is required", id="rate-required"),
        pytest.param("  - {kind: kube-5xx, rate: 1.5}\n", "faults[0].rate: must be between 0 and 1", id="rate-range"),
        pytest.param("  - {kind: disk-full, rate: 0.1}\n", 'faults[0].kind: "disk-full" is not one of', id="kind"),
        pytest.param(
            "  - {kind: kube-5xx, rate: 0.1, verbs: [get]}\n", 'faults[0].verbs[0]: "get" is not one of', id="verb"
        ),
        pytest.param(
            "  - {kind: kube-5xx, rate: 0.1, status: 404}\n", "faults[0].status: must be at least 500", id="status"
        ),
        pytest.param(
            "  - {kind: ec2-throttle, rate: 0.1, operations: [RunInstances]}\n",
            'faults[0].operations[0]: "RunInstances" is not CreateFleet',
            id="operation",
        ),
        pytest.param(
            "  - {kind: crash, rate: 0.1, functions: [scheduler]}\n",
            'faults[0].functions[0]: "scheduler" is not one of provisioner',
            id="function",
        ),
        pytest.param(
            "  - {kind: ec2-partial-fleet, rate: 0.1, verbs: [list]}\n",
            "faults[0].verbs: unknown field",
            id="key-of-another-kind",
        ),
        pytest.param(
            "  - {kind: sqs-reorder, rate: 0.1, from: 10m, until: 5m}\n",
            "faults[0].until: must be after `from`",
            id="window",
        ),
        pytest.param(
            "  - {kind: dynamodb-throttle, rate: 0.1, code: SlowDown}\n",
            'faults[0].code: "SlowDown" is not one of',
            id="code",
        ),
    ],
)
def test_a_bad_fault_entry_is_named_by_file_line_and_field(text: str, expected: str, tmp_path: Path) -> None:
    found = problems(text, tmp_path)
    assert any(expected in p for p in found), found
    assert all(p.startswith(f"{tmp_path / 'faulty.yaml'}:") for p in found), found
