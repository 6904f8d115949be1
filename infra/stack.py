"""The Nodewright stack: composes the constructs and wires them together, nothing else.

Order matters only through references: the tables and the node identity exist first, the
provisioner before the interruption function (which invokes it), and each function role gets its
EKS access entry last. All settings arrive as a `DeployConfig` chosen in app.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aws_cdk as cdk
from constructs import Construct

from infra.bundling import function_code
from infra.config import DeployConfig, VpcAccess
from infra.constructs.access import ClusterAccess
from infra.constructs.consolidator import CONSOLIDATOR_FUNCTION
from infra.constructs.interruption import Interruption
from infra.constructs.monitoring import CONSOLIDATOR, INTERRUPTION, PROVISIONER, Monitoring
from infra.constructs.network import ClusterNetwork
from infra.constructs.provisioner import PROVISIONER_FUNCTION
from infra.constructs.scheduled import ScheduledController
from infra.constructs.state import State


class NodewrightStack(cdk.Stack):
    """Everything one cluster's Nodewright installation needs, in one CloudFormation stack."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: DeployConfig,
        source_root: Path,
        env: cdk.Environment | None = None,
    ) -> None:
        """Compose the installation described by `config`; code is bundled from `source_root`."""
        super().__init__(
            scope,
            construct_id,
            env=env,
            description=f"Nodewright serverless node autoscaler for EKS cluster {config.cluster_name}",
        )
        cluster = config.cluster_name
        code = function_code(source_root=source_root, install_dependencies=config.bundle_dependencies)
        self.state = State(self, "State", retain_config_table=config.retain_config_table)
        # The node roles an EC2NodeClass may name besides the stack's own (deploy key nodeRoles).
        self.node_roles = config.node_roles
        self.access = ClusterAccess(self, "Access", cluster_name=cluster, session_manager=config.node_session_manager)
        # The same settings for every function, so the runtime's Settings.from_env is uniform.
        environment = {
            "CLUSTER_NAME": cluster,
            "CONFIG_SOURCE": config.config_source.value,
            "CONFIG_TABLE_NAME": self.state.config_table.table_name,
            "STATE_TABLE_NAME": self.state.state_table.table_name,
            "IDEMPOTENCY_TABLE_NAME": self.state.idempotency_table.table_name,
            "NODE_ROLE_ARN": self.access.node_role.role_arn,
            "NODE_INSTANCE_PROFILE": self.access.instance_profile.instance_profile_name,
            "DISCOVERY_TAG_KEY": config.discovery_tag_key,
            "DISCOVERY_TAG_VALUE": config.effective_discovery_tag_value,
            "REBALANCE_POLICY": config.rebalance_policy.value,
            **({"NODE_ROLES": ",".join(config.node_roles)} if config.node_roles else {}),
        }
        # What a launch may reference and a termination may touch (infra/constructs/permissions.py).
        profiles = (self.access.instance_profile.instance_profile_arn, *config.node_instance_profile_arns)
        if config.node_roles:
            # The profiles the functions keep for the nodeRoles (nodewright.adapters.aws.instance_profiles).
            profiles += (
                self.format_arn(
                    service="iam",
                    region="",
                    resource="instance-profile",
                    resource_name=f"nodewright/{config.cluster_name}/*",
                ),
            )
        launch_guards: dict[str, Any] = {
            "discovery_tag": (config.discovery_tag_key, config.effective_discovery_tag_value),
            "image_owners": config.image_owner_accounts,
            "instance_profile_arns": profiles,
        }
        self.provisioner = ScheduledController(
            self,
            "Provisioner",
            kind=PROVISIONER_FUNCTION,
            cluster_name=cluster,
            code=code,
            settings=config.provisioner,
            rate_minutes=config.provisioner_rate_minutes,
            environment={
                **environment,
                "NOMINATE_AFTER_SECONDS": repr(config.nominate_after_seconds),
                **(
                    {"PROVISIONER_IDLE_EXIT_SECONDS": repr(config.provisioner_idle_exit_seconds)}
                    if config.provisioner_idle_exit_seconds is not None
                    else {}
                ),
            },
            node_role=self.access.node_role,
            **launch_guards,
            node_roles=config.node_roles,
            require_imdsv2=config.require_imdsv2,
            require_encrypted_volumes=config.require_encrypted_volumes,
            log_retention_days=config.log_retention_days,
            log_level=config.log_level,
            state=self.state,
        )
        self.interruption = Interruption(
            self,
            "Interruption",
            cluster_name=cluster,
            code=code,
            settings=config.interruption,
            environment=environment,
            provisioner=self.provisioner.function,
            log_retention_days=config.log_retention_days,
            log_level=config.log_level,
            state=self.state,
            instance_profile_arns=profiles,
            max_concurrency=config.interruption_max_concurrency,
            priority_max_concurrency=config.interruption_priority_max_concurrency,
        )
        # Every function learns where the main queue is (the interruption function sends itself
        # delayed continuations there; the others may report to it), after the queue exists.
        queue_url = self.interruption.queue.queue_url
        self.consolidator = ScheduledController(
            self,
            "Consolidator",
            kind=CONSOLIDATOR_FUNCTION,
            cluster_name=cluster,
            code=code,
            settings=config.consolidator,
            rate_minutes=config.consolidator_rate_minutes,
            environment={
                **environment,
                "CONSOLIDATION_MODE": config.consolidation_mode.value,
                "CONSOLIDATION_MIN_SAVINGS": repr(config.consolidation_min_savings),
                "CONSOLIDATION_MIN_SAVINGS_PERCENT": repr(config.consolidation_min_savings_percent),
                "REPAIR_MAX_UNHEALTHY_PERCENT": str(config.repair_max_unhealthy_percent),
                "SPOT_TO_SPOT_CONSOLIDATION": "true" if config.spot_to_spot_consolidation else "false",
                "DELETION_COST_STEERING": "true" if config.deletion_cost_steering else "false",
            },
            node_role=self.access.node_role,
            **launch_guards,
            node_roles=config.node_roles,
            require_imdsv2=config.require_imdsv2,
            require_encrypted_volumes=config.require_encrypted_volumes,
            log_retention_days=config.log_retention_days,
            log_level=config.log_level,
            state=self.state,
        )
        for handler in (self.provisioner.handler, self.interruption.handler, self.consolidator.handler):
            handler.function.add_environment("INTERRUPTION_QUEUE_URL", queue_url)
        for function, role in (
            ("provisioner", self.provisioner.role),
            ("interruption", self.interruption.role),
            ("consolidator", self.consolidator.role),
        ):
            self.access.grant_cluster_access(f"{function.capitalize()}AccessEntry", role, function)
        # Private-endpoint clusters: the functions run in the cluster's VPC (infra/constructs/network.py).
        self.network: ClusterNetwork | None = None
        if config.vpc_access is not VpcAccess.PUBLIC:
            self.network = ClusterNetwork(self, "Network", config=config)
            for name, handler in (
                ("provisioner", self.provisioner.handler),
                ("interruption", self.interruption.handler),
                ("consolidator", self.consolidator.handler),
            ):
                self.network.attach(name, handler.function, handler.role)
        self.monitoring = Monitoring(
            self,
            "Monitoring",
            cluster_name=cluster,
            functions={
                PROVISIONER: self.provisioner.function,
                INTERRUPTION: self.interruption.function,
                CONSOLIDATOR: self.consolidator.function,
            },
            log_groups=[
                self.provisioner.handler.log_group,
                self.interruption.handler.log_group,
                self.consolidator.handler.log_group,
            ],
            queues={
                "": (self.interruption.queue, self.interruption.dead_letter_queue),
                "Priority": (self.interruption.priority_queue, self.interruption.priority_dead_letter_queue),
            },
            alarm_topic_arn=config.alarm_topic_arn,
        )
        self._outputs()

    def _outputs(self) -> None:
        outputs = {
            "ConfigTableName": (self.state.config_table.table_name, "--table for `nodewright nodepool apply`"),
            "StateTableName": (self.state.state_table.table_name, "Working state (node claims, caches)"),
            "InterruptionQueueUrl": (self.interruption.queue.queue_url, "Interruption events"),
            "DeadLetterQueueUrl": (self.interruption.dead_letter_queue.queue_url, "Interruption messages that failed"),
            "PriorityQueueUrl": (self.interruption.priority_queue.queue_url, "EC2's interruption events (only EC2's)"),
            "PriorityDeadLetterQueueUrl": (
                self.interruption.priority_dead_letter_queue.queue_url,
                "EC2's interruption events that failed",
            ),
            "NodeRoleArn": (self.access.node_role.role_arn, "IAM role of launched nodes"),
            "NodeInstanceProfileName": (self.access.instance_profile.instance_profile_name, "Their instance profile"),
            "NodeRoles": (
                cdk.Fn.join(",", [self.access.node_role.role_name, *self.node_roles]),
                "--node-roles for `nodewright nodepool validate|apply`: the roles an EC2NodeClass may name",
            ),
            "DashboardName": (self.monitoring.dashboard.dashboard_name, "CloudWatch dashboard"),
            "ProvisionerRoleArn": (self.provisioner.role.role_arn, "Kubernetes group nodewright-provisioner"),
            "InterruptionRoleArn": (self.interruption.role.role_arn, "Kubernetes group nodewright-interruption"),
            "ConsolidatorRoleArn": (self.consolidator.role.role_arn, "Kubernetes group nodewright-consolidator"),
        }
        for name, (value, description) in outputs.items():
            cdk.CfnOutput(self, name, value=value, description=description)
