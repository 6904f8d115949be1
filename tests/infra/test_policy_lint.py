"""parliament (IAM policy lint) and checkov (CloudFormation and Kubernetes manifests), in CI.

Real: the app synthesized as app.py builds it (tests/infra/conftest.py), the manifests shipped in
deploy/, parliament's own IAM action database and checkov's built-in checks. Observed: each tool's
findings, compared both ways with infra/acknowledgements.py: a finding nothing there accepts
fails, and so does an acknowledgement that matches no finding any more (it was fixed: drop it).

parliament reads policy text, not CloudFormation: the intrinsic functions in a policy (Ref,
Fn::GetAtt, Fn::Join) are rendered as the ARNs they stand for, in a made-up account and region,
so its resource-format checks see real ARN shapes.

checkov runs in its own environment (.venv/checkov, made by ./dev setup): it pins urllib3<2 and
packaging<24, which the project's venv must not be held to. Without it the checkov tests skip and
say how to get it; `--skip-download` keeps it offline (it otherwise fetches guideline links).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from infra.acknowledgements import ACKNOWLEDGEMENTS, CHECKOV, PARLIAMENT, Acknowledgement, acknowledged
from tests.infra.conftest import REPO_ROOT, Synthesized

ACCOUNT = "123456789012"
REGION = "us-east-1"
PSEUDO = {"AWS::Partition": "aws", "AWS::Region": REGION, "AWS::AccountId": ACCOUNT, "AWS::URLSuffix": "amazonaws.com"}
# The ARN each resource type's Fn::GetAtt Arn stands for (the logical id as its name).
ARN_OF = {
    "AWS::DynamoDB::Table": "arn:aws:dynamodb:{region}:{account}:table/{id}",
    "AWS::SQS::Queue": "arn:aws:sqs:{region}:{account}:{id}",
    "AWS::Logs::LogGroup": "arn:aws:logs:{region}:{account}:log-group:{id}:*",
    "AWS::Lambda::Function": "arn:aws:lambda:{region}:{account}:function:{id}",
    "AWS::IAM::Role": "arn:aws:iam::{account}:role/{id}",
    "AWS::IAM::InstanceProfile": "arn:aws:iam::{account}:instance-profile/{id}",
    "AWS::SNS::Topic": "arn:aws:sns:{region}:{account}:{id}",
    "AWS::Events::Rule": "arn:aws:events:{region}:{account}:rule/{id}",
}
# Policies parliament reads: identity policies and the queues' resource policies.
POLICY_TYPES = {"AWS::IAM::Policy": "PolicyDocument", "AWS::SQS::QueuePolicy": "PolicyDocument"}


def render(value: Any, resources: dict[str, Any]) -> Any:
    """`value` with Ref, Fn::GetAtt (Arn) and Fn::Join replaced by the strings they stand for."""
    if isinstance(value, list):
        return [render(v, resources) for v in value]
    if not isinstance(value, dict):
        return value
    if set(value) == {"Ref"}:
        name = value["Ref"]
        if name in PSEUDO:
            return PSEUDO[name]
        return _arn(name, resources)
    if set(value) == {"Fn::GetAtt"}:
        logical_id, attribute = value["Fn::GetAtt"]
        assert attribute == "Arn", f"Fn::GetAtt {logical_id}.{attribute}: only Arn is rendered"
        return _arn(logical_id, resources)
    if set(value) == {"Fn::Join"}:
        separator, parts = value["Fn::Join"]
        return separator.join(str(render(p, resources)) for p in parts)
    assert not any(key.startswith("Fn::") for key in value), f"intrinsic not rendered: {sorted(value)}"
    return {key: render(v, resources) for key, v in value.items()}


def _arn(logical_id: str, resources: dict[str, Any]) -> str:
    resource_type = resources[logical_id]["Type"]
    assert resource_type in ARN_OF, f"{logical_id}: add the ARN shape of {resource_type} to ARN_OF"
    return ARN_OF[resource_type].format(region=REGION, account=ACCOUNT, id=logical_id)


def parliament_findings(document: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(policy's logical id, issue, action) of every parliament finding on the template's policies."""
    resources = document["Resources"]
    found = []
    for logical_id, resource in sorted(resources.items()):
        key = POLICY_TYPES.get(resource["Type"])
        if key is None:
            continue
        policy = _analyze(json.dumps(render(resource["Properties"][key], resources)))
        for finding in policy.findings:
            details = finding.detail if isinstance(finding.detail, list) else [finding.detail]
            actions = {d.get("action", "") if isinstance(d, dict) else str(d) for d in details}
            found.extend((logical_id, finding.issue, action) for action in sorted(actions))
    return found


def _analyze(text: str) -> Any:
    with warnings.catch_warnings():
        # parliament 1.6.4's regular expressions are not raw strings: compiling it warns.
        warnings.simplefilter("ignore", DeprecationWarning)
        from parliament import analyze_policy_string

    return analyze_policy_string(text)


