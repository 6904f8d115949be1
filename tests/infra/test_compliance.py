"""cdk-nag AwsSolutions and cfn-lint over the synthesized template."""

from __future__ import annotations

import json

import aws_cdk as cdk
import cdk_nag
from cfnlint.api import ManualArgs, lint
from constructs import IConstruct

from infra.acknowledgements import CFN_LINT, ignored_rules
from tests.infra.conftest import Synthesized

# Rules ignored everywhere, each with its reason in infra/acknowledgements.py.
CFN_LINT_IGNORED = ignored_rules(CFN_LINT)


def _acknowledgements(root: IConstruct) -> list[tuple[str, str, str]]:
    """(construct path, rule id, reason) of every acknowledgement recorded under `root`."""
    found = []
    for construct in root.node.find_all():
        for entry in construct.node.metadata:
            if entry.type == cdk.Validations.ACKNOWLEDGED_RULES_METADATA_KEY:
                # Stored as {"Annotation::<rule id>": reason}; the prefix is CDK's, not cdk-nag's.
                for rule, reason in entry.data.items():
                    found.append((construct.node.path, rule.split("::", 1)[-1], reason))
    return found


def test_cdk_nag_aws_solutions_finds_nothing_unacknowledged(synthesized: Synthesized) -> None:
    report = cdk_nag.AwsSolutionsChecks(synthesized.app).validate_scope(synthesized.app)

    findings = [
        f"{violation.rule_name} at {resource.construct_path}"
        for violation in report.violations
        for resource in violation.violating_resources
    ]
    assert findings == []
    assert report.success


def test_every_acknowledgement_is_justified_in_one_line(synthesized: Synthesized) -> None:
    acknowledgements = _acknowledgements(synthesized.stack)

    assert acknowledgements, "expected the IAM4/IAM5/L1 acknowledgements"
    for path, rule, reason in acknowledgements:
        assert rule.startswith("AwsSolutions-"), (path, rule)
        assert reason.strip(), (path, rule)
        assert "\n" not in reason, (path, rule)
        assert len(reason) <= 300, (path, rule, reason)


def test_cfn_lint_reports_nothing(synthesized: Synthesized) -> None:
    # Default rule set (errors and warnings, as the cfn-lint CLI runs), in two partitions' regions.
    config = ManualArgs(regions=["us-east-1", "eu-west-1"], ignore_checks=CFN_LINT_IGNORED)
    matches = lint(json.dumps(synthesized.document), config=config)

    assert [f"{m.rule.id} {m.message} ({'/'.join(map(str, m.path))})" for m in matches] == []
