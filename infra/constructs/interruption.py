"""Interruption handling: EC2 and AWS Health events -> two SQS queues (+DLQs) -> interruption function.

Six EventBridge rules (Karpenter's set, and capacity block expiry) carry spot interruption
warnings, rebalance recommendations, instance state changes (only the states that take a node
away), capacity reservation interruption warnings, capacity block expiration warnings and
scheduled EC2 maintenance from AWS Health. Two queues receive them:

* the priority queue: the five rules matching `source: aws.ec2`. EventBridge refuses PutEvents
  with a source beginning `aws.` from anyone but AWS, so these rules carry only events EC2 sent,
  and the queue's policy lets only these rules send (an explicit Deny for every other principal,
  the function's role included). No forged message can stand in front of a real spot warning;
* the main queue: the AWS Health rule and the function's own drain continuations (the rule by
  `aws:SourceArn`, the function's role by `aws:PrincipalArn`; every other principal is denied).

Each queue keeps a message 300 s (a spot warning is useless after its 2 minutes), uses
SQS-managed encryption (the AWS-managed KMS key's policy cannot be edited to let EventBridge
encrypt with it), sends a message that keeps failing to its own DLQ and refuses non-TLS requests.
Every message is verified the same way whichever queue it came from (defence in depth).

The function reads batches of 10 from each queue through its own event source mapping and reports
partial batch failures; at most `max_concurrency` copies run on the main queue and
`priority_max_concurrency` on the priority queue, and the function's reserved concurrency is their
sum: a flood cannot take the account's Lambda concurrency, and a flood on the main queue cannot
take the slots the priority queue's events need. Besides cordoning and draining, it asks EC2
about the instances a message names (DescribeInstances by id, the spot request's status), may send
itself a delayed message to continue a long drain (on the main queue), invoke the provisioner
asynchronously for replacement capacity, and terminate only instances owned by this cluster (its
tag and the node instance profile).
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
from nodewright.engine.interruption.rules import interruption_rules, routes_to_priority_queue

# Rule construct id -> event pattern, built from the patterns the simulator also uses.
INTERRUPTION_EVENT_PATTERNS: Mapping[str, events.EventPattern] = {
    rule_id: events.EventPattern(
        source=pattern.get("source"), detail_type=pattern.get("detail-type"), detail=pattern.get("detail")
    )
    for rule_id, pattern in interruption_rules().items()
}
# The rules whose events only EC2 can send: they feed the priority queue.
PRIORITY_RULES = frozenset(
    rule_id for rule_id, pattern in interruption_rules().items() if routes_to_priority_queue(pattern)
)


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
    """The two queues and their DLQs, the six rules and the interruption function; all exposed as
    attributes (`queue` is the main queue, the one continuations go to).
    """

    queue: sqs.Queue
    dead_letter_queue: sqs.Queue
    priority_queue: sqs.Queue
    priority_dead_letter_queue: sqs.Queue
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
        priority_max_concurrency: int = 10,
    ) -> None:
        """Create the queue pipeline and the function; `provisioner` is invoked for replacements."""
        super().__init__(scope, construct_id)
        visibility = cdk.Duration.seconds(settings.timeout_seconds + VISIBILITY_MARGIN_SECONDS)
        self.dead_letter_queue, self.queue = self._queue_pair("", visibility)
        self.priority_dead_letter_queue, self.priority_queue = self._queue_pair("Priority", visibility)
        main_target, priority_target = _QueueTarget(self.queue), _QueueTarget(self.priority_queue)
        self.rules = {
            rule_id: events.Rule(
                self,
                rule_id,
                description=(
                    f"Nodewright ({cluster_name}): interruption signal to the "
                    f"{'priority ' if rule_id in PRIORITY_RULES else ''}queue"
                ),
                event_pattern=pattern,
                targets=[priority_target if rule_id in PRIORITY_RULES else main_target],
            )
            for rule_id, pattern in INTERRUPTION_EVENT_PATTERNS.items()
        }
        main_rules = [rule.rule_arn for rule_id, rule in self.rules.items() if rule_id not in PRIORITY_RULES]
        priority_rules = [rule.rule_arn for rule_id, rule in self.rules.items() if rule_id in PRIORITY_RULES]
        for queue, rule_arns in ((self.queue, main_rules), (self.priority_queue, priority_rules)):
            queue.add_to_resource_policy(
                iam.PolicyStatement(
                    sid="AllowInterruptionRules",
                    principals=[iam.ServicePrincipal("events.amazonaws.com")],
                    actions=["sqs:SendMessage"],
                    resources=[queue.queue_arn],
                    conditions={"ArnEquals": {"aws:SourceArn": rule_arns}},
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
        # The event source mappings poll with the function's role (Lambda Developer Guide, "Using
        # Lambda with Amazon SQS"), and the function sends itself delayed drain continuations on
        # the main queue only. The L2 SqsEventSource and grant_send_messages would add
        # ChangeMessageVisibility and GetQueueUrl, which neither makes.
        policy.allow(
            ["sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ReceiveMessage", "sqs:SendMessage"],
            [self.queue.queue_arn],
        )
        policy.allow(
            ["sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ReceiveMessage"], [self.priority_queue.queue_arn]
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
            # Each event source mapping's slots are its own: a full main queue leaves the priority
            # queue's untouched.
            reserved_concurrency=max_concurrency + priority_max_concurrency,
        )
        self.function = self.handler.function
        self.role = self.handler.role
        for source_id, queue, concurrency in (
            ("QueueSource", self.queue, max_concurrency),
            ("PriorityQueueSource", self.priority_queue, priority_max_concurrency),
        ):
            self.function.add_event_source_mapping(
                source_id,
                event_source_arn=queue.queue_arn,
                batch_size=BATCH_SIZE,
                report_batch_item_failures=True,
                max_concurrency=concurrency,
            )
        self.queue.add_to_resource_policy(
            iam.PolicyStatement(
                sid="DenyOtherSenders",
                effect=iam.Effect.DENY,
                principals=[iam.AnyPrincipal()],
                actions=["sqs:SendMessage"],
                resources=[self.queue.queue_arn],
                # Both must hold to deny: not from one of the rules, and not the function's role.
                conditions={"ArnNotEquals": {"aws:SourceArn": main_rules, "aws:PrincipalArn": [self.role.role_arn]}},
            )
        )
        self.priority_queue.add_to_resource_policy(
            iam.PolicyStatement(
                sid="DenyOtherSenders",
                effect=iam.Effect.DENY,
                principals=[iam.AnyPrincipal()],
                actions=["sqs:SendMessage"],
                resources=[self.priority_queue.queue_arn],
                # No exception for any role, the function's included: only EC2's events enter.
                conditions={"ArnNotEquals": {"aws:SourceArn": priority_rules}},
            )
        )
        state.grant_controller_access(self.role)
        state.grant_idempotency_access(self.role)

    def _queue_pair(self, prefix: str, visibility: cdk.Duration) -> tuple[sqs.Queue, sqs.Queue]:
        """A queue (`<prefix>Queue`) and its DLQ (`<prefix>DeadLetterQueue`), set up as the module says."""
        dead_letter_queue = sqs.Queue(
            self,
            f"{prefix}DeadLetterQueue",
            # Long enough for someone to look at what failed.
            retention_period=cdk.Duration.days(14),
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
        )
        queue = sqs.Queue(
            self,
            f"{prefix}Queue",
            retention_period=cdk.Duration.seconds(QUEUE_RETENTION_SECONDS),
            visibility_timeout=visibility,
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            dead_letter_queue=sqs.DeadLetterQueue(queue=dead_letter_queue, max_receive_count=QUEUE_MAX_RECEIVE_COUNT),
        )
        return dead_letter_queue, queue
