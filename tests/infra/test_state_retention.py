"""Deploy key `retainConfigTable`: whether `cdk destroy` keeps the config table (uninstall, issue 18).

What is real: the app synthesized as app.py builds it. What is observed: the config table's
DeletionPolicy, UpdateReplacePolicy and DeletionProtectionEnabled in the template, by default and
with `retainConfigTable=false`; the state and idempotency tables are deleted with the stack either way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.infra.conftest import Synthesized
from tests.infra.test_private_network import resources_of, synth_stack


def _tables(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        key[: key.index("Table") + 5]: value for key, value in resources_of(document, "AWS::DynamoDB::Table").items()
    }


def test_the_config_table_is_kept_by_default(synthesized: Synthesized) -> None:
    tables = _tables(synthesized.document)
    assert tables["StateConfigTable"]["DeletionPolicy"] == "Retain"
    assert tables["StateConfigTable"]["Properties"]["DeletionProtectionEnabled"] is True
    assert tables["StateStateTable"]["DeletionPolicy"] == "Delete"


def test_retain_config_table_false_lets_destroy_delete_it(tmp_path: Path) -> None:
    tables = _tables(synth_stack(tmp_path, retainConfigTable="false")["document"])
    config = tables["StateConfigTable"]
    assert config["DeletionPolicy"] == "Delete"
    assert config["UpdateReplacePolicy"] == "Delete"
    assert "DeletionProtectionEnabled" not in config["Properties"]
