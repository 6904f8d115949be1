"""What an operator watches: a dashboard, alarms and saved Logs Insights queries.

Metrics come from the functions as Powertools EMF in namespace `Nodewright`, with the `service`
dimension Powertools adds (the function's POWERTOOLS_SERVICE_NAME). `SERVICE_METRICS` is the
contract with the handlers: which service emits which metric. Alarms notify an SNS topic: the one
the deploy key `alarmTopicArn` names, or else one the stack creates (`alarm_topic`; subscribe to
it), so an alarm is never silent. They fire on: a DLQ not empty, function errors, pods pending
for 5 minutes, an interruption queue's oldest message older than 30 s (a spot warning gives 120
s; one alarm per queue, the main and the priority one), interruption records failed, drain
continuations rejected, and messages dropped as stale or contradicted by EC2 (forged or replayed
ones show here). The saved queries assume the handlers
log one record per decision with a `decision` field (Powertools structured logging).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.constructs.function import METRICS_NAMESPACE

PROVISIONER, INTERRUPTION, CONSOLIDATOR = "provisioner", "interruption", "consolidator"
# What each function costs the API server (totals; the same names per verb and resource too).
KUBE_API_METRICS = ("KubeApiRequests", "KubeApiBytes")
SERVICE_METRICS: Mapping[str, tuple[str, ...]] = {
    PROVISIONER: (
        "PendingPods",
        "NodesLaunched",
        "LaunchFailures",
        "SchedulingSeconds",
        "PendingToLaunchSeconds",
        "ClusterHourlyCost",
        "NodesTerminated",
        "MirrorFailures",
        *KUBE_API_METRICS,
    ),
    INTERRUPTION: (
        "InterruptionsReceived",
        "NodesCordoned",
        "PodsEvicted",
        "EvictionsBlockedByPDB",
        "MessageAgeSeconds",
        "MessagesDropped",
        "UnconfirmedMessages",
        "ForeignInstanceMessages",
        "ContinuationsRejected",
        "RecordsFailed",
        *KUBE_API_METRICS,
    ),
    CONSOLIDATOR: (
        "ConsolidationSavingsPerHour",
        "NodesDisrupted",
        "CommandsFailed",
        "EligibleNodes",
        "NodesCordoned",
        "PodsEvicted",
        "EvictionsBlockedByPDB",
        "MirrorFailures",
        *KUBE_API_METRICS,
    ),
}
PENDING_ALARM_MINUTES = 5
# The age of the interruption queue's oldest message that alarms: a quarter of a spot warning's
# two minutes already spent waiting.
OLDEST_MESSAGE_ALARM_SECONDS = 30
_MINUTE = cdk.Duration.minutes(1)
_FIVE_MINUTES = cdk.Duration.minutes(5)


def nodewright_metric(
    service: str, name: str, *, statistic: str = "Sum", label: str | None = None
) -> cloudwatch.Metric:
    """A Nodewright EMF metric as Powertools publishes it (namespace + `service` dimension), per minute."""
    if name not in SERVICE_METRICS[service]:
        raise ValueError(f"{service} does not emit {name} (see SERVICE_METRICS)")
    return cloudwatch.Metric(
        namespace=METRICS_NAMESPACE,
        metric_name=name,
        dimensions_map={"service": service},
        statistic=statistic,
        period=_MINUTE,
        # A label turns an alarm's metric into the "Metrics" (math) form; only graphs get one.
        label=label,
    )


class Monitoring(Construct):
    """Dashboard, alarms and query definitions; exposes `dashboard`, `alarms` and `queries`."""

    dashboard: cloudwatch.Dashboard
    alarms: list[cloudwatch.Alarm]
    queries: list[logs.QueryDefinition]
    # The topic the stack created for the alarms (None when `alarm_topic_arn` names one).
    alarm_topic: sns.Topic | None

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster_name: str,
        functions: Mapping[str, lambda_.IFunction],
        log_groups: Sequence[logs.ILogGroup],
        queues: Mapping[str, tuple[sqs.IQueue, sqs.IQueue]],
        alarm_topic_arn: str | None,
    ) -> None:
        """Observe `functions` (keyed by service name), their `log_groups` and the interruption
        `queues`: name prefix ("" for the main queue, "Priority") -> (queue, its DLQ).
        """
        super().__init__(scope, construct_id)
        self.alarms = []
        self.alarm_topic = None
        if alarm_topic_arn:
            topic: sns.ITopic = sns.Topic.from_topic_arn(self, "AlarmTopic", alarm_topic_arn)
        else:
            self.alarm_topic = sns.Topic(
                self, "Alarms", display_name=f"Nodewright ({cluster_name}) alarms", enforce_ssl=True
            )
            topic = self.alarm_topic
        self._alarm_action: actions.SnsAction | None = actions.SnsAction(topic)
        dlq_alarms = [
            self._alarm(
                f"{prefix}DeadLetterQueueNotEmpty",
                description=(
                    f"Nodewright ({cluster_name}): {_queue_name(prefix)} messages failed 3 times and sit in its DLQ"
                ),
                metric=dead_letter_queue.metric_approximate_number_of_messages_visible(
                    period=_FIVE_MINUTES, statistic="Maximum"
                ),
                evaluation_periods=1,
            )
            for prefix, (_, dead_letter_queue) in queues.items()
        ]
        error_alarms = [
            self._alarm(
                f"{service.capitalize()}Errors",
                description=f"Nodewright ({cluster_name}): the {service} function failed",
                metric=function.metric_errors(period=_FIVE_MINUTES, statistic="Sum"),
                evaluation_periods=1,
            )
            for service, function in functions.items()
        ]
        pending_alarm = self._alarm(
            "PodsPending",
            description=(
                f"Nodewright ({cluster_name}): pods have been pending for {PENDING_ALARM_MINUTES} minutes "
                "(every minute in the window saw at least one)"
            ),
            # Minimum >= 1 in every minute of the window = never back to zero pending pods.
            metric=nodewright_metric(PROVISIONER, "PendingPods", statistic="Minimum"),
            evaluation_periods=PENDING_ALARM_MINUTES,
        )
        guard_alarms = [
            *(
                self._alarm(
                    f"Interruption{prefix}QueueOldestMessage",
                    description=(
                        f"Nodewright ({cluster_name}): a message waited over {OLDEST_MESSAGE_ALARM_SECONDS} s "
                        f"in the {_queue_name(prefix)} (a spot warning gives 120 s)"
                    ),
                    metric=queue.metric_approximate_age_of_oldest_message(period=_MINUTE, statistic="Maximum"),
                    evaluation_periods=1,
                    threshold=OLDEST_MESSAGE_ALARM_SECONDS,
                    above=True,
                )
                for prefix, (queue, _) in queues.items()
            ),
            *(
                self._alarm(
                    f"Interruption{name}",
                    description=f"Nodewright ({cluster_name}): {what}",
                    metric=nodewright_metric(INTERRUPTION, name),
                    evaluation_periods=1,
                )
                for name, what in (
                    ("RecordsFailed", "interruption records failed and will be redelivered"),
                    ("ContinuationsRejected", "drain continuations no drain record admits (forged, or late)"),
                    ("MessagesDropped", "interruption messages dropped as stale or contradicted by EC2"),
                )
            ),
        ]
        self.queries = self._queries(cluster_name, log_groups)
        self.dashboard = cloudwatch.Dashboard(
            self,
            "Dashboard",
            # Dashboards are global to the account: the region keeps two installs of one cluster name apart.
            dashboard_name=f"Nodewright-{cluster_name}-{cdk.Aws.REGION}",
            default_interval=cdk.Duration.hours(3),
        )
        self._add_widgets(functions, queues, [*dlq_alarms, pending_alarm, *error_alarms, *guard_alarms])

    def _alarm(
        self,
        construct_id: str,
        *,
        description: str,
        metric: cloudwatch.IMetric,
        evaluation_periods: int,
        threshold: float = 1,
        above: bool = False,
    ) -> cloudwatch.Alarm:
        """An alarm on `metric` reaching `threshold` (passing it, with `above`)."""
        comparison = cloudwatch.ComparisonOperator
        operator = comparison.GREATER_THAN_THRESHOLD if above else comparison.GREATER_THAN_OR_EQUAL_TO_THRESHOLD
        alarm = cloudwatch.Alarm(
            self,
            construct_id,
            alarm_description=description,
            metric=metric,
            threshold=threshold,
            comparison_operator=operator,
            evaluation_periods=evaluation_periods,
            # No data means no pending pods / no failures: a quiet cluster is healthy.
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        if self._alarm_action is not None:
            alarm.add_alarm_action(self._alarm_action)
            alarm.add_ok_action(self._alarm_action)
        self.alarms.append(alarm)
        return alarm

    def _queries(self, cluster_name: str, log_groups: Sequence[logs.ILogGroup]) -> list[logs.QueryDefinition]:
        fields = ["@timestamp", "service", "level", "decision", "message"]
        decision = "ispresent(decision)"
        searches = {
            "Decisions": [decision],
            "Launches": [decision, f'service = "{PROVISIONER}"'],
            "Interruptions": [decision, f'service = "{INTERRUPTION}"'],
            "Consolidation": [decision, f'service = "{CONSOLIDATOR}"'],
            "Errors": ['level = "ERROR" or @message like /Task timed out/'],
        }
        return [
            logs.QueryDefinition(
                self,
                f"{name}Query",
                query_definition_name=f"Nodewright/{cluster_name}/{name}",
                query_string=logs.QueryString(
                    fields=fields, filter_statements=filters, sort="@timestamp desc", limit=500
                ),
                log_groups=list(log_groups),
            )
            for name, filters in searches.items()
        ]

    def _add_widgets(
        self,
        functions: Mapping[str, lambda_.IFunction],
        queues: Mapping[str, tuple[sqs.IQueue, sqs.IQueue]],
        alarms: Sequence[cloudwatch.Alarm],
    ) -> None:
        def shown(service: str, name: str, *, statistic: str = "Sum", label: str | None = None) -> cloudwatch.Metric:
            return nodewright_metric(service, name, statistic=statistic, label=label or f"{name} ({service})")

        def graph(title: str, metrics: Sequence[cloudwatch.IMetric], *, width: int = 8) -> cloudwatch.GraphWidget:
            return cloudwatch.GraphWidget(title=title, left=list(metrics), width=width, height=6)

        evictions = [
            shown(service, name)
            for service in (INTERRUPTION, CONSOLIDATOR)
            for name in ("PodsEvicted", "EvictionsBlockedByPDB")
        ]
        self.dashboard.add_widgets(
            cloudwatch.AlarmStatusWidget(title="Alarms", alarms=list(alarms), width=24, height=3)
        )
        self.dashboard.add_widgets(
            graph("Pending pods", [shown(PROVISIONER, "PendingPods", statistic="Maximum")]),
            graph(
                "Launches and failures",
                [
                    shown(PROVISIONER, "NodesLaunched"),
                    shown(PROVISIONER, "NodesTerminated"),
                    shown(PROVISIONER, "LaunchFailures"),
                ],
            ),
            graph(
                "Scheduling and pending-to-launch (p90, s)",
                [
                    shown(PROVISIONER, "SchedulingSeconds", statistic="p90"),
                    shown(PROVISIONER, "PendingToLaunchSeconds", statistic="p90"),
                ],
            ),
        )
        self.dashboard.add_widgets(
            graph(
                "Cost and savings ($/h)",
                [
                    shown(PROVISIONER, "ClusterHourlyCost", statistic="Average", label="Cluster $/h"),
                    shown(CONSOLIDATOR, "ConsolidationSavingsPerHour", label="Savings $/h (consolidation)"),
                ],
            ),
            graph(
                "Consolidation",
                [
                    shown(CONSOLIDATOR, "EligibleNodes", statistic="Average"),
                    shown(CONSOLIDATOR, "NodesDisrupted"),
                    shown(CONSOLIDATOR, "CommandsFailed"),
                ],
            ),
            graph(
                "Interruptions",
                [
                    shown(INTERRUPTION, "InterruptionsReceived"),
                    shown(INTERRUPTION, "NodesCordoned"),
                    shown(INTERRUPTION, "MessageAgeSeconds", statistic="Maximum"),
                    shown(INTERRUPTION, "MessagesDropped"),
                    shown(INTERRUPTION, "UnconfirmedMessages"),
                    shown(INTERRUPTION, "ContinuationsRejected"),
                    shown(INTERRUPTION, "RecordsFailed"),
                ],
            ),
        )
        self.dashboard.add_widgets(
            graph(
                "Kubernetes API requests (per minute)",
                [shown(service, "KubeApiRequests") for service in (PROVISIONER, CONSOLIDATOR, INTERRUPTION)],
                width=12,
            ),
            graph(
                "Kubernetes API bytes received (per minute)",
                [shown(service, "KubeApiBytes") for service in (PROVISIONER, CONSOLIDATOR, INTERRUPTION)],
                width=12,
            ),
        )
        self.dashboard.add_widgets(
            graph("Evictions", evictions),
            graph(
                "Function errors",
                [function.metric_errors(period=_MINUTE, label=service) for service, function in functions.items()],
            ),
            graph(
                "Function duration (max, ms)",
                [
                    function.metric_duration(period=_MINUTE, statistic="Maximum", label=service)
                    for service, function in functions.items()
                ],
            ),
        )
        self.dashboard.add_widgets(
            *(
                graph(
                    _queue_name(prefix).capitalize(),
                    [
                        queue.metric_approximate_number_of_messages_visible(label="queue"),
                        queue.metric_approximate_age_of_oldest_message(label="oldest (s)"),
                        dead_letter_queue.metric_approximate_number_of_messages_visible(label="DLQ"),
                    ],
                    width=24 // len(queues),
                )
                for prefix, (queue, dead_letter_queue) in queues.items()
            )
        )


def _queue_name(prefix: str) -> str:
    """How the descriptions name the queue with this construct-id prefix."""
    return f"{prefix.lower()} interruption queue" if prefix else "interruption queue"
