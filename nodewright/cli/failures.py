"""One clean line for every failure of a command that talks to AWS or Kubernetes, and exit code 2.

Role: a command that cannot reach or may not read AWS or the cluster prints

    error: [<what it was doing>: ]<cause>: <fix>

on stderr and exits 2 (1 stays "your input is wrong", 0 "done"), never a traceback. The cause and
fix come from the adapters (`adapters.aws.failures`, `adapters.kube.failures`), found on the
error or on what it was raised from (a command's own error wrapping a botocore one).

Two ways in: `FailureReportingGroup`, the Typer group class of the `nodewright` app, catches
whatever a command lets escape; a command that wraps a failure in its own message (`explain`,
`plan --cluster`) calls `fail(error, doing)` instead. An error nobody describes is a bug and
keeps its traceback.
"""

from __future__ import annotations

from typing import Any, NoReturn

import typer
from typer.core import TyperGroup

FAILED = 2


def describe(error: BaseException) -> str | None:
    """The cause and fix of `error` or of the first error in its chain the adapters describe."""
    from nodewright.adapters.aws.failures import describe_aws
    from nodewright.adapters.kube.failures import describe_kube

    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        said = describe_aws(current) or describe_kube(current)
        if said:
            return said
        # What it was raised from; not what was being handled when it was (`raise ... from None`
        # says that is done with, e.g. an exit after the failure was already reported).
        current = current.__cause__ or (None if current.__suppress_context__ else current.__context__)
    return None


def reason(error: BaseException) -> str:
    """`describe(error)`, or the error's type and text when nobody describes it (for a message
    a command builds around it).
    """
    return describe(error) or f"{type(error).__name__}: {error}"


def exit_code(error: BaseException) -> int:
    """2 for a described AWS or Kubernetes failure (in `error`'s chain), else 1."""
    return FAILED if describe(error) else 1


def fail(error: BaseException, doing: str) -> NoReturn:
    """Print `error: <doing>: <cause>: <fix>` and exit 2; re-raise `error` when nobody describes it."""
    said = describe(error)
    if said is None:
        raise error
    typer.echo(f"error: {doing}: {said}", err=True)
    raise typer.Exit(FAILED) from None


class FailureReportingGroup(TyperGroup):
    """The app's group: a described AWS or Kubernetes failure becomes one line and exit 2."""

    def invoke(self, ctx: Any) -> Any:
        """Run the command; see the module docstring for what a failure prints."""
        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort):
            raise  # the command has said what went wrong already
        except Exception as error:  # Typer's usage errors are described by nobody: re-raised
            said = describe(error)
            if said is None:
                raise
            typer.echo(f"error: {said}", err=True)
            raise typer.Exit(FAILED) from None
