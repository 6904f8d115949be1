"""Settings of the Lambda functions, read once at the edge from the environment the CDK stack sets.

`Settings.from_env(os.environ)` is called by each handler on a cold start; nothing else reads the
environment. The names match `infra/` (the functions' environment); no secret is passed this way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from nodewright.config.noderoles import NodeRoles
from nodewright.controllers.algorithms import provisioner_options_for
from nodewright.controllers.provisionoptions import ProvisionerOptions
from nodewright.engine.disruption import DisruptionOptions
from nodewright.model.nodepool import REBALANCE_POLICIES

CONFIG_SOURCES = ("dynamodb", "crd")
PRICE_SOURCES = ("api", "estimates")
# Who decides (nodewright.controllers.algorithms): `nodewright` (with many-to-many replacement),
# `many-to-one` (the same engine limited to delete or N->1: an ablation, not Karpenter), `karpenter`
# (the Karpenter v1.14 reference's scheduler, batching and disruption).
CONSOLIDATION_MODES = ("nodewright", "many-to-one", "karpenter")
# The consolidation stability guard's defaults ($/h, and percent of the removed nodes' price).
DEFAULT_MIN_SAVINGS = 0.0
DEFAULT_MIN_SAVINGS_PERCENT = 0.0
# Node repair's guard (engine/disruption/repair.py): Karpenter's 20% of a NodePool's nodes.
DEFAULT_REPAIR_MAX_UNHEALTHY_PERCENT = 20
# A pod's Nominated Event waits until it has been pending this long (ProvisionerOptions.nominate_after).
DEFAULT_NOMINATE_AFTER = 30.0


class SettingsError(ValueError):
    """The environment lacks a setting or holds a bad one; the message names the variable."""


@dataclass(frozen=True, slots=True)
class Settings:
    """What every function needs to know about its deployment."""

    cluster_name: str
    config_source: str
    config_table: str
    state_table: str
    idempotency_table: str
    interruption_queue_url: str
    node_role_arn: str
    node_instance_profile: str
    discovery_tag_key: str
    discovery_tag_value: str
    rebalance_policy: str
    provisioner_function: str = ""
    # This function's own name (Lambda sets AWS_LAMBDA_FUNCTION_NAME): the reportingInstance of its Events.
    function_name: str = ""
    region: str = ""
    consolidation: str = "nodewright"
    # The consolidation stability guard: a move must save at least this many $/h and this
    # percentage of what the nodes it removes cost (Karpenter #7146: small savings churn pods).
    consolidation_min_savings: float = DEFAULT_MIN_SAVINGS
    consolidation_min_savings_percent: float = DEFAULT_MIN_SAVINGS_PERCENT
    # Economy: the provisioner ends its invocation after this many seconds with no pod waiting
    # (None: it waits for pods until its deadline). See ProvisionerOptions.idle_exit.
    provisioner_idle_exit: float | None = None
    # Where on-demand prices come from: "api" (the Price List API) or "estimates" (the bundled
    # per-family estimates, for a private VPC that cannot reach the Price List API).
    price_source: str = "api"
    # Node repair stops in a NodePool (and cluster-wide) with more than this percentage of its
    # nodes unhealthy, rounded up; 0 turns repair off.
    repair_max_unhealthy_percent: int = DEFAULT_REPAIR_MAX_UNHEALTHY_PERCENT
    # Seconds a pod has waited before its nomination is reported as a Nominated Event (0: every one).
    nominate_after: float = DEFAULT_NOMINATE_AFTER
    # The node roles (names or ARNs) besides node_role_arn that an EC2NodeClass's `role` may name
    # (the deploy key nodeRoles; the IAM policy allows passing exactly these).
    node_roles: tuple[str, ...] = ()
    # Karpenter's SpotToSpotConsolidation: whether spot nodes may be replaced by a spot node.
    spot_to_spot_consolidation: bool = True
    # Whether the consolidator writes pod deletion costs so scale-downs empty nodes (controllers.steering).
    deletion_cost_steering: bool = True

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        """Read every setting; raise SettingsError naming each missing or invalid variable."""
        problems: list[str] = []

        def need(name: str) -> str:
            value = env.get(name, "").strip()
            if not value:
                problems.append(f"{name} is not set")
            return value

        def flag(name: str) -> bool:
            """A switch that defaults to on: "true" or "false" (any case), else a problem."""
            raw = env.get(name, "true").strip().lower()
            if raw not in ("true", "false"):
                problems.append(f"{name} {env[name]!r} is not true or false")
            return raw != "false"

        def number(name: str, default: float, high: float) -> float:
            raw = env.get(name, "").strip()
            if not raw:
                return default
            try:
                value = float(raw)
            except ValueError:
                problems.append(f"{name} {raw!r} is not a number")
                return default
            if not 0 <= value <= high:
                problems.append(f"{name} {raw!r} is outside 0-{high:g}")
                return default
            return value

        repair_percent = number("REPAIR_MAX_UNHEALTHY_PERCENT", DEFAULT_REPAIR_MAX_UNHEALTHY_PERCENT, 100.0)
        if not float(repair_percent).is_integer():
            problems.append(f"REPAIR_MAX_UNHEALTHY_PERCENT {repair_percent:g} is not a whole percentage")
        settings = cls(
            cluster_name=need("CLUSTER_NAME"),
            config_source=env.get("CONFIG_SOURCE", "dynamodb"),
            config_table=env.get("CONFIG_TABLE_NAME", ""),
            state_table=need("STATE_TABLE_NAME"),
            idempotency_table=env.get("IDEMPOTENCY_TABLE_NAME", ""),
            interruption_queue_url=env.get("INTERRUPTION_QUEUE_URL", ""),
            node_role_arn=env.get("NODE_ROLE_ARN", ""),
            node_instance_profile=env.get("NODE_INSTANCE_PROFILE", ""),
            discovery_tag_key=env.get("DISCOVERY_TAG_KEY", "karpenter.sh/discovery"),
            discovery_tag_value=env.get("DISCOVERY_TAG_VALUE", env.get("CLUSTER_NAME", "")),
            rebalance_policy=env.get("REBALANCE_POLICY", "ReplaceThenDrain"),
            provisioner_function=env.get("PROVISIONER_FUNCTION_NAME", ""),
            function_name=env.get("AWS_LAMBDA_FUNCTION_NAME", ""),
            region=env.get("AWS_REGION", env.get("AWS_DEFAULT_REGION", "")),
            consolidation=env.get("CONSOLIDATION_MODE", "nodewright"),
            consolidation_min_savings=number("CONSOLIDATION_MIN_SAVINGS", DEFAULT_MIN_SAVINGS, 1000.0),
            consolidation_min_savings_percent=number(
                "CONSOLIDATION_MIN_SAVINGS_PERCENT", DEFAULT_MIN_SAVINGS_PERCENT, 100.0
            ),
            provisioner_idle_exit=(
                number("PROVISIONER_IDLE_EXIT_SECONDS", 0.0, 900.0)
                if env.get("PROVISIONER_IDLE_EXIT_SECONDS", "").strip()
                else None
            ),
            price_source=env.get("PRICE_SOURCE", "api").strip() or "api",
            repair_max_unhealthy_percent=round(repair_percent),
            nominate_after=number("NOMINATE_AFTER_SECONDS", DEFAULT_NOMINATE_AFTER, 3600.0),
            node_roles=tuple(r.strip() for r in env.get("NODE_ROLES", "").split(",") if r.strip()),
            spot_to_spot_consolidation=flag("SPOT_TO_SPOT_CONSOLIDATION"),
            deletion_cost_steering=flag("DELETION_COST_STEERING"),
        )
        if settings.price_source not in PRICE_SOURCES:
            problems.append(f"PRICE_SOURCE {settings.price_source!r} is not one of {', '.join(PRICE_SOURCES)}")
        if settings.config_source not in CONFIG_SOURCES:
            problems.append(f"CONFIG_SOURCE {settings.config_source!r} is not one of {', '.join(CONFIG_SOURCES)}")
        if settings.config_source == "dynamodb" and not settings.config_table:
            problems.append("CONFIG_TABLE_NAME is not set (CONFIG_SOURCE is dynamodb)")
        if settings.rebalance_policy not in REBALANCE_POLICIES:
            problems.append(
                f"REBALANCE_POLICY {settings.rebalance_policy!r} is not one of {', '.join(REBALANCE_POLICIES)}"
            )
        if settings.consolidation not in CONSOLIDATION_MODES:
            problems.append(
                f"CONSOLIDATION_MODE {settings.consolidation!r} is not one of {', '.join(CONSOLIDATION_MODES)}"
            )
        if problems:
            raise SettingsError("; ".join(problems))
        return settings

    def roles(self) -> NodeRoles:
        """The node roles this deployment may pass: its own and the deploy key's (`config.noderoles`)."""
        return NodeRoles.of(self.node_role_arn, self.node_roles)

    def provisioner_options(self) -> ProvisionerOptions:
        """The provisioner's knobs these settings choose (the others keep their defaults; a
        reference mode batches as its reference does).
        """
        options = ProvisionerOptions(idle_exit=self.provisioner_idle_exit, nominate_after=self.nominate_after)
        return provisioner_options_for(self.consolidation, options)

    def disruption_options(self) -> DisruptionOptions:
        """The consolidator's decision knobs these settings choose."""
        return disruption_options(
            self.consolidation,
            self.consolidation_min_savings,
            self.consolidation_min_savings_percent,
            repair_max_unhealthy_percent=self.repair_max_unhealthy_percent,
            spot_to_spot=self.spot_to_spot_consolidation,
        )


def disruption_options(
    mode: str,
    min_savings: float,
    min_savings_percent: float,
    *,
    repair_max_unhealthy_percent: int = DEFAULT_REPAIR_MAX_UNHEALTHY_PERCENT,
    spot_to_spot: bool = True,
) -> DisruptionOptions:
    """The consolidator's knobs for a consolidation mode and stability guard ($/h and percent),
    node repair's unhealthy share and spot-to-spot consolidation, as the deploy settings (and a
    simulator scenario) name them. Only `nodewright` turns many-to-many on (the references decide
    without these knobs).
    """
    return DisruptionOptions(
        many_to_many=mode == "nodewright",
        min_savings=min_savings,
        min_savings_fraction=min_savings_percent / 100,
        repair_max_unhealthy_percent=repair_max_unhealthy_percent,
        spot_to_spot=spot_to_spot,
    )
