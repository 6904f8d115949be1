"""Interruption handling: EC2 and AWS Health events -> SQS queue (+DLQ) -> interruption function.

Six EventBridge rules (Karpenter's set, and capacity block expiry) feed one queue: spot
interruption warnings, rebalance recommendations, instance state changes (only the states that take
a node away), capacity reservation interruption warnings, capacity block expiration warnings and
scheduled EC2 maintenance from AWS Health. The queue keeps a message 300 s (a spot warning is
useless after its 2 minutes), uses SQS-managed encryption (the AWS-managed KMS key's policy cannot
be edited to let EventBridge encrypt with it), sends a message that keeps failing to a DLQ and
refuses non-TLS requests. Who may send: the rules (by `aws:SourceArn`) and the function's own
role (its drain continuations); an explicit Deny refuses sqs:SendMessage to every other
principal of the account, whatever its IAM policy allows (docs/security.md, threat table).

The function reads batches of 10 and reports partial batch failures; at most
`max_concurrency` copies run at once (the event source's maximum concurrency, and the same
reserved concurrency), so a flood cannot take the account's Lambda concurrency. Besides cordoning
and draining, it asks EC2 about the instances a message names (DescribeInstances by id, the spot
request's status), may send itself a delayed message to continue a long drain, invoke the
provisioner asynchronously for replacement capacity, and terminate only instances owned by this
cluster (its tag and the node instance profile).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import aws_cdk as cdk
import jsii
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from aws_cdk.interfaces.aws_events import IRuleRef
from constructs import Construct

from infra.config import FunctionConfig
from infra.constructs import permissions
from infra.constructs.function import NodewrightFunction
from infra.constructs.state import State
from nodewright.config.timings import INTERRUPTION_BATCH_SIZE as BATCH_SIZE
from nodewright.config.timings import QUEUE_MAX_RECEIVE_COUNT, QUEUE_RETENTION_SECONDS, VISIBILITY_MARGIN_SECONDS
from nodewright.engine.interruption.rules import interruption_rules

# Rule construct id -> event pattern, built from the patterns the simulator also uses.
INTERRUPTION_EVENT_PATTERNS: Mapping[str, events.EventPattern] = {
    rule_id: events.EventPattern(
        source=pattern.get("source"), detail_type=pattern.get("detail-type"), detail=pattern.get("detail")
    )
    for rule_id, pattern in interruption_rules().items()
}


@jsii.implements(events.IRuleTarget)
class _QueueTarget:
    """Targets the queue without a per-rule grant: the queue policy lists all rules in one statement.

    (`aws_events_targets.SqsQueue` would also grant GetQueueAttributes and GetQueueUrl, which
    EventBridge does not need.)
    """

    def __init__(self, queue: sqs.IQueue) -> None:
        self._queue = queue

    # Parameter names must match the jsii interface, which mypy checks structurally.
    def bind(self, rule: IRuleRef, id: str | None = None) -> events.RuleTargetConfig:
        """Point the rule at the queue (the policy is added once, by `Interruption`)."""
        return events.RuleTargetConfig(arn=self._queue.queue_arn)


class Interruption(Construct):
    """Queue, DLQ, the five rules and the interruption function; all exposed as attributes."""

    queue: sqs.Queue
    dead_letter_queue: sqs.Queue
    rules: Mapping[str, events.Rule]
    function: lambda_.Function
    role: iam.Role
    handler: NodewrightFunction

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster_name: str,
        code: lambda_.Code,
        settings: FunctionConfig,
        environment: Mapping[str, str],
        log_retention_days: int,
        log_level: str,
        provisioner: lambda_.IFunction,
        state: State,
        instance_profile_arns: Sequence[str],
        max_concurrency: int = 10,
    ) -> None:
        """Create the queue pipeline and the function; `provisioner` is invoked for replacements."""
        super().__init__(scope, construct_id)
        self.dead_letter_queue = sqs.Queue(
            self,
            "DeadLetterQueue",
            # Long enough for someone to look at what failed.
            retention_period=cdk.Duration.days(14),
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
        )
        self.queue = sqs.Queue(
            self,
            "Queue",
            retention_period=cdk.Duration.seconds(QUEUE_RETENTION_SECONDS),
            visibility_timeout=cdk.Duration.seconds(settings.timeout_seconds + VISIBILITY_MARGIN_SECONDS),
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            dead_letter_queue=sqs.DeadLetterQueue(
                queue=self.dead_letter_queue, max_receive_count=QUEUE_MAX_RECEIVE_COUNT
            ),
        )
        target = _QueueTarget(self.queue)
        self.rules = {
            rule_id: events.Rule(
                self,
                rule_id,
                description=f"Nodewright ({cluster_name}): interruption signal to the queue",
                event_pattern=pattern,
                targets=[target],
            )
            for rule_id, pattern in INTERRUPTION_EVENT_PATTERNS.items()
        }
        self.queue.add_to_resource_policy(
            iam.PolicyStatement(
                sid="AllowInterruptionRules",
                principals=[iam.ServicePrincipal("events.amazonaws.com")],
                actions=["sqs:SendMessage"],
                resources=[self.queue.queue_arn],
                conditions={"ArnEquals": {"aws:SourceArn": [rule.rule_arn for rule in self.rules.values()]}},
            )
        )

        policy = permissions.PolicyBuilder()
        permissions.allow_terminate_owned_instances(
            policy, cluster_name=cluster_name, instance_profile_arns=instance_profile_arns
        )
        permissions.allow_describe(policy, actions=(permissions.DESCRIBE_INSTANCES, permissions.DESCRIBE_SPOT_REQUESTS))
        permissions.allow_describe_cluster(policy, cluster_name=cluster_name)
        # Only the function ARN (grant_invoke would add "<arn>:*" for every version and alias).
        policy.allow(["lambda:InvokeFunction"], [provisioner.function_arn])
        # The event source mapping polls with the function's role (Lambda Developer Guide, "Using
        # Lambda with Amazon SQS"), and the function sends itself delayed drain continuations. The
        # L2 SqsEventSource and grant_send_messages would add ChangeMessageVisibility and
        # GetQueueUrl, which neither makes.
        policy.allow(
            ["sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ReceiveMessage", "sqs:SendMessage"],
            [self.queue.queue_arn],
        )
        self.handler = NodewrightFunction(
            self,
            "Interruption",
            name="interruption",
            description=f"Nodewright interruption handler for EKS cluster {cluster_name}: cordons and drains",
            code=code,
            settings=settings,
            environment={**environment, "PROVISIONER_FUNCTION_NAME": provisioner.function_name},
            log_retention_days=log_retention_days,
            log_level=log_level,
            policy=policy,
            reserved_concurrency=max_concurrency,
        )
        self.function = self.handler.function
        self.role = self.handler.role
        self.function.add_event_source_mapping(
            "QueueSource",
            event_source_arn=self.queue.queue_arn,
            batch_size=BATCH_SIZE,
            report_batch_item_failures=True,
            max_concurrency=max_concurrency,
        )
        self.queue.add_to_resource_policy(
            iam.PolicyStatement(
                sid="DenyOtherSenders",
                effect=iam.Effect.DENY,
                principals=[iam.AnyPrincipal()],
                actions=["sqs:SendMessage"],
                resources=[self.queue.queue_arn],
                # Both must hold to deny: not from one of the rules, and not the function's role.
                conditions={
                    "ArnNotEquals": {
                        "aws:SourceArn": [rule.rule_arn for rule in self.rules.values()],
                        "aws:PrincipalArn": [self.role.role_arn],
                    }
                },
            )
        )
        state.grant_controller_access(self.role)
        state.grant_idempotency_access(self.role)
