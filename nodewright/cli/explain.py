"""`nodewright explain pod NS/NAME`, `nodewright explain node NAME`, `nodewright status`.

Role: the command line over `nodewright.controllers.explain`. It reads, and writes nothing:

  * the cluster once through the functions' own Kubernetes adapter (`plan_cluster.read_cluster`:
    `--cluster` with your AWS credentials, or `--kubeconfig`/`--context`), with its NodePools and
    EC2NodeClasses (CRDs; else the config table; else the default NodePool);
  * the state table (claims, disruption commands, the capacity-error cache) through the
    functions' `DynamoStateStore`; its name from `--state-table`, else from the stack
    (`--stack`, default `Nodewright-<cluster>`);
  * the functions' decision records and REPORT lines of the last `--hours` through Logs Insights
    over the log groups of the saved queries (`nodewright.adapters.aws.logs`);
  * instance types and prices as `plan --cluster` reads them (live, else the bundled catalog).

`status` adds what the functions cost: Lambda GB-seconds and requests from the REPORT lines of
the window and the log bytes ingested, scaled to a month at the list prices `nodewright simulate`
uses for `self_cost` (DynamoDB and custom metrics are not read here: see summary.json's self_cost).
Output: rich tables by default, `--output json` for scripts. A source that cannot be read is
said in the output (`sources`), not fatal, except the cluster itself and, when the installation
is named (`--cluster`, `--name`, `--stack`, `--state-table`), the state table. With a kubeconfig
and no name, the state table and the logs are not read at all: the answer is what the cluster
shows (nodes, pods, Events), and `sources` says which AWS rights would add the rest.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

import typer

from nodewright.cli import app
from nodewright.cli.failures import exit_code, reason
from nodewright.controllers.explain import Sources, explain_node, explain_pod, status

ClusterOption = Annotated[str | None, typer.Option("--cluster", help="EKS cluster (your AWS credentials).")]
KubeconfigOption = Annotated[str | None, typer.Option("--kubeconfig", help="Reach the cluster via a kubeconfig.")]
ContextOption = Annotated[str | None, typer.Option("--context", help="The kubeconfig context.")]
RegionOption = Annotated[str | None, typer.Option("--region", help="AWS region of the installation.")]
StateTableOption = Annotated[str | None, typer.Option("--state-table", help="State table (default: the stack's).")]
StackOption = Annotated[str | None, typer.Option("--stack", help="CloudFormation stack (Nodewright-<cluster>).")]
NameOption = Annotated[str | None, typer.Option("--name", help="The installation's cluster name (for logs, stack).")]
HoursOption = Annotated[float, typer.Option("--hours", help="How far back to read the functions' logs.")]
OutputOption = Annotated[str, typer.Option("--output", "-o", help="table or json.")]

# Lambda's list prices (arm64), as `nodewright simulate`'s self_cost prices them.
HOURS_PER_MONTH = 730.0


@dataclass
class Where:
    """How to reach one installation (the common options)."""

    cluster: str | None = None
    kubeconfig: str | None = None
    context: str | None = None
    region: str | None = None
    state_table: str | None = None
    stack: str | None = None
    name: str | None = None
    hours: float = 1.0
    notes: dict[str, str] = field(default_factory=dict)

    @property
    def installation(self) -> str:
        """The cluster name the stack and the saved queries are named after."""
        return self.name or self.cluster or ""


@app.command("explain")
def explain_command(  # noqa: PLR0917 - Typer maps each parameter to an option
    kind: Annotated[str, typer.Argument(help="pod or node.")],
    target: Annotated[str, typer.Argument(help="pod: NAMESPACE/NAME (NAME: the default namespace); node: NAME.")],
    cluster: ClusterOption = None,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
    region: RegionOption = None,
    state_table: StateTableOption = None,
    stack: StackOption = None,
    name: NameOption = None,
    hours: HoursOption = 1.0,
    output: OutputOption = "table",
) -> None:
    """Why a pod waits or moved (pending since when, which pass saw it, why no NodePool took it, which
    claim holds it), or why a node exists (which claim launched it and why, whether consolidation may
    take it, what comes next).
    """
    where = Where(cluster, kubeconfig, context, region, state_table, stack, name, hours)
    if kind == "pod":
        key = target if "/" in target else f"default/{target}"
        namespace, _, pod = key.partition("/")
        _answer(where, output, lambda src, _: explain_pod(src, key), ("Pod", pod, namespace))
    elif kind == "node":
        _answer(where, output, lambda src, _: explain_node(src, target), ("Node", target, ""))
    else:
        _fail(f"explain what? {kind!r} is neither pod nor node")


@app.command("status")
def status_command(  # noqa: PLR0917 - Typer maps each parameter to an option
    cluster: ClusterOption = None,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
    region: RegionOption = None,
    state_table: StateTableOption = None,
    stack: StackOption = None,
    name: NameOption = None,
    hours: HoursOption = 1.0,
    output: OutputOption = "table",
) -> None:
    """Each function's last invocation, claims in flight, disruption commands, capacity errors, errors, cost."""
    where = Where(cluster, kubeconfig, context, region, state_table, stack, name, hours)
    _answer(where, output, lambda src, invocations: _status(src, invocations, where.notes))