def unmatched(tool: str, findings: list[tuple[str, str]]) -> tuple[list[str], list[Acknowledgement]]:
    """Findings (check, subject) no acknowledgement accepts, and `tool`'s acknowledgements unused."""
    used: set[Acknowledgement] = set()
    open_findings = []
    for check, subject in findings:
        entry = acknowledged(tool, check, subject)
        if entry is None:
            open_findings.append(f"{check} on {subject}")
        else:
            used.add(entry)
    stale = [a for a in ACKNOWLEDGEMENTS if a.tool == tool and a not in used]
    return open_findings, stale


def test_parliament_finds_nothing_unacknowledged_in_the_stacks_policies(synthesized: Synthesized) -> None:
    findings = parliament_findings(synthesized.document)
    assert findings, "expected the acknowledged RESOURCE_MISMATCH findings: is parliament reading the policies?"
    open_findings, stale = unmatched(PARLIAMENT, [(issue, action) for _, issue, action in findings])
    assert open_findings == []
    assert stale == []


def test_parliament_sees_a_finding_added_to_a_copy_of_a_policy(synthesized: Synthesized) -> None:
    # The check is live: a statement parliament objects to (an action that does not exist, and a
    # resource-level action on a malformed ARN) is reported and is not acknowledged.
    document = json.loads(json.dumps(synthesized.document))
    policy = next(r for r in document["Resources"].values() if r["Type"] == "AWS::IAM::Policy")
    policy["Properties"]["PolicyDocument"]["Statement"].append(
        {"Effect": "Allow", "Action": ["ec2:TerminateInstance"], "Resource": "*"}
    )
    open_findings, _ = unmatched(PARLIAMENT, [(i, a) for _, i, a in parliament_findings(document)])
    assert any("ec2:TerminateInstance" in f for f in open_findings), open_findings


def test_render_names_the_intrinsic_it_cannot_render() -> None:
    with pytest.raises(AssertionError, match="Fn::Sub"):
        render({"Resource": {"Fn::Sub": "arn:${AWS::Partition}:s3:::x"}}, {})


# ---------------------------------------------------------------------- checkov


def checkov() -> str:
    """The checkov executable: $NODEWRIGHT_CHECKOV, .venv/checkov, or on PATH; skips without one."""
    for candidate in (os.environ.get("NODEWRIGHT_CHECKOV"), str(REPO_ROOT / ".venv/checkov/bin/checkov")):
        if candidate and Path(candidate).is_file():
            return candidate
    found = shutil.which("checkov")
    if found is None:
        pytest.skip("checkov is not installed: ./dev setup puts it in .venv/checkov (its own environment)")
    return found


def run_checkov(*args: str) -> Iterator[tuple[str, str, str]]:
    """(check type, check id, resource) of every failed check, with checkov offline."""
    # checkov's HCL parser caches its grammar in the temporary directory (lark's cache=True): give
    # it one of its own, removed afterwards, so the run leaves nothing behind.
    with tempfile.TemporaryDirectory(prefix="checkov-") as scratch:
        done = subprocess.run(
            [checkov(), *args, "--output", "json", "--compact", "--quiet", "--skip-download"],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
            env={**os.environ, "TMPDIR": scratch},
        )
    # checkov exits 1 when a check failed; anything else (or no JSON) is a failure to run.
    assert done.returncode in (0, 1), done.stderr[-2000:]
    reports = json.loads(done.stdout)
    for report in reports if isinstance(reports, list) else [reports]:
        assert report["summary"]["parsing_errors"] == 0, report["summary"]
        for failed in report["results"]["failed_checks"]:
            yield report["check_type"], failed["check_id"], failed["resource"]


@pytest.fixture(scope="module")
def template_findings(synthesized: Synthesized) -> list[tuple[str, str, str]]:
    template = synthesized.outdir / f"{synthesized.stack.stack_name}.template.json"
    return list(run_checkov("--file", str(template), "--framework", "cloudformation"))


def test_checkov_finds_nothing_unacknowledged_in_the_template(template_findings: list[tuple[str, str, str]]) -> None:
    assert template_findings, "expected the acknowledged findings: is checkov reading the template?"
    open_findings, stale = unmatched(CHECKOV, [(check, resource) for _, check, resource in template_findings])
    assert open_findings == []
    assert [a for a in stale if a.where.startswith("AWS::")] == []


def test_checkov_finds_nothing_in_the_kubernetes_manifests() -> None:
    findings = list(run_checkov("--directory", str(REPO_ROOT / "deploy"), "--framework", "kubernetes"))
    open_findings, _ = unmatched(CHECKOV, [(check, resource) for _, check, resource in findings])
    assert open_findings == []
