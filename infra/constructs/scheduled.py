"""A controller function on an EventBridge schedule: the shape the provisioner and consolidator share.

Both run every `rate_minutes` with reserved concurrency 1 (two passes deciding at once would act
on the same pods or candidates twice), and both launch capacity (the consolidator launches
replacements itself, so it can wait for them before draining). So both get the same
least-privilege policy: EC2 discovery, launching and tagging only what carries this cluster's tag,
passing only the node role to EC2, terminating only instances tagged as ours, prices and public
AMI parameters, DescribeCluster on this cluster, and the state and config tables (exactly the
item calls they make: `State.grant_controller_access`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra.config import FunctionConfig
from infra.constructs import permissions
from infra.constructs.function import NodewrightFunction
from infra.constructs.state import State


@dataclass(frozen=True, slots=True)
class ScheduledFunction:
    """Which scheduled controller: its `name` (also its handler package under `functions/`), what it
    does (`purpose`, used in descriptions), the EC2 Describe* calls it makes beyond launching's
    (`permissions.EC2_DESCRIBE_ACTIONS`) and whether it stops and starts standby instances.
    """

    name: str
    purpose: str
    extra_describe: tuple[str, ...] = ()
    # Stops and starts standby instances (CapacityBuffers with the standby strategy).
    standby: bool = False


class ScheduledController(Construct):
    """A scheduled controller function (`kind`: the provisioner's or the consolidator's, see
    `infra/constructs/provisioner.py` and `consolidator.py`); exposes `function`, `role`, `handler`
    and `schedule`.
    """

    function: lambda_.Function
    role: iam.Role
    schedule: events.Rule
    handler: NodewrightFunction

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        kind: ScheduledFunction,
        cluster_name: str,
        code: lambda_.Code,
        settings: FunctionConfig,
        rate_minutes: int,
        environment: Mapping[str, str],
        log_retention_days: int,
        log_level: str,
        node_role: iam.IRole,
        state: State,
        discovery_tag: tuple[str, str],
        instance_profile_arns: Sequence[str],
        image_owners: Sequence[str] = (),
        node_roles: tuple[str, ...] = (),
        require_imdsv2: bool = True,
        require_encrypted_volumes: bool = True,
    ) -> None:
        """Create the function, its least-privilege role and its schedule. Launches reference only
        subnets and security groups with `discovery_tag` and images of Amazon or `image_owners`;
        terminations only instances with one of `instance_profile_arns`.
        """
        super().__init__(scope, construct_id)
        policy = permissions.PolicyBuilder()
        permissions.allow_describe(policy, actions=(*permissions.EC2_DESCRIBE_ACTIONS, *kind.extra_describe))
        permissions.allow_launch(
            policy,
            cluster_name=cluster_name,
            node_role_arn=node_role.role_arn,
            discovery_tag=discovery_tag,
            image_owners=image_owners,
            node_roles=node_roles,
            require_imdsv2=require_imdsv2,
            require_encrypted_volumes=require_encrypted_volumes,
        )
        # Rolls back launches whose node never registered, collects orphans, terminates replaced nodes.
        permissions.allow_terminate_owned_instances(
            policy, cluster_name=cluster_name, instance_profile_arns=instance_profile_arns
        )
        if kind.standby:
            permissions.allow_stop_start_owned_instances(
                policy, cluster_name=cluster_name, instance_profile_arns=instance_profile_arns
            )
        permissions.allow_node_catalog(policy)
        permissions.allow_describe_cluster(policy, cluster_name=cluster_name)
        self.handler = NodewrightFunction(
            self,
            kind.name.capitalize(),
            name=kind.name,
            description=f"Nodewright {kind.name} for EKS cluster {cluster_name}: {kind.purpose}",
            code=code,
            settings=settings,
            environment=environment,
            log_retention_days=log_retention_days,
            log_level=log_level,
            policy=policy,
            reserved_concurrency=1,
        )
        self.function = self.handler.function
        self.role = self.handler.role
        state.grant_controller_access(self.role)
        configure_single_flight(self.function, rate_minutes=rate_minutes)
        self.schedule = events.Rule(
            self,
            "Schedule",
            description=f"Runs the Nodewright {kind.name} for {cluster_name} every {rate_minutes} min",
            schedule=events.Schedule.rate(cdk.Duration.minutes(rate_minutes)),
            targets=[targets.LambdaFunction(self.function)],
        )


def configure_single_flight(function: lambda_.Function, *, rate_minutes: int) -> None:
    """Drop queued async invocations older than one schedule tick, and never retry a failed pass.

    With reserved concurrency 1, an invocation arriving while a pass runs is throttled and Lambda
    would keep retrying it for up to 6 hours, piling up stale passes. The next tick re-reads the
    whole cluster anyway, so a missed or failed invocation loses nothing.
    """
    function.configure_async_invoke(max_event_age=cdk.Duration.minutes(rate_minutes), retry_attempts=0)