def _answer(
    where: Where,
    output: str,
    ask: Callable[[Sources, list[Any]], dict[str, Any]],
    about: tuple[str, str, str] | None = None,
) -> None:
    if output not in ("table", "json"):
        _fail(f"--output must be table or json, not {output!r}")
    if not where.cluster and not where.kubeconfig and not where.context:
        _fail("say which cluster: --cluster NAME, or --kubeconfig PATH [--context NAME]")
    try:
        src, invocations = read_sources(where, about)
        answer = ask(src, invocations)
    except LookupError as error:
        _fail(str(error).strip("'\""))
    except _ReadError as error:
        _fail(str(error), code=exit_code(error))
    answer["sources"] = where.notes
    if output == "json":
        sys.stdout.write(json.dumps(answer, indent=2, default=str) + "\n")
    else:
        print_answer(answer)


NO_STATE_TABLE = (
    "not read (a kubeconfig only): pass --name CLUSTER (or --state-table); needs dynamodb:Query on the "
    "state table and cloudformation:DescribeStackResources on the stack Nodewright-CLUSTER"
)
NO_LOGS = (
    "not read (a kubeconfig only): pass --name CLUSTER; needs logs:StartQuery, logs:GetQueryResults "
    "and logs:DescribeQueryDefinitions on the functions' log groups"
)


class _ReadError(Exception):
    """A source every answer needs (the cluster, the state table) could not be read."""


def read_sources(where: Where, about: tuple[str, str, str] | None = None) -> tuple[Sources, list[Any]]:
    """Read the cluster, the state table, the logs and the catalog (see the module docstring), and
    the Events about the object `about` (kind, name, namespace) when given.
    """
    from nodewright.cli.plan import DEFAULT_NODEPOOL
    from nodewright.cli.plan_cluster import LiveReadError, catalog_for, read_cluster
    from nodewright.config.documents import EC2NODECLASS, NODEPOOL
    from nodewright.controllers.provisionoptions import pool_capacities
    from nodewright.model.nodeclass import EC2NodeClass
    from nodewright.model.nodepool import NodePool

    try:
        live, aws = read_cluster(
            cluster=where.cluster, kubeconfig=where.kubeconfig, context=where.context, region=where.region
        )
    except LiveReadError as error:
        raise _ReadError(str(error)) from error
    where.notes["cluster"] = live.source
    nodepools = [d.model for d in live.config.of_kind(NODEPOOL) if isinstance(d.model, NodePool)]
    nodeclasses = {d.name: d.model for d in live.config.of_kind(EC2NODECLASS) if isinstance(d.model, EC2NodeClass)}
    if not nodepools:
        nodepools = [DEFAULT_NODEPOOL]
        where.notes["nodepools"] = "none in the cluster: the default NodePool"
    catalog, prices = catalog_for(live.snapshot, aws)
    where.notes["prices"] = str(prices.get("source"))
    now = time.time()
    claim_objects: list[dict[str, Any]] = []
    if where.cluster or where.name or where.stack or where.state_table:
        store = _state_store(where)
        decisions, invocations = _logs(where, now)
    else:
        # A kubeconfig alone: what the cluster shows (nodes, pods, Events) answers; the AWS parts
        # say what they would need instead of failing the whole answer.
        from nodewright.inmemory.state import InMemoryStateStore

        store = InMemoryStateStore()
        decisions, invocations = [], []
        where.notes["state_table"] = NO_STATE_TABLE
        where.notes["logs"] = NO_LOGS
        claim_objects = _claim_objects(live.api_client, where)
    events = _events(live.api_client, about, where) if about is not None else []
    src = Sources(
        claim_records=store,
        command_records=store,
        offering_blocks=store,
        claim_objects=claim_objects,
        events=events,
        snapshot=live.snapshot,
        pools=pool_capacities(nodepools, nodeclasses, catalog),
        now=now,
        decisions=decisions,
    )
    return src, invocations


