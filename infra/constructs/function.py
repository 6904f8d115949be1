"""One Nodewright Lambda function with its own role and log group (shared by the three concerns).

Role: the provisioner, interruption and consolidator constructs each build one
`NodewrightFunction`. It owns what every function has in common: Python 3.12 on arm64, the
handler `functions.<name>.handler.handler` from the shared code asset, Powertools configured by
environment, an explicit log group with retention, and a dedicated role that starts with no
permissions except writing to that log group (no AWS-managed Lambda policy). Each concern then
adds only what its function needs through `policy` and the L2 `grant_*` helpers.
"""

from __future__ import annotations

from collections.abc import Mapping

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.config import FunctionConfig
from infra.constructs.permissions import PolicyBuilder

METRICS_NAMESPACE = "Nodewright"

_RETENTION: Mapping[int, logs.RetentionDays] = {
    1: logs.RetentionDays.ONE_DAY,
    3: logs.RetentionDays.THREE_DAYS,
    5: logs.RetentionDays.FIVE_DAYS,
    7: logs.RetentionDays.ONE_WEEK,
    14: logs.RetentionDays.TWO_WEEKS,
    30: logs.RetentionDays.ONE_MONTH,
    60: logs.RetentionDays.TWO_MONTHS,
    90: logs.RetentionDays.THREE_MONTHS,
    120: logs.RetentionDays.FOUR_MONTHS,
    150: logs.RetentionDays.FIVE_MONTHS,
    180: logs.RetentionDays.SIX_MONTHS,
    365: logs.RetentionDays.ONE_YEAR,
    400: logs.RetentionDays.THIRTEEN_MONTHS,
    545: logs.RetentionDays.EIGHTEEN_MONTHS,
    731: logs.RetentionDays.TWO_YEARS,
    1096: logs.RetentionDays.THREE_YEARS,
    1827: logs.RetentionDays.FIVE_YEARS,
    2192: logs.RetentionDays.SIX_YEARS,
    2557: logs.RetentionDays.SEVEN_YEARS,
    2922: logs.RetentionDays.EIGHT_YEARS,
    3288: logs.RetentionDays.NINE_YEARS,
    3653: logs.RetentionDays.TEN_YEARS,
}


def retention(days: int) -> logs.RetentionDays:
    """Map a validated number of days (see infra.config.LOG_RETENTION_DAYS) to the CDK enum."""
    return _RETENTION[days]


class NodewrightFunction(Construct):
    """A Lambda function `functions.<name>.handler.handler` with its own role and log group."""

    function: lambda_.Function
    role: iam.Role
    log_group: logs.LogGroup

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        name: str,
        description: str,
        code: lambda_.Code,
        settings: FunctionConfig,
        environment: Mapping[str, str],
        log_retention_days: int,
        log_level: str,
        policy: PolicyBuilder,
        reserved_concurrency: int | None = None,
    ) -> None:
        """Create the function `name` running `code`; `policy` holds its extra permissions."""
        super().__init__(scope, construct_id)
        self.log_group = logs.LogGroup(
            self,
            "LogGroup",
            retention=retention(log_retention_days),
            # Logs go with the stack; the config table is what `cdk destroy` retains.
            removal_policy=cdk.RemovalPolicy.DESTROY,
        )
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"Nodewright {name} function",
        )
        # Instead of AWSLambdaBasicExecutionRole (logs:* on every group): only this log group.
        policy.allow(["logs:CreateLogStream", "logs:PutLogEvents"], [self.log_group.log_group_arn])
        for statement in policy.statements:
            self.role.add_to_principal_policy(statement)
        policy.acknowledge(self.role)
        self.function = lambda_.Function(
            self,
            "Function",
            description=description,
            runtime=lambda_.Runtime.PYTHON_3_12,
            architecture=lambda_.Architecture.ARM_64,
            handler=f"functions.{name}.handler.handler",
            code=code,
            memory_size=settings.memory_mb,
            timeout=cdk.Duration.seconds(settings.timeout_seconds),
            role=self.role,
            log_group=self.log_group,
            reserved_concurrent_executions=reserved_concurrency,
            environment={
                "POWERTOOLS_SERVICE_NAME": name,
                "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE,
                "LOG_LEVEL": log_level,
                **environment,
            },
        )
        cdk.Validations.of(self.function).acknowledge(
            cdk.Acknowledgment(
                id="AwsSolutions-L1",
                reason="Python 3.12 is pinned: the shared asset's wheels are built for cp312 (see infra/bundling.py).",
            )
        )
