"""Every lint finding on the stack and the manifests that is accepted rather than fixed, with why.

Role: the one place a reviewer reads to see what the policy and template linters report and why
each report stands. `tests/infra/test_policy_lint.py` runs the tools (parliament over every IAM
policy of the synthesized template, checkov over the template and `deploy/`, cfn-lint) and fails
on a finding that no entry here covers, and on an entry that no longer matches any finding (a
fixed finding must lose its acknowledgement too).

cdk-nag is the exception: its acknowledgements are generated with the statement that raises them
(`infra/constructs/permissions.py`: a wildcard resource cannot be granted without its reason), and
`tests/infra/test_compliance.py` checks that each has one.

Contract of an entry: `tool` names the linter; `check` is its finding id (parliament's issue,
checkov's check id, cfn-lint's rule id); `where` is a regular expression that must match the
whole subject of the finding: for parliament the IAM action, for checkov `<resource type>.<logical
id>` or `<kind>.<namespace>.<name>`; for cfn-lint, "" (a rule ignored everywhere). Data only: no
CDK import, so the tests and `./dev audit` can read it cheaply.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PARLIAMENT = "parliament"
CHECKOV = "checkov"
CFN_LINT = "cfn-lint"


@dataclass(frozen=True, slots=True)
class Acknowledgement:
    """One accepted finding: which tool, which check, where (a full-match regex), and why."""

    tool: str
    check: str
    where: str
    reason: str

    def covers(self, tool: str, check: str, subject: str) -> bool:
        """True when this entry accepts the finding `check` of `tool` on `subject`."""
        return self.tool == tool and self.check == check and re.fullmatch(self.where, subject) is not None


_CMK = (
    "Encrypted at rest with AWS-owned keys. They hold node claims, caches, decisions and resource "
    "names, no secrets; a customer-managed key would add a key policy to keep right and a KMS "
    "request per read."
)

ACKNOWLEDGEMENTS: tuple[Acknowledgement, ...] = (
    Acknowledgement(
        PARLIAMENT,
        "RESOURCE_MISMATCH",
        r"ec2:(RunInstances|CreateFleet)",
        "The launch grant is split by resource type on purpose, as Karpenter's is: created resources "
        "need our request tags, referenced ones are granted by type, launch templates need our "
        "resource tag. Each statement holds only some of the action's resource types.",
    ),
    Acknowledgement(
        PARLIAMENT,
        "RESOURCE_MISMATCH",
        r"ssm:GetParameter",
        "AWS's public parameters have no account in their ARN "
        "(arn:aws:ssm:<region>::parameter/aws/service/...); parliament expects one.",
    ),
    Acknowledgement(CHECKOV, "CKV_AWS_119", r"AWS::DynamoDB::Table\..*", _CMK),
    Acknowledgement(CHECKOV, "CKV_AWS_158", r"AWS::Logs::LogGroup\..*", _CMK),
    Acknowledgement(CHECKOV, "CKV_AWS_173", r"AWS::Lambda::Function\..*", _CMK),
    Acknowledgement(
        CHECKOV,
        "CKV_AWS_27",
        r"AWS::SQS::Queue\.Interruption(Priority)?(DeadLetter)?Queue[0-9A-F]{8}",
        "A false positive: the queues and their DLQs use SQS-managed encryption (SqsManagedSseEnabled), which "
        "checkov does not recognise.",
    ),
    Acknowledgement(
        CHECKOV,
        "CKV_AWS_116",
        r"AWS::Lambda::Function\.(Provisioner|Interruption|Consolidator)Function[0-9A-F]{8}",
        "A Lambda DLQ is for asynchronous invocations: the scheduled functions never retry one "
        "(the next tick re-reads the cluster), and the interruption function's failed messages go "
        "to its queue's DLQ through the redrive policy.",
    ),
    Acknowledgement(
        CHECKOV,
        "CKV_AWS_117",
        r"AWS::Lambda::Function\.(Provisioner|Interruption|Consolidator)Function[0-9A-F]{8}",
        "By default the functions call AWS APIs and the cluster's public endpoint from outside a "
        "VPC; the deploy key vpcAccess puts them in the cluster's VPC (private endpoints).",
    ),
    Acknowledgement(
        CFN_LINT,
        "W3005",
        r"",
        "CDK's lambda.Function always adds DependsOn its role although Fn::GetAtt on the role "
        "already orders them; the redundancy is harmless and not ours to remove.",
    ),
)


def acknowledged(tool: str, check: str, subject: str) -> Acknowledgement | None:
    """The entry that accepts this finding, or None when it must be fixed."""
    return next((a for a in ACKNOWLEDGEMENTS if a.covers(tool, check, subject)), None)


def ignored_rules(tool: str) -> list[str]:
    """Rule ids acknowledged everywhere for `tool` (entries whose `where` is "")."""
    return sorted({a.check for a in ACKNOWLEDGEMENTS if a.tool == tool and not a.where})
