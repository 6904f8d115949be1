"""`nodewright nodepool validate` and `apply --strict` on kubectl output and on warnings, in process.

Nothing is faked: these paths never reach the config table (validate never does; `apply
--strict` refuses before it connects), so no AWS endpoint is needed.
"""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from nodewright.cli import app
from nodewright.cli import commands as _commands  # noqa: F401  (registers the commands)

KUBECTL = Path(__file__).resolve().parents[1] / "config" / "fixtures" / "kubectl"
runner = CliRunner()


def with_typo(tmp_path: Path) -> Path:
    path = tmp_path / "nodepools.yaml"
    path.write_text((KUBECTL / "nodepools.yaml").read_text().replace("    weight: 10\n", "    wieght: 10\n"))
    return path


def test_kubectl_get_output_validates_with_nothing_on_stderr() -> None:
    result = runner.invoke(
        app, ["nodepool", "validate", "-f", str(KUBECTL / "nodepools.yaml"), "-f", str(KUBECTL / "ec2nodeclasses.json")]
    )

    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    assert result.stdout.splitlines() == [
        f"ok  {KUBECTL / 'nodepools.yaml'}: NodePool/default",
        f"ok  {KUBECTL / 'nodepools.yaml'}: NodePool/gpu",
        f"ok  {KUBECTL / 'ec2nodeclasses.json'}: EC2NodeClass/default",
    ]


def test_an_unknown_field_is_a_warning_with_file_and_line_and_the_exit_code_stays_zero(tmp_path: Path) -> None:
    path = with_typo(tmp_path)
    line = path.read_text().splitlines().index("    wieght: 10") + 1

    result = runner.invoke(app, ["nodepool", "validate", "-f", str(path)])

    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [
        f'{path}:{line}: warning: NodePool/gpu: spec.wieght: unknown field, ignored (did you mean "weight"?)',
        "1 warning found",
    ]
    assert f"ok  {path}: NodePool/gpu" in result.stdout


def test_strict_makes_the_warning_an_error_and_the_document_is_not_ok(tmp_path: Path) -> None:
    path = with_typo(tmp_path)

    result = runner.invoke(app, ["nodepool", "validate", "--strict", "-f", str(path)])

    assert result.exit_code == 1
    assert result.stdout.splitlines() == [f"ok  {path}: NodePool/default"]
    assert result.stderr.splitlines()[-1] == "1 problem found"
    assert "warning:" not in result.stderr
    assert 'NodePool/gpu: spec.wieght: unknown field, ignored (did you mean "weight"?)' in result.stderr


def test_apply_strict_stores_nothing_when_there_is_a_warning(tmp_path: Path) -> None:
    path = with_typo(tmp_path)

    result = runner.invoke(
        app, ["nodepool", "apply", "--strict", "-f", str(path), "--table", "t", "--endpoint-url", "http://127.0.0.1:9"]
    )

    assert result.exit_code == 1
    assert "error: nothing was stored" in result.stderr
    assert "spec.wieght: unknown field" in result.stderr


EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "nodepools"


def test_node_roles_refuse_an_ec2nodeclass_naming_another_role_by_its_name() -> None:
    example = EXAMPLES / "default.yaml"
    allowed = runner.invoke(
        app,
        [
            "nodepool",
            "validate",
            "-f",
            str(example),
            "--node-roles",
            "Nodewright-demo-NodeRole,KarpenterNodeRole-my-cluster",
        ],
    )
    refused = runner.invoke(
        app, ["nodepool", "validate", "-f", str(example), "--node-roles", "Nodewright-demo-NodeRole"]
    )

    assert allowed.exit_code == 0, allowed.output
    assert refused.exit_code == 1
    (problem,) = [line for line in refused.stderr.splitlines() if "spec.role" in line]
    assert problem.startswith(f"{example}:")
    assert (
        "EC2NodeClass/default: spec.role: node role 'KarpenterNodeRole-my-cluster' is not one this deployment may "
        "pass (Nodewright-demo-NodeRole): add it to the deploy key nodeRoles and redeploy"
    ) in problem


def test_apply_refuses_a_role_outside_the_list_before_it_connects() -> None:
    result = runner.invoke(
        app,
        [
            "nodepool",
            "apply",
            "-f",
            str(EXAMPLES / "gpu.yaml"),
            "--table",
            "t",
            "--node-roles",
            "Nodewright-demo-NodeRole",
        ],
    )

    assert result.exit_code != 0
    assert "node role 'KarpenterNodeRole-my-cluster' is not one this deployment may pass" in result.stderr
    assert "nothing was stored" in result.stderr
