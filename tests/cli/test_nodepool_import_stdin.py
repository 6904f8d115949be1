"""The migration's import step: `kubectl get nodepools,ec2nodeclasses -o yaml | nodewright nodepool apply -f -`.

What is real: the installed `nodewright` console script run as a subprocess, reading standard
input, against moto's DynamoDB over HTTP (the fixtures of tests/cli/test_nodepool_cli.py). The
input is what kubectl prints for two kinds at once: one `kind: List` holding NodePools and
EC2NodeClasses, with the server's fields (status, managedFields, annotations). What is observed:
the config table's items and the command's messages.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import yaml

from tests.cli.test_nodepool_cli import (  # noqa: F401 - fixtures
    KUBECTL_NODECLASSES,
    KUBECTL_NODEPOOLS,
    NODEWRIGHT,
    ROOT,
    TABLE,
    aws_env,
    dynamodb,
    moto_endpoint,
    table_keys,
)


def _kubectl_get_both_kinds() -> str:
    """One List of both kinds, as `kubectl get nodepools,ec2nodeclasses -o yaml` prints it."""
    pools = yaml.safe_load(KUBECTL_NODEPOOLS.read_text())["items"]
    classes = json.loads(KUBECTL_NODECLASSES.read_text())["items"]
    return yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [*pools, *classes], "metadata": {}})


def _apply_stdin(env: dict[str, str], text: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(NODEWRIGHT), "nodepool", "apply", "-f", "-", "--table", TABLE],
        input=text,
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_kubectl_output_for_both_kinds_is_applied_from_stdin(
    aws_env: dict[str, str],  # noqa: F811 - fixture
    dynamodb: Any,  # noqa: F811 - fixture
) -> None:
    applied = _apply_stdin(aws_env, _kubectl_get_both_kinds())

    assert applied.returncode == 0, applied.stderr
    assert table_keys(dynamodb) == ["EC2NodeClass#default", "NodePool#default", "NodePool#gpu"]
    assert "NodePool/default created" in applied.stdout


def test_a_bad_item_on_stdin_is_named_and_nothing_is_stored(
    aws_env: dict[str, str],  # noqa: F811 - fixture
    dynamodb: Any,  # noqa: F811 - fixture
) -> None:
    broken = _kubectl_get_both_kinds().replace(
        "consolidationPolicy: WhenEmptyOrUnderutilized", "consolidationPolicy: Never", 1
    )

    applied = _apply_stdin(aws_env, broken)

    assert applied.returncode == 1
    assert "<stdin>:" in applied.stderr
    assert "consolidationPolicy" in applied.stderr
    assert table_keys(dynamodb) == []
