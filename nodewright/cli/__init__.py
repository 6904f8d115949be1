"""The `nodewright` command line: one Typer app, one module per command group."""

from __future__ import annotations

import typer

from nodewright.cli.failures import FailureReportingGroup

app = typer.Typer(
    name="nodewright",
    cls=FailureReportingGroup,
    help="Nodewright: a serverless node autoscaler for Amazon EKS.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _print_version(asked: bool) -> None:
    if asked:
        from importlib.metadata import PackageNotFoundError, version

        try:
            typer.echo(f"nodewright {version('nodewright')}")
        except PackageNotFoundError:  # run from a source tree that was never installed
            typer.echo("nodewright (not installed: see pyproject.toml)")
        raise typer.Exit


@app.callback()
def _group(
    show_version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True, help="Print the version (CHANGELOG.md) and exit."
    ),
) -> None:
    """Nodewright: a serverless node autoscaler for Amazon EKS."""


def main() -> None:
    """Console-script entry point."""
    from nodewright.cli import commands  # noqa: F401  (registers every command on `app`)

    app()
