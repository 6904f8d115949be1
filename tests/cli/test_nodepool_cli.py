"""`nodewright nodepool ...` run as a real subprocess against a moto server over HTTP.

Faked: AWS, by moto's `ThreadedMotoServer` on 127.0.0.1 (a free port), reached through the
standard AWS_ENDPOINT_URL variable with fake credentials. Observed: exit codes, stdout/stderr
and what the config table holds afterwards (read with boto3 and with the CLI itself).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml

from nodewright.adapters.aws.config_store import create_table
from nodewright.config.stream import parse_yaml
from tests.moto_server import moto_server

pytestmark = pytest.mark.integration

ROOT = Path(__file__).parents[2]
NODEWRIGHT = Path(sys.executable).parent / "nodewright"
EXAMPLES = ROOT / "examples" / "nodepools"
MIXED = ROOT / "tests" / "config" / "fixtures" / "invalid" / "mixed.yaml"
KUBECTL_NODEPOOLS = ROOT / "tests" / "config" / "fixtures" / "kubectl" / "nodepools.yaml"
KUBECTL_NODECLASSES = ROOT / "tests" / "config" / "fixtures" / "kubectl" / "ec2nodeclasses.json"
TABLE = "nodewright-config"


@pytest.fixture(scope="module")
def moto_endpoint() -> Iterator[str]:
    with moto_server() as endpoint:
        yield endpoint


@pytest.fixture
def aws_env(moto_endpoint: str, tmp_path: Path) -> dict[str, str]:
    """The environment the CLI runs with: moto's endpoint, fake credentials, no real AWS config."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        AWS_ENDPOINT_URL=moto_endpoint,
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_REGION="us-east-1",
        AWS_CONFIG_FILE=str(tmp_path / "no-config"),
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "no-credentials"),
        NO_COLOR="1",
        COLUMNS="200",
    )
    return env