def _state_store(where: Where) -> Any:
    from nodewright.adapters.aws import session
    from nodewright.adapters.aws.state_store import DynamoStateStore

    table = where.state_table
    try:
        if not table:
            table = _stack_resource(where, "AWS::DynamoDB::Table", "State")
        store = DynamoStateStore(session.client("dynamodb", region=where.region), table)
        store.claims()  # fail here, with a clear message, rather than mid-answer
    except Exception as error:
        raise _ReadError(
            f"cannot read the state table {table or '(not found in the stack)'}: {reason(error)}"
        ) from error
    where.notes["state_table"] = table
    return store


def _stack_resource(where: Where, kind: str, logical: str) -> str:
    from nodewright.adapters.aws import session

    stack = where.stack or f"Nodewright-{where.installation}"
    resources = session.client("cloudformation", region=where.region).describe_stack_resources(StackName=stack)
    found = sorted(
        r["PhysicalResourceId"]
        for r in resources["StackResources"]
        if r["ResourceType"] == kind and r["LogicalResourceId"].startswith(logical)
    )
    if not found:
        raise LookupError(f"stack {stack} has no {kind} named {logical}...")
    return str(found[0])


def _claim_objects(api_client: Any, where: Where) -> list[dict[str, Any]]:
    """The cluster's NodeClaim objects (the state table's mirror), read when the table is not."""
    from nodewright.adapters.kube.crd_config import list_nodeclaim_objects

    try:
        objects = list_nodeclaim_objects(api_client)
    except Exception as error:  # no right to list them: the rest still answers
        where.notes["nodeclaims"] = f"not read: {reason(error)}"
        return []
    if objects is None:
        where.notes["nodeclaims"] = (
            "not read: the NodeClaim CRD (deploy/crds/nodewright.io_nodeclaims.yaml) is not installed"
        )
        return []
    where.notes["nodeclaims"] = f"{len(objects)} NodeClaim objects (nodeclaims.nodewright.io)"
    return objects


def _events(api_client: Any, about: tuple[str, str, str], where: Where) -> list[dict[str, Any]]:
    from nodewright.adapters.kube.describe import object_events

    kind, name, namespace = about
    try:
        events = object_events(api_client, kind, name, namespace)
    except Exception as error:  # no right to list Events: the rest still answers
        where.notes["events"] = f"not read: {reason(error)}"
        return []
    where.notes["events"] = f"{len(events)} about {kind} {namespace + '/' if namespace else ''}{name}"
    return events


def _logs(where: Where, now: float) -> tuple[list[dict[str, Any]], list[Any]]:
    from nodewright.adapters.aws import session
    from nodewright.adapters.aws.logs import LIMIT, DecisionLog

    try:
        log = DecisionLog(
            session.client("logs", region=where.region),
            cluster=where.installation,
            stack=where.stack,
            cloudformation=session.client("cloudformation", region=where.region),
        )
        read = log.read(now - where.hours * 3600.0, now)
    except Exception as error:  # no rights to the logs: the state table and the cluster still answer
        where.notes["logs"] = f"not read: {reason(error)}"
        return [], []
    where.notes["logs"] = f"{len(read.decisions)} decision records from {', '.join(read.log_groups) or 'no log group'}"
    if not read.complete:
        where.notes["logs"] += " (the query did not finish: partial)"
    where.notes["log_bytes"] = str(read.bytes)
    if read.rows >= LIMIT:
        where.notes["logs"] += f" (the query's limit of {LIMIT} rows: more happened, figures are low)"
    return read.decisions, read.invocations


def _status(src: Sources, invocations: Sequence[Any], notes: Mapping[str, str]) -> dict[str, Any]:
    """`status`, each function's last invocation (its REPORT line) beside its last record, and the cost."""
    answer = status(src)
    for invocation in sorted(invocations, key=lambda i: i.at):
        function = answer["functions"].setdefault(invocation.function, {})
        function["last_invocation"] = invocation.at
        function["billed_ms"] = invocation.billed_ms
    answer["cost"] = _cost(src, invocations, notes)
    return answer


