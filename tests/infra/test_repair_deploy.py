"""Node repair's deploy key and grant: `repairMaxUnhealthyPercent` reaches the consolidator as
REPAIR_MAX_UNHEALTHY_PERCENT, and only the consolidator may read EC2 status checks.

Real: the app synthesized as app.py builds it (tests/infra/conftest.py) and `load_config`.
Observed: the template's function environment and role policies, and the config errors.
"""

from __future__ import annotations

import pytest
from aws_cdk.assertions import Match

from infra.config import ConfigError, load_config
from tests.infra.conftest import Synthesized


def test_the_consolidator_learns_the_unhealthy_share_repair_allows(synthesized: Synthesized) -> None:
    synthesized.template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Handler": "functions.consolidator.handler.handler",
            "Environment": {"Variables": Match.object_like({"REPAIR_MAX_UNHEALTHY_PERCENT": "20"})},
        },
    )


def test_only_the_consolidator_reads_instance_status_checks(synthesized: Synthesized) -> None:
    stack = synthesized.stack
    assert "ec2:DescribeInstanceStatus" in synthesized.actions_of(stack.consolidator.role)
    assert "ec2:DescribeInstanceStatus" not in synthesized.actions_of(stack.provisioner.role)
    assert "ec2:DescribeInstanceStatus" not in synthesized.actions_of(stack.interruption.role)


def test_the_key_is_a_percentage() -> None:
    assert load_config({"repairMaxUnhealthyPercent": "0"}).repair_max_unhealthy_percent == 0
    assert load_config({}).repair_max_unhealthy_percent == 20
    with pytest.raises(ConfigError, match="'repairMaxUnhealthyPercent': 101 is outside 0-100"):
        load_config({"repairMaxUnhealthyPercent": 101})
