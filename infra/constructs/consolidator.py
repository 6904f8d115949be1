"""The consolidator: every `rate_minutes`, remove or replace nodes the cluster no longer needs.

Runs on an EventBridge schedule with reserved concurrency 1 (two passes must not pick the same
candidates). Its commands taint, launch replacements, drain and terminate, so it needs the same
EC2 launch and owned-instance permissions as the provisioner (launching the replacement itself lets
it wait for the node before draining), plus its tables (config read-only).
"""

from __future__ import annotations

from collections.abc import Mapping

import aws_cdk as cdk
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra.config import FunctionConfig
from infra.constructs import permissions
from infra.constructs.function import NodewrightFunction
from infra.constructs.provisioner import configure_single_flight
from infra.constructs.state import State


class Consolidator(Construct):
    """Scheduled consolidator function; exposes `function`, `role` and `schedule`."""

    function: lambda_.Function
    role: iam.Role
    schedule: events.Rule
    handler: NodewrightFunction

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster_name: str,
        code: lambda_.Code,
        settings: FunctionConfig,
        rate_minutes: int,
        environment: Mapping[str, str],
        log_retention_days: int,
        log_level: str,
        node_role: iam.IRole,
        state: State,
    ) -> None:
        """Create the function, its least-privilege role and its schedule."""
        super().__init__(scope, construct_id)
        policy = permissions.PolicyBuilder()
        permissions.allow_describe(policy)
        permissions.allow_launch(policy, cluster_name=cluster_name, node_role_arn=node_role.role_arn)
        permissions.allow_manage_owned_instances(policy, cluster_name=cluster_name)
        permissions.allow_node_catalog(policy)
        permissions.allow_describe_cluster(policy, cluster_name=cluster_name)
        self.handler = NodewrightFunction(
            self,
            "Consolidator",
            name="consolidator",
            description=f"Nodewright consolidator for EKS cluster {cluster_name}: removes or replaces idle nodes",
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
        state.grant_function_access(self.role)
        configure_single_flight(self.function, rate_minutes=rate_minutes)
        self.schedule = events.Rule(
            self,
            "Schedule",
            description=f"Runs the Nodewright consolidator for {cluster_name} every {rate_minutes} min",
            schedule=events.Schedule.rate(cdk.Duration.minutes(rate_minutes)),
            targets=[targets.LambdaFunction(self.function)],
        )
