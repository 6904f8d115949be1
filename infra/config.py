"""Deployment settings for the Nodewright CDK app: one typed, frozen value per environment.

Role: the single place where deploy-time choices live. `app.py` reads CDK context (from cdk.json and
`cdk deploy -c key=value`), hands it to `load_config`, and passes the result down to the stack as
props; constructs never read context or environment variables themselves.

Contract: `load_config(context)` starts from the preset named by the `environment` key ("dev" by
default), applies every recognised key on top, validates the result and returns a `DeployConfig`.
Any problem raises `ConfigError` whose message names every offending key, so a typo in a `-c` flag
fails the synth with a readable sentence instead of a CloudFormation error ten minutes later.

This module is plain Python (no CDK import) so it can be unit-tested without starting jsii.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from nodewright.config.timings import (
    CONSOLIDATOR_MEMORY_MB,
    CONSOLIDATOR_RATE_SECONDS,
    CONSOLIDATOR_TIMEOUT_SECONDS,
    INTERRUPTION_MEMORY_MB,
    INTERRUPTION_TIMEOUT_SECONDS,
    PROVISIONER_MEMORY_MB,
    PROVISIONER_RATE_SECONDS,
    PROVISIONER_TIMEOUT_SECONDS,
    QUEUE_MAX_RECEIVE_COUNT,
    QUEUE_RETENTION_SECONDS,
    VISIBILITY_MARGIN_SECONDS,
)


class ConfigError(ValueError):
    """Raised when the deploy context does not describe a valid deployment; lists every problem."""


class RebalancePolicy(StrEnum):
    """What the interruption function does on an EC2 rebalance recommendation."""

    IGNORE = "Ignore"
    CORDON = "Cordon"
    CORDON_AND_DRAIN = "CordonAndDrain"
    REPLACE_THEN_DRAIN = "ReplaceThenDrain"


class ConsolidationMode(StrEnum):
    """Which moves the consolidator may make: `karpenter` (delete, or replace N nodes by one) or
    `nodewright` (those plus many-to-many replacement).
    """

    NODEWRIGHT = "nodewright"
    KARPENTER = "karpenter"


class VpcAccess(StrEnum):
    """How the functions reach the cluster endpoint and the AWS APIs.

    `public` (default): the functions run outside any VPC and reach a public cluster endpoint.
    `endpoints`: they run in the cluster's VPC and the stack creates the VPC endpoints they call.
    `existing`: they run in the cluster's VPC, which already routes to the AWS APIs (a NAT
    gateway, or VPC endpoints created elsewhere); the stack creates none.
    """

    PUBLIC = "public"
    ENDPOINTS = "endpoints"
    EXISTING = "existing"


class ConfigSource(StrEnum):
    """Where the functions read NodePools and EC2NodeClasses from."""

    DYNAMODB = "dynamodb"
    CRD = "crd"


# CloudWatch Logs accepts only these retention periods (days).
LOG_RETENTION_DAYS: frozenset[int] = frozenset(
    {1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653}
)
LOG_LEVELS: frozenset[str] = frozenset({"DEBUG", "INFO", "WARNING", "ERROR"})

# The queue's settings and the functions' timings come from nodewright/config/timings.py, which
# the simulator reads too. The hold a receive puts on a message (timeout + VISIBILITY_MARGIN_SECONDS)
# is how long a message waits after an invocation died on it, and a poison message must reach the
# DLQ (after QUEUE_MAX_RECEIVE_COUNT receives) before the queue's retention drops it.
MAX_INTERRUPTION_TIMEOUT_SECONDS = QUEUE_RETENTION_SECONDS // QUEUE_MAX_RECEIVE_COUNT - VISIBILITY_MARGIN_SECONDS

_CLUSTER_NAME = re.compile(r"^[0-9A-Za-z][A-Za-z0-9_-]{0,99}$")
_ACCOUNT = re.compile(r"^\d{12}$")
_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d$")
_SNS_TOPIC_ARN = re.compile(r"^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}(\.fifo)?$")
_TAG_KEY = re.compile(r"^[\w .:/=+\-@]{1,128}$")
_VPC_ID = re.compile(r"^vpc-[0-9a-f]{8,17}$")
_SUBNET_ID = re.compile(r"^subnet-[0-9a-f]{8,17}$")
_SECURITY_GROUP_ID = re.compile(r"^sg-[0-9a-f]{8,17}$")
_ROUTE_TABLE_ID = re.compile(r"^rtb-[0-9a-f]{8,17}$")
_ROLE_NAME = re.compile(r"^[\w+=,.@-]{1,64}$")
_ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/([\w+=,.@-]+/)*[\w+=,.@-]{1,64}$")
_TAG_VALUE = re.compile(r"^[\w .:/=+\-@]{0,256}$")
_INSTANCE_PROFILE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:instance-profile/[\w+=,.@/-]{1,128}$")


@dataclass(frozen=True, kw_only=True)
class FunctionConfig:
    """Memory and timeout of one Lambda function."""

    memory_mb: int
    timeout_seconds: int


@dataclass(frozen=True, kw_only=True)
class DeployConfig:
    """Everything that differs between two Nodewright installations.

    `account` and `region` may be None: the stack is then environment-agnostic and the CLI's
    credentials decide where it goes. `discovery_tag_value` defaults to the cluster name, as
    Karpenter's `karpenter.sh/discovery: <cluster>` convention does.
    """

    environment: str
    cluster_name: str
    account: str | None = None
    region: str | None = None
    provisioner_rate_minutes: int = PROVISIONER_RATE_SECONDS // 60
    consolidator_rate_minutes: int = CONSOLIDATOR_RATE_SECONDS // 60
    # The provisioner's loop stops 10 s before its timeout; 68 s ends it at 58 s, just before the
    # next one-minute tick, so the tick does not find it running and get throttled (Lambda would
    # retry it 1, 2, 4, 8... s later) unless a last pass overruns, and its lease expires with it.
    # `python -m bench.provisioner_latency` measured 90 s missing the p99 goal on steady streams,
    # 68 s meeting it.
    provisioner: FunctionConfig = FunctionConfig(
        memory_mb=PROVISIONER_MEMORY_MB, timeout_seconds=PROVISIONER_TIMEOUT_SECONDS
    )
    interruption: FunctionConfig = FunctionConfig(
        memory_mb=INTERRUPTION_MEMORY_MB, timeout_seconds=INTERRUPTION_TIMEOUT_SECONDS
    )
    consolidator: FunctionConfig = FunctionConfig(
        memory_mb=CONSOLIDATOR_MEMORY_MB, timeout_seconds=CONSOLIDATOR_TIMEOUT_SECONDS
    )
    discovery_tag_key: str = "nodewright.io/discovery"
    discovery_tag_value: str = ""
    config_source: ConfigSource = ConfigSource.DYNAMODB
    log_retention_days: int = 30
    log_level: str = "INFO"
    rebalance_policy: RebalancePolicy = RebalancePolicy.REPLACE_THEN_DRAIN
    alarm_topic_arn: str | None = None
    bundle_dependencies: bool = True
    consolidation_mode: ConsolidationMode = ConsolidationMode.NODEWRIGHT
    # The stability guard: a consolidation move must save at least this $/h and this percentage
    # of the removed nodes' price, so small savings do not churn pods (Karpenter #7146).
    consolidation_min_savings: float = 0.0
    consolidation_min_savings_percent: float = 0.0
    # Node repair: no repair in a NodePool, nor anywhere when the cluster is past it, while more
    # than this percentage of the nodes is unhealthy (Karpenter's 20%, rounded up; 0: repair off).
    repair_max_unhealthy_percent: int = 20
    # Economy: the provisioner ends its invocation after this many seconds with no pod waiting
    # (None: it waits until its deadline, and a new pod gets capacity in about a second; with
    # 0 an idle cluster's provisioner runs about a second a minute, and the first pod after a
    # quiet spell waits for the next tick, up to a minute).
    provisioner_idle_exit_seconds: float | None = None
    # A pod's nomination becomes a Nominated Event once it has waited this many seconds (0: every
    # nomination, as Karpenter; each is an API request, and a pod that waited is the one looked at).
    nominate_after_seconds: float = 30.0
    # Launch guards enforced by IAM (deny statements on the launching roles): every instance
    # requires IMDSv2 tokens, every volume is encrypted. An EC2NodeClass asking otherwise fails to
    # launch; turn a guard off only for a NodeClass that truly needs it.
    require_imdsv2: bool = True
    require_encrypted_volumes: bool = True
    # Session Manager on the nodes (AmazonSSMManagedInstanceCore on the node role): EKS does not
    # need it, and it gives a shell on every node to whoever may start sessions. Off by default.
    node_session_manager: bool = False
    # Private-endpoint clusters (docs/deploy.md, "Private cluster endpoint"): where the functions
    # run and how they reach the AWS APIs. Each id left empty is discovered at deploy time from
    # DescribeCluster's resourcesVpcConfig (and the subnets' route tables).
    # Whether `cdk destroy` keeps the config table (with deletion protection), as by default.
    retain_config_table: bool = True
    # Node roles (names, or ARNs for a role with a path) an EC2NodeClass's `role` may name besides
    # the stack's own node role: the roles Karpenter users already have (KarpenterNodeRole-<cluster>,
    # with their own policies and access entry). The functions may pass exactly these.
    node_roles: tuple[str, ...] = ()
    # Karpenter's SpotToSpotConsolidation feature gate. On here (Karpenter: off): one spot node is
    # replaced by a cheaper spot node only with 15 cheaper types and among the 15 cheapest, the
    # rule Karpenter applies when the gate is on. `false` behaves as a default Karpenter does.
    spot_to_spot_consolidation: bool = True
    # The consolidator writes pod deletion costs so scale-downs empty nodes (needs patch on pods).
    deletion_cost_steering: bool = True
    vpc_access: VpcAccess = VpcAccess.PUBLIC
    vpc_id: str | None = None
    vpc_subnet_ids: tuple[str, ...] = ()
    vpc_security_group_ids: tuple[str, ...] = ()
    vpc_route_table_ids: tuple[str, ...] = ()
    # Floods: at most this many interruption functions run at once on the main queue (its event
    # source's maximum concurrency, 2-1000), and at most `interruption_priority_max_concurrency`
    # on the priority queue (EC2's own events); the function reserves their sum. A flood of
    # messages cannot take the account's whole Lambda concurrency, nor the slots EC2's events
    # need, and a spot storm is still handled in parallel.
    interruption_max_concurrency: int = 10
    interruption_priority_max_concurrency: int = 10
    # Launches use only images owned by Amazon or by these accounts (the `ec2:Owner` condition on
    # CreateFleet/RunInstances): an EC2NodeClass selecting another account's AMI fails to launch.
    image_owner_accounts: tuple[str, ...] = ()
    # TerminateInstances is allowed only on instances with the stack's node instance profile (the
    # `ec2:InstanceProfile` condition), or one of these (the ARNs of the profiles an EC2NodeClass
    # names in `instanceProfile`).
    node_instance_profile_arns: tuple[str, ...] = ()

    @property
    def stack_name(self) -> str:
        """CloudFormation stack name: one Nodewright stack per cluster and account/region."""
        return f"Nodewright-{self.cluster_name}"

    @property
    def effective_discovery_tag_value(self) -> str:
        """The discovery tag value subnets and security groups must carry."""
        return self.discovery_tag_value or self.cluster_name


# Presets: `-c environment=prod` picks one, then individual keys override it.
ENVIRONMENTS: Mapping[str, DeployConfig] = {
    "dev": DeployConfig(environment="dev", cluster_name="demo", log_retention_days=14, log_level="DEBUG"),
    "prod": DeployConfig(environment="prod", cluster_name="demo", log_retention_days=90, log_level="INFO"),
}


def _as_int(value: object) -> int:
    if isinstance(value, bool):
        raise ValueError("expected an integer, got a boolean")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        return int(value)
    raise ValueError(f"expected an integer, got {value!r}")


def _as_float(value: object) -> float:
    if isinstance(value, bool):
        raise ValueError("expected a number, got a boolean")
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            pass
    raise ValueError(f"expected a number, got {value!r}")


def _as_bool(value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in {"true", "false", "1", "0", "yes", "no"}:
        return value.strip().lower() in {"true", "1", "yes"}
    raise ValueError(f"expected true or false, got {value!r}")


def _as_str(value: object) -> str:
    if isinstance(value, str):
        return value.strip()
    raise ValueError(f"expected a string, got {value!r}")


def _as_optional_str(value: object) -> str | None:
    text = _as_str(value) if value is not None else ""
    return text or None


def _as_id_list(value: object) -> tuple[str, ...]:
    """A comma-separated string (from `-c key=a,b`) or a JSON list (from cdk.json) of ids."""
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    if isinstance(value, (list, tuple)) and all(isinstance(item, str) for item in value):
        return tuple(item.strip() for item in value if item.strip())
    raise ValueError(f"expected a comma-separated list of ids, got {value!r}")


def _as_enum(kind: type[StrEnum]) -> Callable[[object], StrEnum]:
    def parse(value: object) -> StrEnum:
        text = _as_str(value)
        for member in kind:
            if member.value.lower() == text.lower():
                return member
        raise ValueError(f"expected one of {', '.join(m.value for m in kind)}, got {text!r}")

    return parse


# context key -> (field path, parser). Field paths with a dot address a FunctionConfig field.
_KEYS: Mapping[str, tuple[str, Callable[[object], Any]]] = {
    "clusterName": ("cluster_name", _as_str),
    "account": ("account", _as_optional_str),
    "region": ("region", _as_optional_str),
    "provisionerRateMinutes": ("provisioner_rate_minutes", _as_int),
    "consolidatorRateMinutes": ("consolidator_rate_minutes", _as_int),
    "provisionerMemoryMb": ("provisioner.memory_mb", _as_int),
    "provisionerTimeoutSeconds": ("provisioner.timeout_seconds", _as_int),
    "interruptionMemoryMb": ("interruption.memory_mb", _as_int),
    "interruptionTimeoutSeconds": ("interruption.timeout_seconds", _as_int),
    "consolidatorMemoryMb": ("consolidator.memory_mb", _as_int),
    "consolidatorTimeoutSeconds": ("consolidator.timeout_seconds", _as_int),
    "discoveryTagKey": ("discovery_tag_key", _as_str),
    "discoveryTagValue": ("discovery_tag_value", _as_str),
    "configSource": ("config_source", _as_enum(ConfigSource)),
    "logRetentionDays": ("log_retention_days", _as_int),
    "logLevel": ("log_level", lambda value: _as_str(value).upper()),
    "rebalancePolicy": ("rebalance_policy", _as_enum(RebalancePolicy)),
    "alarmTopicArn": ("alarm_topic_arn", _as_optional_str),
    "bundle": ("bundle_dependencies", _as_bool),
    "consolidationMode": ("consolidation_mode", _as_enum(ConsolidationMode)),
    "consolidationMinSavings": ("consolidation_min_savings", _as_float),
    "consolidationMinSavingsPercent": ("consolidation_min_savings_percent", _as_float),
    "repairMaxUnhealthyPercent": ("repair_max_unhealthy_percent", _as_int),
    "provisionerIdleExitSeconds": ("provisioner_idle_exit_seconds", _as_float),
    "nominateAfterSeconds": ("nominate_after_seconds", _as_float),
    "requireImdsv2": ("require_imdsv2", _as_bool),
    "requireEncryptedVolumes": ("require_encrypted_volumes", _as_bool),
    "nodeSessionManager": ("node_session_manager", _as_bool),
    "retainConfigTable": ("retain_config_table", _as_bool),
    "nodeRoles": ("node_roles", _as_id_list),
    "spotToSpotConsolidation": ("spot_to_spot_consolidation", _as_bool),
    "deletionCostSteering": ("deletion_cost_steering", _as_bool),
    "vpcAccess": ("vpc_access", _as_enum(VpcAccess)),
    "vpcId": ("vpc_id", _as_optional_str),
    "vpcSubnetIds": ("vpc_subnet_ids", _as_id_list),
    "vpcSecurityGroupIds": ("vpc_security_group_ids", _as_id_list),
    "vpcRouteTableIds": ("vpc_route_table_ids", _as_id_list),
    "interruptionMaxConcurrency": ("interruption_max_concurrency", _as_int),
    "interruptionPriorityMaxConcurrency": ("interruption_priority_max_concurrency", _as_int),
    "imageOwnerAccounts": ("image_owner_accounts", _as_id_list),
    "nodeInstanceProfileArns": ("node_instance_profile_arns", _as_id_list),
}

CONTEXT_KEYS: frozenset[str] = frozenset({"environment", *_KEYS})


def load_config(context: Mapping[str, object]) -> DeployConfig:
    """Build and validate the deployment settings from CDK context values.

    `context` holds only the keys the caller found (absent keys keep the preset's value); values
    may be strings (from `-c key=value`) or JSON values (from cdk.json). Raises `ConfigError`
    listing every invalid key.
    """
    errors: list[str] = []
    environment = str(context.get("environment") or "dev").strip()
    if environment not in ENVIRONMENTS:
        raise ConfigError(f"context key 'environment': expected one of {', '.join(ENVIRONMENTS)}, got {environment!r}")
    config = ENVIRONMENTS[environment]

    top: dict[str, Any] = {}
    nested: dict[str, dict[str, Any]] = {}
    for key, value in context.items():
        if key not in _KEYS or value is None:
            continue
        field, parse = _KEYS[key]
        try:
            parsed = parse(value)
        except ValueError as error:
            errors.append(f"context key '{key}': {error}")
            continue
        if "." in field:
            function, attribute = field.split(".", 1)
            nested.setdefault(function, {})[attribute] = parsed
        else:
            top[field] = parsed
    for function, changes in nested.items():
        top[function] = dataclasses.replace(getattr(config, function), **changes)
    config = dataclasses.replace(config, **top)
    # Report unparseable and invalid values together: one failed synth shows every problem.
    problems = errors + validate(config)
    if problems:
        raise ConfigError("invalid deploy configuration:\n  " + "\n  ".join(problems))
    return config


def validate(config: DeployConfig) -> list[str]:
    """Return one sentence per invalid setting (empty when the configuration is deployable)."""
    problems: list[str] = []
    if not _CLUSTER_NAME.match(config.cluster_name):
        problems.append(
            f"context key 'clusterName': {config.cluster_name!r} is not an EKS cluster name "
            "(1-100 letters, digits, '-' or '_', starting with a letter or digit)"
        )
    if config.account is not None and not _ACCOUNT.match(config.account):
        problems.append(f"context key 'account': {config.account!r} is not a 12-digit AWS account id")
    if config.region is not None and not _REGION.match(config.region):
        problems.append(f"context key 'region': {config.region!r} is not an AWS region name such as eu-west-1")
    for key, rate in (
        ("provisionerRateMinutes", config.provisioner_rate_minutes),
        ("consolidatorRateMinutes", config.consolidator_rate_minutes),
    ):
        if not 1 <= rate <= 60:
            problems.append(f"context key '{key}': {rate} is outside 1-60 (EventBridge rates are whole minutes)")
    for name in ("provisioner", "interruption", "consolidator"):
        function: FunctionConfig = getattr(config, name)
        if not 128 <= function.memory_mb <= 10240:
            problems.append(f"context key '{name}MemoryMb': {function.memory_mb} is outside Lambda's 128-10240 MB")
        if not 3 <= function.timeout_seconds <= 900:
            problems.append(f"context key '{name}TimeoutSeconds': {function.timeout_seconds} is outside 3-900 s")
    if config.interruption.timeout_seconds > MAX_INTERRUPTION_TIMEOUT_SECONDS:
        problems.append(
            f"context key 'interruptionTimeoutSeconds': {config.interruption.timeout_seconds} is above "
            f"{MAX_INTERRUPTION_TIMEOUT_SECONDS} s: the queue keeps messages {QUEUE_RETENTION_SECONDS} s and a "
            f"failing message must survive {QUEUE_MAX_RECEIVE_COUNT} receives to reach the dead-letter queue"
        )
    if not _TAG_KEY.match(config.discovery_tag_key) or config.discovery_tag_key.lower().startswith("aws:"):
        problems.append(
            f"context key 'discoveryTagKey': {config.discovery_tag_key!r} is not a valid EC2 tag key "
            "(1-128 characters, not starting with 'aws:')"
        )
    if not _TAG_VALUE.match(config.discovery_tag_value):
        problems.append(f"context key 'discoveryTagValue': {config.discovery_tag_value!r} is not a valid EC2 tag value")
    if not 0 <= config.consolidation_min_savings <= 1000:
        problems.append(
            f"context key 'consolidationMinSavings': {config.consolidation_min_savings} is outside 0-1000 $/h"
        )
    if not 0 <= config.consolidation_min_savings_percent <= 100:
        problems.append(
            f"context key 'consolidationMinSavingsPercent': {config.consolidation_min_savings_percent} is outside 0-100"
        )
    if not 0 <= config.repair_max_unhealthy_percent <= 100:
        problems.append(
            f"context key 'repairMaxUnhealthyPercent': {config.repair_max_unhealthy_percent} is outside 0-100"
        )
    if not 0 <= config.nominate_after_seconds <= 3600:
        problems.append(f"context key 'nominateAfterSeconds': {config.nominate_after_seconds} is outside 0-3600")
    idle_exit = config.provisioner_idle_exit_seconds
    if idle_exit is not None and not 0 <= idle_exit <= config.provisioner.timeout_seconds:
        problems.append(
            f"context key 'provisionerIdleExitSeconds': {idle_exit} is outside 0-{config.provisioner.timeout_seconds} "
            "(the provisioner's timeout)"
        )
    if config.log_retention_days not in LOG_RETENTION_DAYS:
        allowed = ", ".join(str(days) for days in sorted(LOG_RETENTION_DAYS))
        problems.append(f"context key 'logRetentionDays': {config.log_retention_days} is not one of {allowed}")
    if config.log_level not in LOG_LEVELS:
        problems.append(f"context key 'logLevel': {config.log_level!r} is not one of {', '.join(sorted(LOG_LEVELS))}")
    if config.alarm_topic_arn is not None and not _SNS_TOPIC_ARN.match(config.alarm_topic_arn):
        problems.append(f"context key 'alarmTopicArn': {config.alarm_topic_arn!r} is not an SNS topic ARN")
    for key, value in (
        ("interruptionMaxConcurrency", config.interruption_max_concurrency),
        ("interruptionPriorityMaxConcurrency", config.interruption_priority_max_concurrency),
    ):
        if not 2 <= value <= 1000:
            problems.append(
                f"context key '{key}': {value} is outside 2-1000 (the SQS event source's maximum concurrency)"
            )
    bad_owners = [owner for owner in config.image_owner_accounts if not _ACCOUNT.match(owner)]
    if bad_owners:
        problems.append(f"context key 'imageOwnerAccounts': {', '.join(map(repr, bad_owners))} is not an account id")
    bad_profiles = [arn for arn in config.node_instance_profile_arns if not _INSTANCE_PROFILE_ARN.match(arn)]
    if bad_profiles:
        problems.append(
            f"context key 'nodeInstanceProfileArns': {', '.join(map(repr, bad_profiles))} "
            "is not an instance profile ARN"
        )
    for role in config.node_roles:
        if not (_ROLE_NAME.match(role) or _ROLE_ARN.match(role)):
            problems.append(f"context key 'nodeRoles': {role!r} is neither an IAM role name nor a role ARN")
    problems.extend(_vpc_problems(config))
    return problems


def _vpc_problems(config: DeployConfig) -> list[str]:
    problems: list[str] = []
    ids: tuple[tuple[str, re.Pattern[str], str, tuple[str, ...]], ...] = (
        ("vpcId", _VPC_ID, "VPC id (vpc-...)", (config.vpc_id,) if config.vpc_id else ()),
        ("vpcSubnetIds", _SUBNET_ID, "subnet id (subnet-...)", config.vpc_subnet_ids),
        ("vpcSecurityGroupIds", _SECURITY_GROUP_ID, "security group id (sg-...)", config.vpc_security_group_ids),
        ("vpcRouteTableIds", _ROUTE_TABLE_ID, "route table id (rtb-...)", config.vpc_route_table_ids),
    )
    for key, pattern, noun, values in ids:
        bad = [value for value in values if not pattern.match(value)]
        if bad:
            problems.append(f"context key '{key}': {', '.join(map(repr, bad))} is not a {noun}")
        if values and config.vpc_access is VpcAccess.PUBLIC:
            problems.append(f"context key '{key}': only used with vpcAccess endpoints or existing (it is public)")
    if len(config.vpc_subnet_ids) > 16:
        problems.append("context key 'vpcSubnetIds': Lambda accepts at most 16 subnets")
    if len(config.vpc_security_group_ids) > 5:
        problems.append("context key 'vpcSecurityGroupIds': Lambda accepts at most 5 security groups")
    return problems
