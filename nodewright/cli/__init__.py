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


@app.callback()
def _group() -> None:
    """Nodewright: a serverless node autoscaler for Amazon EKS."""


def main() -> None:
    """Console-script entry point."""
    from nodewright.cli import commands  # noqa: F401  (registers every command on `app`)

    app()
