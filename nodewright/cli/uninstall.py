"""`nodewright uninstall --cluster NAME`: take Nodewright out of a cluster before `cdk destroy`.

Stops the stack's functions and schedules, drains the nodes Nodewright launched through the
Eviction API within PodDisruptionBudgets and `--deadline`, deletes them and terminates their
instances (and any instance tagged as Nodewright's with no node), then reports what is left and
prints the `cdk destroy` command. Another autoscaler's nodes are never touched. The work is
`nodewright.controllers.uninstall.Uninstaller`; this module only builds it from AWS (the caller's
credentials, DescribeCluster and a token as the functions connect) or a kubeconfig.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Annotated

import typer

from nodewright.cli import app
from nodewright.cli.failures import exit_code, reason


@app.command()
def uninstall(  # noqa: PLR0917 - Typer maps each parameter to an option
    cluster: Annotated[str, typer.Option("--cluster", help="The EKS cluster Nodewright manages.")],
    region: Annotated[str | None, typer.Option("--region", help="AWS region of the cluster.")] = None,
    stack: Annotated[str | None, typer.Option("--stack", help="CloudFormation stack (Nodewright-<cluster>).")] = None,
    deadline: Annotated[float, typer.Option("--deadline", help="Seconds to wait for PDB-blocked evictions.")] = 900.0,
    kubeconfig: Annotated[str | None, typer.Option("--kubeconfig", help="Reach the cluster via a kubeconfig.")] = None,
    context: Annotated[str | None, typer.Option("--context", help="The kubeconfig context.")] = None,
    output: Annotated[str, typer.Option("--output", "-o", help="text or json.")] = "text",
    yes: Annotated[bool, typer.Option("--yes", help="Do it (without it, nothing is changed).")] = False,
) -> None:
    """Stop Nodewright, drain and terminate the nodes it launched, and say what is left."""
    if not yes:
        typer.secho(
            "This stops Nodewright's functions and drains and terminates every node it launched. "
            "Run again with --yes to do it.",
            err=True,
        )
        raise typer.Exit(1)
    from nodewright.adapters.aws import session
    from nodewright.adapters.aws.ec2 import Ec2CloudProvider
    from nodewright.adapters.aws.eks import EksTokenSource, describe_cluster
    from nodewright.adapters.aws.instance_profiles import CreatedProfiles
    from nodewright.adapters.aws.stack import StackFunctions
    from nodewright.adapters.clock import SystemClock
    from nodewright.adapters.kube.client import from_cluster_info, from_kubeconfig
    from nodewright.adapters.kube.cluster import KubeCluster
    from nodewright.controllers.uninstall import Uninstaller

    clock = SystemClock()
    try:
        info = describe_cluster(session.client("eks", region=region), cluster)
        if kubeconfig or context:
            api_client, on_unauthorized = from_kubeconfig(kubeconfig, context), None
        else:
            tokens = EksTokenSource(session.client("sts", region=region), info.name, clock)
            api_client, on_unauthorized = from_cluster_info(info, tokens), tokens.invalidate
    except Exception as error:  # credentials, network, kubeconfig: one readable line
        typer.secho(f"cannot connect to cluster {cluster}: {reason(error)}", err=True, fg="red")
        raise typer.Exit(exit_code(error)) from None
    stack_name = stack or f"Nodewright-{cluster}"
    uninstaller = Uninstaller(
        cluster=KubeCluster.connect(api_client, on_unauthorized=on_unauthorized),
        cloud=Ec2CloudProvider(
            session.client("ec2", region=region),
            session.client("ssm", region=region),
            info,
            instance_profile="",
            clock=clock,
        ),
        switch=StackFunctions(
            stack_name,
            cloudformation=session.client("cloudformation", region=region),
            lambda_client=session.client("lambda", region=region),
            events=session.client("events", region=region),
        ),
        clock=clock,
        sleep=time.sleep,
        profiles=CreatedProfiles(session.client("iam", region=region), cluster=cluster),
    )
    report = uninstaller.run(deadline)
    if output == "json":
        sys.stdout.write(json.dumps({**report.__dict__, "complete": report.complete}, indent=2) + "\n")
    else:
        typer.echo(f"stopped: {', '.join(report.stopped) or 'nothing (stack not found?)'}")
        typer.echo(
            f"evicted {report.evicted} pod(s); deleted {len(report.deleted_nodes)} node(s); "
            f"terminated {len(report.terminated)} instance(s)"
        )
        typer.echo(f"not Nodewright's, untouched: {len(report.untouched)} node(s)")
        if report.removed_profiles:
            typer.echo(f"deleted the instance profile(s) it created: {', '.join(report.removed_profiles)}")
        for node, pods in report.left.items():
            typer.echo(f"LEFT {node}: {len(pods)} pod(s) a PodDisruptionBudget kept: {', '.join(pods[:5])}")
    if not report.complete:
        typer.echo("Nodes are left: raise --deadline, or drain them yourself, then run this again.")
        raise typer.Exit(2)
    typer.echo(f"Now: cdk destroy -c clusterName={cluster}   (stack {stack_name}; the config table is retained)")
