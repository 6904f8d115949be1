"""`nodewright nodepool ...`: validate NodePool/EC2NodeClass files and manage the DynamoDB config table.

    nodewright nodepool validate -f FILE_OR_DIR [-f ...] [--strict] [--node-roles ROLE,...]
    nodewright nodepool apply    -f FILE_OR_DIR --table NAME [--strict] [--node-roles ROLE,...]
    nodewright nodepool get      [KIND/]NAME --table NAME [-o yaml|json]
    nodewright nodepool list     --table NAME
    nodewright nodepool delete   [KIND/]NAME --table NAME

Files may hold YAML or JSON, including what `kubectl get nodepools -o yaml` prints (a `kind: List`).
Problems and errors go to stderr, one per line (`file:line: Kind/name: field.path: rule`), and
make the command exit 1. `apply` stores nothing unless every document of every file is valid.
Warnings (`file:line: warning: ...`: an unknown field, which is dropped as the API server drops
it, or a field Nodewright does not act on) go to stderr too; `--strict` makes them problems.
`--node-roles` (the stack output NodeRoles) lists the node roles the deployment may pass: an
EC2NodeClass whose `role` names another is a problem (without it, roles are not checked here).
AWS settings come from the usual places (AWS_REGION/AWS_DEFAULT_REGION, AWS_ENDPOINT_URL,
credentials chain), or --region/--endpoint-url.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from nodewright.cli import app
from nodewright.cli.failures import fail
from nodewright.config.documents import KINDS, Loaded, dump_yaml
from nodewright.config.files import read_paths
from nodewright.config.noderoles import NodeRoles, role_problems
from nodewright.config.problems import ConfigError

if TYPE_CHECKING:
    from nodewright.adapters.aws.config_store import ConfigStore, StoredDocument

nodepool_app = typer.Typer(
    help="Validate NodePool and EC2NodeClass documents and manage the config table.",
    no_args_is_help=True,
)
app.add_typer(nodepool_app, name="nodepool")

# soft_wrap: a problem stays on one line whatever the terminal width, so it can be grepped.
out = Console(soft_wrap=True, highlight=False)
err = Console(stderr=True, soft_wrap=True, highlight=False)

Files = Annotated[
    list[Path],
    typer.Option("-f", "--filename", help="A YAML or JSON file, or a directory (searched for *.yaml, *.yml, *.json)."),
]
Strict = Annotated[
    bool, typer.Option("--strict", help="Treat warnings (unknown or ignored fields) as problems: refuse them.")
]
TableName = Annotated[str, typer.Option("--table", envvar="NODEWRIGHT_CONFIG_TABLE", help="The DynamoDB config table.")]
Region = Annotated[
    str | None, typer.Option("--region", envvar=["AWS_REGION", "AWS_DEFAULT_REGION"], help="AWS region.")
]
NodeRoleList = Annotated[
    str | None,
    typer.Option(
        "--node-roles",
        envvar="NODEWRIGHT_NODE_ROLES",
        help="The node roles the deployment may pass, comma-separated (the stack output NodeRoles).",
    ),
]
EndpointUrl = Annotated[
    str | None,
    typer.Option("--endpoint-url", envvar="AWS_ENDPOINT_URL", help="AWS endpoint, e.g. a local moto server."),
]


def _store(table: str, region: str | None, endpoint_url: str | None) -> ConfigStore:
    # boto3 is imported here, not with the module: `plan`, `validate` and `--help` never need it
    # and it is most of the CLI's start-up time.
    from nodewright.adapters.aws.config_store import ConfigStore
    from nodewright.adapters.aws.session import client as aws_client

    return ConfigStore(table, client=aws_client("dynamodb", region=region, endpoint_url=endpoint_url))


def _store_errors() -> tuple[type[Exception], ...]:
    """What a config table operation raises (evaluated only when one did)."""
    from nodewright.adapters.aws.config_store import ConfigStoreError

    return (ConfigStoreError, ConfigError)


def _read(filename: list[Path], node_roles: str | None) -> Loaded:
    """The documents of the files, each EC2NodeClass `role` checked against `--node-roles`."""
    listed = [r for r in (node_roles or "").split(",") if r.strip()]
    roles = NodeRoles.of(listed[0], listed[1:]) if listed else NodeRoles()
    return role_problems(read_paths(filename), roles)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'s' if number != 1 else ''}" if number else ""


def _report(loaded: Loaded) -> None:
    """Every problem and warning, in file order, then how many of each."""
    for finding in loaded.findings:
        err.print(str(finding), markup=False)
    summary = " and ".join(
        c for c in (_count(len(loaded.problems), "problem"), _count(len(loaded.warnings), "warning")) if c
    )
    if summary:
        err.print(f"{summary} found", style="bold red" if loaded.problems else "yellow", markup=False)


def _fail(message: str) -> typer.Exit:
    err.print(f"error: {message}", style="red", markup=False)
    return typer.Exit(1)


def _find(store: ConfigStore, ref: str) -> StoredDocument:
    """`Kind/name` or a bare name (unique across kinds)."""
    if "/" in ref:
        from nodewright.adapters.aws.config_store import split_key

        kind, name = split_key(ref)
        stored = store.get(kind, name)
        if stored is None:
            raise _fail(f"{ref} is not in table {store.table_name}")
        return stored
    found = [s for s in (store.get(kind, ref) for kind in KINDS) if s is not None]
    if not found:
        raise _fail(f"no NodePool or EC2NodeClass named {ref!r} in table {store.table_name}")
    if len(found) > 1:
        raise _fail(f"{ref!r} names both {' and '.join(s.key for s in found)}; say which one as Kind/name")
    return found[0]


@nodepool_app.command()
def validate(filename: Files, strict: Strict = False, node_roles: NodeRoleList = None) -> None:
    """Check every document of the given files; list every problem and warning with its field path."""
    loaded = _read(filename, node_roles)
    if strict:
        loaded = loaded.strict()
    refused = {(p.source, p.document) for p in loaded.problems}
    for document in loaded.documents:
        if (document.source, document.key) not in refused:  # under --strict, a warning refuses its document
            out.print(f"ok  {document.source}: {document.key}", markup=False)
    _report(loaded)
    if not loaded.ok:
        raise typer.Exit(1)
    if not loaded.documents:
        raise _fail("no documents found")


@nodepool_app.command()
def apply(
    filename: Files,
    table: TableName,
    region: Region = None,
    endpoint_url: EndpointUrl = None,
    strict: Strict = False,
    *,
    node_roles: NodeRoleList = None,
) -> None:
    """Store the documents in the config table: all of them, or none if any is invalid or changed."""
    loaded = _read(filename, node_roles)
    if strict:
        loaded = loaded.strict()
    _report(loaded)
    if not loaded.ok:
        raise _fail("nothing was stored")
    if not loaded.documents:
        raise _fail("no documents found")
    try:
        applied = _store(table, region, endpoint_url).apply(loaded.documents)
    except _store_errors() as error:
        raise _fail(str(error)) from None
    except Exception as error:  # AWS said no, or could not be reached: one line (cli.failures)
        fail(error, f"config table {table}")
    for item in applied:
        out.print(f"{item.key} {item.action} (version {item.version})", markup=False)


@nodepool_app.command()
def get(
    ref: Annotated[str, typer.Argument(metavar="[KIND/]NAME", help="e.g. NodePool/default, or default.")],
    table: TableName,
    output: Annotated[str, typer.Option("-o", "--output", help="yaml or json.")] = "yaml",
    region: Region = None,
    endpoint_url: EndpointUrl = None,
) -> None:
    """Print a stored document (as YAML or JSON) that parses back to the same document."""
    if output not in ("yaml", "json"):
        raise _fail(f"--output must be yaml or json, got {output!r}")
    try:
        stored = _find(_store(table, region, endpoint_url), ref)
    except _store_errors() as error:
        raise _fail(str(error)) from None
    except Exception as error:  # AWS said no, or could not be reached: one line (cli.failures)
        fail(error, f"config table {table}")
    manifest = stored.document.to_manifest()
    text = json.dumps(manifest, indent=2) + "\n" if output == "json" else dump_yaml([manifest])
    typer.echo(text, nl=False)


@nodepool_app.command("list")
def list_documents(table: TableName, region: Region = None, endpoint_url: EndpointUrl = None) -> None:
    """List the stored documents with their versions."""
    try:
        stored = _store(table, region, endpoint_url).list()
    except _store_errors() as error:
        raise _fail(str(error)) from None
    except Exception as error:  # AWS said no, or could not be reached: one line (cli.failures)
        fail(error, f"config table {table}")
    view = Table("KIND", "NAME", "VERSION", "DETAIL", box=None, pad_edge=False)
    for item in stored:
        view.add_row(item.document.kind, item.document.name, str(item.version), _detail(item))
    out.print(view)


def _detail(item: StoredDocument) -> str:
    model: Any = item.document.model
    if item.document.kind == "NodePool":
        return f"nodeClass={model.node_class_ref.name} weight={model.weight}"
    return f"ami={model.alias or model.effective_ami_family}"


@nodepool_app.command()
def delete(
    ref: Annotated[str, typer.Argument(metavar="[KIND/]NAME", help="e.g. NodePool/default, or default.")],
    table: TableName,
    region: Region = None,
    endpoint_url: EndpointUrl = None,
) -> None:
    """Delete a stored document (conditional on the version just read)."""
    try:
        store = _store(table, region, endpoint_url)
        stored = _find(store, ref)
        store.delete(stored.document.kind, stored.document.name, expected_version=stored.version)
    except _store_errors() as error:
        raise _fail(str(error)) from None
    except Exception as error:  # AWS said no, or could not be reached: one line (cli.failures)
        fail(error, f"config table {table}")
    out.print(f"{stored.key} deleted", markup=False)