@pytest.fixture
def dynamodb(moto_endpoint: str, aws_env: dict[str, str]) -> Iterator[Any]:
    """A client on the moto server with a fresh, empty config table."""
    client = boto3.client(
        "dynamodb",
        endpoint_url=moto_endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    create_table(client, TABLE)
    yield client
    client.delete_table(TableName=TABLE)


def nodewright(env: dict[str, str], *args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(NODEWRIGHT), "nodepool", *map(str, args)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def table_keys(client: Any) -> list[str]:
    return sorted(item["pk"]["S"] for item in client.scan(TableName=TABLE)["Items"])


def test_validate_accepts_the_example_directory(aws_env: dict[str, str]) -> None:
    result = nodewright(aws_env, "validate", "-f", EXAMPLES)

    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert "examples/nodepools/default.yaml: NodePool/default" in result.stdout
    assert "examples/nodepools/gpu.yaml: EC2NodeClass/gpu" in result.stdout


def test_validate_of_a_mixed_file_exits_non_zero_listing_every_error(aws_env: dict[str, str]) -> None:
    result = nodewright(aws_env, "validate", "-f", MIXED)

    assert result.returncode == 1
    errors = result.stderr.splitlines()
    expected = [
        'metadata.annotations["nodewright.io/rebalance-policy"]: "Sometimes" is not one of',
        "spec.weight: must be at most 100, got 101",
        'NodePool/default: spec.template.spec.requirements[2].operator: "Greater" is not one of In, NotIn, Exists, '
        "DoesNotExist, Gt, Lt, Gte, Lte",
        'spec.template.spec.expireAfter: "30 days" is not a duration',
        'spec.disruption.consolidationPolicy: "WhenIdle" is not one of',
        "spec.disruption.budgets[0].schedule: is not a valid cron schedule",
        "spec.disruption.budgets[1]: schedule and duration must be set together",
        'NodePool/gpu: spec.template.spec.taints[0].effect: "NoScheduleAtAll" is not one of',
        "warning: NodePool/gpu: spec.template.spec.tolerations: unknown field, ignored",
    ]
    assert len(errors) == len(expected) + 1
    for line, fragment in zip(errors, expected, strict=False):
        assert line.startswith(f"{MIXED}:")
        assert fragment in line
    assert errors[-1] == "8 problems and 1 warning found"
    assert "EC2NodeClass/default" in result.stdout  # the valid document is still shown as valid


def test_apply_of_a_mixed_file_stores_nothing(aws_env: dict[str, str], dynamodb: Any) -> None:
    result = nodewright(aws_env, "apply", "-f", MIXED, "--table", TABLE)

    assert result.returncode == 1
    assert "error: nothing was stored" in result.stderr
    assert "spec.template.spec.requirements[2].operator" in result.stderr
    assert table_keys(dynamodb) == []


def test_apply_then_get_round_trips_a_valid_file(aws_env: dict[str, str], dynamodb: Any) -> None:
    applied = nodewright(aws_env, "apply", "-f", EXAMPLES / "default.yaml", "--table", TABLE)

    assert applied.returncode == 0, applied.stderr
    assert applied.stdout.splitlines() == [
        "NodePool/default created (version 1)",
        "EC2NodeClass/default created (version 1)",
    ]
    assert table_keys(dynamodb) == ["EC2NodeClass#default", "NodePool#default"]
    original = parse_yaml((EXAMPLES / "default.yaml").read_text(), "default.yaml").require()
    for document in original:
        got = nodewright(aws_env, "get", document.key, "--table", TABLE)
        assert got.returncode == 0, got.stderr
        assert yaml.safe_load(got.stdout) == document.to_manifest()
        (printed,) = parse_yaml(got.stdout, "printed").require()
        assert printed.model == document.model


def test_apply_of_kubectl_get_output_stores_what_was_configured_not_what_the_server_wrote(
    aws_env: dict[str, str], dynamodb: Any, tmp_path: Path
) -> None:
    saved = tmp_path / "nodepools.yaml"
    saved.write_text(KUBECTL_NODEPOOLS.read_text().replace("    weight: 10\n", "    weight: 10\n    wieght: 1\n"))

    applied = nodewright(aws_env, "apply", "-f", saved, "-f", KUBECTL_NODECLASSES, "--table", TABLE)
    got = nodewright(aws_env, "get", "NodePool/gpu", "--table", TABLE)

    assert applied.returncode == 0, applied.stderr
    assert "warning: NodePool/gpu: spec.wieght: unknown field, ignored" in applied.stderr
    assert table_keys(dynamodb) == ["EC2NodeClass#default", "NodePool#default", "NodePool#gpu"]
    stored = yaml.safe_load(got.stdout)
    assert set(stored) == {"apiVersion", "kind", "metadata", "spec"}
    assert set(stored["metadata"]) == {"name", "annotations"}
    assert "kubectl.kubernetes.io/last-applied-configuration" not in stored["metadata"]["annotations"]
    assert "wieght" not in stored["spec"]
    assert stored["spec"]["weight"] == 10


def test_apply_of_a_list_with_one_bad_item_stores_none_of_its_items(
    aws_env: dict[str, str], dynamodb: Any, tmp_path: Path
) -> None:
    saved = tmp_path / "nodepools.yaml"
    saved.write_text(KUBECTL_NODEPOOLS.read_text().replace("    weight: 10\n", "    weight: 101\n"))

    applied = nodewright(aws_env, "apply", "-f", saved, "-f", KUBECTL_NODECLASSES, "--table", TABLE)

    assert applied.returncode == 1
    assert f"{saved}:" in applied.stderr
    assert "NodePool/gpu: spec.weight: must be at most 100, got 101" in applied.stderr
    assert "error: nothing was stored" in applied.stderr
    assert table_keys(dynamodb) == []


def test_get_by_bare_name_needs_a_kind_when_two_kinds_share_it(aws_env: dict[str, str], dynamodb: Any) -> None:
    nodewright(aws_env, "apply", "-f", EXAMPLES / "default.yaml", "--table", TABLE)

    ambiguous = nodewright(aws_env, "get", "default", "--table", TABLE)
    as_json = nodewright(aws_env, "get", "NodePool/default", "--table", TABLE, "-o", "json")

    assert ambiguous.returncode == 1
    assert "'default' names both NodePool/default and EC2NodeClass/default" in ambiguous.stderr
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout)["metadata"]["name"] == "default"


def test_reapply_reports_unchanged_and_list_shows_versions(aws_env: dict[str, str], dynamodb: Any) -> None:
    nodewright(aws_env, "apply", "-f", EXAMPLES, "--table", TABLE)

    again = nodewright(aws_env, "apply", "-f", EXAMPLES / "arm64.yaml", "--table", TABLE)
    listed = nodewright(aws_env, "list", "--table", TABLE)

    assert again.stdout.strip() == "NodePool/arm64 unchanged (version 1)"
    assert listed.returncode == 0, listed.stderr
    rows = [line.split() for line in listed.stdout.splitlines()]
    assert rows[0] == ["KIND", "NAME", "VERSION", "DETAIL"]
    assert [row[:3] for row in rows[1:]] == [
        ["EC2NodeClass", "default", "1"],
        ["EC2NodeClass", "gpu", "1"],
        ["NodePool", "arm64", "1"],
        ["NodePool", "default", "1"],
        ["NodePool", "gpu", "1"],
    ]


def test_delete_removes_a_document_and_reports_a_missing_one(aws_env: dict[str, str], dynamodb: Any) -> None:
    nodewright(aws_env, "apply", "-f", EXAMPLES / "gpu.yaml", "--table", TABLE)

    deleted = nodewright(aws_env, "delete", "NodePool/gpu", "--table", TABLE)
    missing = nodewright(aws_env, "delete", "NodePool/gpu", "--table", TABLE)

    assert deleted.returncode == 0, deleted.stderr
    assert deleted.stdout.strip() == "NodePool/gpu deleted"
    assert table_keys(dynamodb) == ["EC2NodeClass#gpu"]
    assert missing.returncode == 1
    assert "NodePool/gpu is not in table nodewright-config" in missing.stderr


def test_the_console_script_is_installed() -> None:
    assert NODEWRIGHT.exists() or shutil.which("nodewright")