def _cost(src: Sources, invocations: Sequence[Any], notes: Mapping[str, str]) -> dict[str, Any]:
    """Lambda's bill for the window's invocations and CloudWatch Logs' for the bytes read
    (`notes["log_bytes"]`), scaled to a month (see the module docstring).
    """
    from nodewright.simulator.report.selfcost import LAMBDA_GB_SECOND_ARM, LAMBDA_REQUEST, LOGS_PER_GB

    if not invocations:
        return {"lambda_month": None, "why": "no REPORT lines in the window"}
    first = min(i.at for i in invocations)
    hours = max((src.now - first) / 3600.0, 1 / 60)
    gb_seconds = sum(i.billed_ms / 1000.0 * i.memory_mb / 1024.0 for i in invocations)
    window = gb_seconds * LAMBDA_GB_SECOND_ARM + len(invocations) * LAMBDA_REQUEST
    by_function: dict[str, int] = {}
    for i in invocations:
        by_function[i.function] = by_function.get(i.function, 0) + 1
    logs = int(notes.get("log_bytes") or 0) / 1e9 * LOGS_PER_GB
    return {
        "lambda_month": round(window * HOURS_PER_MONTH / hours, 2),
        "logs_month": round(logs * HOURS_PER_MONTH / hours, 2),
        "invocations": by_function,
        "gb_seconds": round(gb_seconds, 1),
        "window_hours": round(hours, 2),
    }


# Columns a table of records shows, in this order, when the records have them (JSON has all).
COLUMNS = (
    "name",
    "function",
    "at",
    "first",
    "decision",
    "type",
    "reason",
    "event",
    "nodeclaim",
    "node",
    "pod",
    "state",
    "method",
    "instance_type",
    "capacity_type",
    "zone",
    "price",
    "pods",
    "options",
    "candidates",
    "detail",
    "note",
    "count",
    "last_invocation",
    "billed_ms",
    "since",
)


def print_answer(answer: Mapping[str, Any]) -> None:
    """The answer as rich tables: scalars first, then one table per list of records (or per
    mapping of records, keyed by name), with the COLUMNS they have.
    """
    from rich.console import Console
    from rich.table import Table

    console = Console(width=160)
    facts = Table(show_header=False, box=None)
    facts.add_column(style="bold")
    facts.add_column()
    nested: list[tuple[str, list[Mapping[str, Any]]]] = []
    for key, value in answer.items():
        if key == "sources":
            continue
        if isinstance(value, list) and value and isinstance(value[0], Mapping):
            nested.append((key, value))
        elif isinstance(value, Mapping) and value and all(isinstance(v, Mapping) for v in value.values()):
            nested.append((key, [{"name": k, **v} for k, v in value.items()]))
        elif isinstance(value, Mapping) and value:
            nested.append((key, [value]))
        else:
            facts.add_row(key.replace("_", " "), _cell(value))
    console.print(facts)
    for key, rows in nested:
        present = {k for row in rows for k in row}
        columns = [c for c in COLUMNS if c in present] or sorted(present)
        table = Table(title=key.replace("_", " "), title_justify="left")
        for column in columns:
            table.add_column(column.replace("_", " "))
        for row in rows:
            table.add_row(*(_cell(row.get(c)) for c in columns))
        console.print(table)
    for key, value in (answer.get("sources") or {}).items():
        console.print(f"[dim]{key}: {value}[/dim]")


def _cell(value: Any) -> str:
    if value is None or value == "":
        return "-"
    if value in ([], {}):
        return "none"
    if isinstance(value, float) and value > 1e9:  # an epoch time
        return time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(value))
    if isinstance(value, list | tuple):
        return ", ".join(_cell(v) for v in value[:8]) + (f" (+{len(value) - 8})" if len(value) > 8 else "")
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={_cell(v)}" for k, v in value.items())
    return str(value)


def _fail(message: str, code: int = 1) -> None:
    # Exit 1: the input is wrong; 2: AWS or the cluster could not be reached or read (cli.failures).
    typer.secho(message, err=True, fg="red")
    raise typer.Exit(code)
