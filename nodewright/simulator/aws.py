"""The simulated AWS account: moto (in-process) set up as the stack would leave it, plus what moto lacks.

What is real (moto): EC2 (a VPC, one subnet per zone and a security group carrying the tags the
EC2NodeClasses select, launch templates, CreateFleet, DescribeInstances, TerminateInstances),
DynamoDB (the state table and the idempotency table), SQS (the interruption queue with its DLQ,
retention and visibility timeout) and EventBridge (the five interruption rules, built from
`nodewright.engine.interruption.rules`, targeting the queue).

What is added on top, because moto does not have it:
* `SimulatedEc2` wraps the EC2 client: CreateFleet chooses what to launch as EC2 does
  (`nodewright.simulator.fleet`: on-demand `lowest-price` or `prioritized` across every override
  of every config, spot `price-capacity-optimized` over the scenario's per-pool spot depth, prices
  from the scenario's price table, weighted capacity, partial fulfilment) where moto would take
  the first override; it answers with EC2's documented `InsufficientInstanceCapacity` Errors
  entries for the offerings a scenario declares out of capacity and for spot pools that ran
  short, and reports each launch, each fleet call (for the fidelity audit) and each termination
  to the world (the kubelet and the accounting).
* `PublicParameters` wraps the SSM client: AWS's public EKS/Bottlerocket AMI parameters
  (`/aws/service/...`, reserved names moto will not store) answer with moto's Amazon images.
* `MirroredStateStore` is the real DynamoDB state store whose reads of node claims, blocked
  offerings and disruption commands are served from a write-through mirror. Every write goes to DynamoDB first (its
  conditions decide, as in AWS) and then to the mirror, and every writer in the simulation shares
  the one store, so the mirror always equals the table (`verify()` checks it at the end of a run).
  Why: moto serialises each claim of a Query through its shape model (~0.4 ms per claim), and the
  provisioner reads the claims every second while pods wait; a 24-hour run would spend most of its
  time there.
* `MirroredCloud` is the real EC2 cloud provider (launches and terminations go to moto through
  `SimulatedEc2`) whose `instances()` (DescribeInstances of the cluster's live instances) is
  answered from the registry the world keeps from every CreateFleet and TerminateInstances: moto
  serialises ~6 ms per instance, and the provisioner lists them on every invocation. The registry
  is compared with moto's own list at the end of a run.
* `SimulatedLambda` is the Lambda client the interruption function's provisioner trigger
  calls: an asynchronous invoke starts a provisioner invocation in the world.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from nodewright.adapters.aws.ec2 import Ec2CloudProvider
from nodewright.adapters.aws.state_store import DynamoStateStore, create_table
from nodewright.engine.interruption.rules import interruption_rules
from nodewright.model.cluster import ClusterInfo
from nodewright.model.command import CommandRecord
from nodewright.model.instance import Instance
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.ports import Offering
from nodewright.simulator.fleet import LOWEST_PRICE, Pool, allocate
from nodewright.simulator.lambdas import ACCOUNT, REGION
from nodewright.simulator.reservations import SimulatedReservations

CLUSTER = ClusterInfo(
    name="simulated",
    endpoint="https://SIMULATED0000000000000000000000.gr7.us-east-1.eks.amazonaws.com",
    certificate_authority="LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==",
    version="1.31",
)
STATE_TABLE = "nodewright-state"
IDEMPOTENCY_TABLE = "nodewright-idempotency"
QUEUE = "nodewright-interruption"
DEAD_LETTER_QUEUE = "nodewright-interruption-dlq"
NODE_INSTANCE_PROFILE = "nodewright-simulated-node"
# The stack's queue settings (infra/config.py, which the runtime may not import): keep in step.
QUEUE_RETENTION_SECONDS = 300
QUEUE_MAX_RECEIVE_COUNT = 3
VISIBILITY_MARGIN_SECONDS = 15
CAPACITY_MESSAGE = (
    "We currently do not have sufficient {type} capacity in the Availability Zone you requested ({zone}). "
    "Our system will be working on provisioning additional capacity."
)


@dataclass(frozen=True, slots=True)
class Launched:
    """One instance a CreateFleet call started."""

    instance_id: str
    instance_type: str
    zone: str
    capacity_type: str
    tags: Mapping[str, str]
    price: float | None = None


@dataclass(frozen=True, slots=True)
class FleetCall:
    """One CreateFleet call as EC2 answered it, for the fidelity audit: the allocation strategy,
    the overrides EC2 had capacity for when asked (their prices from the scenario's price table)
    and the instances it started.
    """

    capacity_type: str
    strategy: str
    allowed: tuple[Pool, ...]
    launched: tuple[Launched, ...]


class Ec2Hooks:
    """What the world wants to hear from EC2 (the world overrides these)."""

    def capacity_error(self, instance_type: str, zone: str, capacity_type: str) -> str | None:
        """The error code EC2 should answer for this offering now, or None when it has capacity."""
        return None

    def price(self, instance_type: str, zone: str, capacity_type: str) -> float | None:
        """$/h of the offering in the scenario's price table (None: unknown, chosen last)."""
        return None

    def spot_depth(self, instance_type: str, zone: str) -> int | None:
        """How many spot instances the pool holds in all (None: no limit)."""
        return None

    def launched(self, instance: Launched) -> None:
        """An instance was started."""

    def fleet(self, call: FleetCall) -> None:
        """A CreateFleet call was answered (after `launched` for each of its instances)."""

    def terminating(self, instance_ids: Sequence[str]) -> None:
        """These instances are about to be terminated (their nodes still hold their pods)."""

    def terminated(self, instance_ids: Sequence[str]) -> None:
        """These instances were terminated."""

    def short_fleet(self) -> bool:
        """True when this CreateFleet comes back short (a fault): fewer instances, plus Errors."""
        return False

    def effect(self, operation: str) -> None:
        """EC2 carried out a whole CreateFleet or TerminateInstances for the caller (a fault may
        stop the caller right after it).
        """

    def impaired(self, instance_id: str) -> tuple[tuple[str, ...], float] | None:
        """The instance's impaired status checks ("system", "instance", "ebs") and since when
        (epoch seconds), or None when they pass.
        """
        return None


class SimulatedEc2:
    """moto's EC2 client that chooses what a CreateFleet launches as EC2 does, with capacity errors,
    spot pool depth and launch/termination reports (module docstring; the choice: `fleet.py`).
    """

    def __init__(
        self,
        client: Any,
        hooks: Ec2Hooks,
        *,
        reservations: SimulatedReservations | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self._client = client
        self.hooks = hooks
        # The scenario's capacity reservations (nodewright.simulator.reservations), on `clock`.
        self.reservations = reservations
        self._now = clock or (lambda: 0.0)
        self._targets: dict[str, str] = {}  # launch template name -> the reservation it targets
        self._pool_of: dict[str, tuple[str, str, str]] = {}  # live instance -> (capacity type, type, zone)
        self._in_pool: Counter[tuple[str, str, str]] = Counter()
        self._zones: dict[str, str] = {}  # subnet id -> zone
        # True while this EC2 calls moto for itself after the first call of a CreateFleet (the
        # other pools' launches, a subnet lookup): one CreateFleet is one request to throttle.
        self.quiet = False

    def create_fleet(self, **request: Any) -> dict[str, Any]:
        """CreateFleet `instant`: the scenario's capacity errors and pool depths, then EC2's
        allocation strategy over every override of every config (`fleet.allocate`); moto starts
        what was chosen. Partial fulfilment and short pools answer as EC2 does (Errors entries).
        """
        target = request["TargetCapacitySpecification"]
        capacity_type = str(target.get("DefaultTargetCapacityType", "on-demand"))
        options = request.get("SpotOptions" if capacity_type == "spot" else "OnDemandOptions") or {}
        strategy = str(options.get("AllocationStrategy") or LOWEST_PRICE)
        errors: list[dict[str, Any]] = []
        pools: list[Pool] = []
        chosen: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}  # position -> (config, override)
        targets: dict[int, str] = {}  # config index -> the reservation its template targets
        for index, config in enumerate(request.get("LaunchTemplateConfigs", [])):
            targets[index] = self._target(config)
            for override in config.get("Overrides") or []:
                instance_type = str(override.get("InstanceType", ""))
                zone = str(override.get("AvailabilityZone") or self._zone(str(override.get("SubnetId", ""))))
                if not instance_type or not zone:
                    # Not a request Nodewright sends (types from the template): moto's own answer.
                    response: dict[str, Any] = self._client.create_fleet(**request)
                    return response
                # A launch into a reservation meets the scenario's `reserved` capacity errors (e.g.
                # ReservationCapacityExceeded while instances outside the cluster hold it).
                kind = "reserved" if targets[index] else capacity_type
                code = self.hooks.capacity_error(instance_type, zone, kind)
                if code is None and targets[index] and self.reservations is not None:
                    code = self.reservations.refusal(targets[index], instance_type, zone, self._now())
                if code is not None:
                    errors.append(_capacity_error(config, override, capacity_type, code, zone=zone))
                    continue
                available = None
                if targets[index] and self.reservations is not None:
                    available = self.reservations.available(targets[index])
                elif capacity_type == "spot":
                    depth = self.hooks.spot_depth(instance_type, zone)
                    if depth is not None:
                        available = max(0, depth - self._in_pool[(capacity_type, instance_type, zone)])
                priority = override.get("Priority")
                pool = Pool(
                    config=index,
                    position=len(pools),
                    instance_type=instance_type,
                    zone=zone,
                    price=self.hooks.price(instance_type, zone, capacity_type),
                    weight=float(override.get("WeightedCapacity") or 1.0),
                    priority=float(priority) if priority is not None else None,
                    available=available,
                )
                pools.append(pool)
                chosen[pool.position] = (config, override)
        allocation = allocate(pools, float(target.get("TotalTargetCapacity", 1)), strategy)
        short = list(allocation.short)
        launches = list(allocation.launches)
        if launches and self.hooks.short_fleet():
            # EC2 fulfils an instant fleet partly: the last pool gets half of its share (none of
            # one), and its shortfall comes back as an Errors entry.
            pool, count = launches[-1]
            launches[-1] = (pool, count // 2)
            short.append(pool)
        for pool in short:
            config, override = chosen[pool.position]
            errors.append(
                _capacity_error(config, override, capacity_type, "InsufficientInstanceCapacity", zone=pool.zone)
            )
        fleet_id = "fleet-00000000-0000-0000-0000-000000000000"
        instances: list[dict[str, Any]] = []
        launched: list[Launched] = []
        tags = {
            t["Key"]: t["Value"]
            for spec in request.get("TagSpecifications", [])
            if spec.get("ResourceType") == "instance"
            for t in spec.get("Tags", [])
        }
        first = True
        for pool, count in launches:
            if count <= 0:
                continue
            config, override = chosen[pool.position]
            bare = {k: v for k, v in override.items() if k not in ("WeightedCapacity", "Priority")}
            self.quiet = not first
            first = False
            try:
                answer = self._client.create_fleet(
                    **{
                        **request,
                        "TargetCapacitySpecification": {
                            "TotalTargetCapacity": count,
                            # moto knows no capacity-block market: a block's instance is on-demand to it.
                            "DefaultTargetCapacityType": "on-demand" if targets[pool.config] else capacity_type,
                        },
                        "LaunchTemplateConfigs": [{**config, "Overrides": [bare]}],
                    }
                )
            finally:
                self.quiet = False
            if not instances:
                fleet_id = str(answer.get("FleetId", fleet_id))
            errors += list(answer.get("Errors") or [])
            for entry in answer.get("Instances") or []:
                echoed = dict(entry.get("LaunchTemplateAndOverrides") or {})
                echoed["Overrides"] = override  # EC2 echoes the override it launched, weight and all
                instances.append({**entry, "LaunchTemplateAndOverrides": echoed})
                for instance_id in entry.get("InstanceIds") or []:
                    reservation = targets[pool.config]
                    if reservation and self.reservations is not None:
                        self.reservations.launched(str(instance_id), reservation)
                    started = Launched(
                        instance_id=str(instance_id),
                        instance_type=pool.instance_type,
                        zone=pool.zone,
                        capacity_type="reserved" if reservation else str(entry.get("Lifecycle") or capacity_type),
                        tags=tags,
                        price=pool.price,
                    )
                    key = (started.capacity_type, started.instance_type, started.zone)
                    self._pool_of[started.instance_id] = key
                    self._in_pool[key] += 1
                    launched.append(started)
                    self.hooks.launched(started)
        self.hooks.fleet(
            FleetCall(
                capacity_type=capacity_type,
                strategy=strategy,
                allowed=tuple(p for p in pools if p.available is None or p.available > 0),
                launched=tuple(launched),
            )
        )
        self.hooks.effect("CreateFleet")
        return {"FleetId": fleet_id, "Errors": errors, "Instances": instances}

    def terminate_instances(self, **request: Any) -> dict[str, Any]:
        """TerminateInstances, reported to the world before and after; the pools get their room back."""
        ids = [str(i) for i in request.get("InstanceIds", [])]
        self.hooks.terminating(ids)
        response: dict[str, Any] = self._client.terminate_instances(**request)
        gone = [str(c["InstanceId"]) for c in response.get("TerminatingInstances", []) if c.get("InstanceId")]
        for instance_id in gone:
            key = self._pool_of.pop(instance_id, None)
            if key is not None:
                self._in_pool[key] -= 1
        if self.reservations is not None:
            self.reservations.released(gone)
        self.hooks.terminated(gone)
        self.hooks.effect("TerminateInstances")
        return response

    def describe_instance_status(self, **request: Any) -> dict[str, Any]:
        """DescribeInstanceStatus: moto's answer (every running instance "ok") with the checks the
        world failed (`Ec2Hooks.impaired`) reported impaired, in EC2's shape.
        """
        response: dict[str, Any] = self._client.describe_instance_status(**request)
        for item in response.get("InstanceStatuses", []):
            found = self.hooks.impaired(str(item.get("InstanceId")))
            if found is None:
                continue
            checks, since = found
            failed = {
                "Status": "impaired",
                "Details": [{"Name": "reachability", "Status": "failed", "ImpairedSince": _utc(since)}],
            }
            for check in checks:
                item[_STATUS_BLOCKS[check]] = dict(failed)
        return response

    def describe_capacity_reservations(self, **request: Any) -> dict[str, Any]:
        """DescribeCapacityReservations, which moto lacks: the scenario's reservations."""
        if self.reservations is None:
            return {"CapacityReservations": []}
        return self.reservations.describe(request, self._now())

    def get_paginator(self, name: str) -> Any:
        """moto's paginators, and one page of DescribeCapacityReservations (moto has none)."""
        if name == "describe_capacity_reservations":
            return _OnePage(self.describe_capacity_reservations)
        return self._client.get_paginator(name)

    def create_launch_template(self, **request: Any) -> dict[str, Any]:
        """moto's CreateLaunchTemplate; this EC2 notes which reservation the template targets."""
        if self.reservations is not None:
            name = str(request.get("LaunchTemplateName") or "")
            self._targets[name] = self.reservations.target(request.get("LaunchTemplateData") or {})
        response: dict[str, Any] = self._client.create_launch_template(**request)
        return response

    def _target(self, config: Mapping[str, Any]) -> str:
        """The capacity reservation a config's launch template targets ("" none). Template names
        are content hashes, so a name always means the data it was created with.
        """
        name = str((config.get("LaunchTemplateSpecification") or {}).get("LaunchTemplateName") or "")
        return self._targets.get(name, "")

    def in_pool(self, capacity_type: str, instance_type: str, zone: str) -> int:
        """How many live instances this EC2 started in one pool."""
        return self._in_pool[(capacity_type, instance_type, zone)]

    def _zone(self, subnet_id: str) -> str:
        if subnet_id and subnet_id not in self._zones:
            quiet, self.quiet = self.quiet, True
            try:
                subnets = self._client.describe_subnets()["Subnets"]
            finally:
                self.quiet = quiet
            for subnet in subnets:
                self._zones[str(subnet["SubnetId"])] = str(subnet["AvailabilityZone"])
        return self._zones.get(subnet_id, "")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


class _OnePage:
    """A paginator over a call whose answer is one page."""

    def __init__(self, call: Callable[..., dict[str, Any]]) -> None:
        self._call = call

    def paginate(self, **request: Any) -> list[dict[str, Any]]:
        return [self._call(**request)]


# DescribeInstanceStatus's block for each status check.
_STATUS_BLOCKS = {"system": "SystemStatus", "instance": "InstanceStatus", "ebs": "AttachedEbsStatus"}


def _utc(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def _capacity_error(
    config: Mapping[str, Any], override: Mapping[str, Any], capacity_type: str, code: str, *, zone: str
) -> dict[str, Any]:
    instance_type = str(override.get("InstanceType", ""))
    return {
        "LaunchTemplateAndOverrides": {
            "LaunchTemplateSpecification": config["LaunchTemplateSpecification"],
            "Overrides": dict(override),
        },
        "Lifecycle": capacity_type,
        "ErrorCode": code,
        "ErrorMessage": CAPACITY_MESSAGE.format(type=instance_type, zone=zone),
    }


class PublicParameters:
    """moto's SSM client plus AWS's public AMI parameters (`/aws/service/...`)."""

    def __init__(self, client: Any, images: Mapping[str, str]) -> None:
        self._client = client
        self._images = dict(images)  # EC2 architecture (x86_64, arm64) -> image id

    def get_parameter(self, **request: Any) -> dict[str, Any]:
        """The public parameter's value (an AMI of the architecture in its path), else moto's answer."""
        name = str(request.get("Name", ""))
        if name.startswith("/aws/service/"):
            arch = "arm64" if "arm64" in name.split("/") or "-arm64" in name else "x86_64"
            value = self._images.get(arch)
            if value is not None:
                return {"Parameter": {"Name": name, "Type": "String", "Value": value, "Version": 1}}
        response: dict[str, Any] = self._client.get_parameter(**request)
        return response

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


def _copy(claim: NodeClaim) -> NodeClaim:
    return replace(claim, labels=dict(claim.labels))


class MirroredCloud(Ec2CloudProvider):
    """The EC2 cloud provider with `instances()` from a registry (see the module docstring)."""

    def __init__(self, *args: Any, registry: Callable[[], list[Instance]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._registry = registry

    def instances(self) -> list[Instance]:
        """The cluster's live instances, oldest first, from the registry."""
        return sorted(self._registry(), key=lambda i: (i.launched_at, i.instance_id))

    def described(self) -> list[Instance]:
        """The same list, from moto (DescribeInstances), for the end-of-run check."""
        return super().instances()


class MirroredStateStore(DynamoStateStore):
    """The DynamoDB state store with claim and capacity-error reads served from a write-through
    mirror (see the module docstring). Every other method is the real store's.

    Claims are copied in (their `labels` dict), as the table keeps a serialised record; readers get
    the stored copies, which no controller mutates.
    """

    def __init__(self, client: Any, table_name: str) -> None:
        super().__init__(client, table_name)
        self._claims: dict[str, NodeClaim] = {}
        self._sorted: list[NodeClaim] | None = None
        self._blocked: dict[Offering, float] = {}
        self._commands: dict[str, CommandRecord] = {}

    def create_claim(self, claim: NodeClaim) -> bool:
        """DynamoDB's conditional put decides; the mirror follows. A refused put is looked up in
        the table: the record may be this very claim, written by an attempt whose answer was lost.
        """
        created = super().create_claim(claim)
        if created:
            self._put(claim)
        elif claim.name not in self._claims:
            stored = next((c for c in super().claims() if c.name == claim.name), None)
            if stored is not None:
                self._put(stored)
        return created

    def save_claim(self, claim: NodeClaim) -> None:
        """Overwrite in DynamoDB, then in the mirror."""
        super().save_claim(claim)
        self._put(claim)

    def claims(self) -> list[NodeClaim]:
        """Every claim, sorted by name, from the mirror."""
        if self._sorted is None:
            self._sorted = [self._claims[name] for name in sorted(self._claims)]
        return list(self._sorted)

    def delete_claim(self, name: str) -> None:
        """Delete in DynamoDB, then in the mirror."""
        super().delete_claim(name)
        if self._claims.pop(name, None) is not None:
            self._sorted = None

    def block_offerings(self, offerings: Iterable[Offering], until: float) -> None:
        """Block in DynamoDB (never shortening a block), then in the mirror."""
        chosen = sorted(set(offerings))
        super().block_offerings(chosen, until)
        for offering in chosen:
            self._blocked[offering] = max(until, self._blocked.get(offering, until))

    def blocked_offerings(self, now: float) -> frozenset[Offering]:
        """Offerings blocked beyond `now`, from the mirror."""
        return frozenset(o for o, until in self._blocked.items() if until > now)

    def save_command(self, record: CommandRecord) -> None:
        """Write in DynamoDB, then in the mirror."""
        super().save_command(record)
        self._commands[record.id] = record

    def commands(self) -> list[CommandRecord]:
        """Every command record, oldest first, from the mirror."""
        return sorted(self._commands.values(), key=lambda r: (r.created_at, r.id))

    def delete_command(self, command_id: str) -> None:
        """Delete in DynamoDB, then in the mirror."""
        super().delete_command(command_id)
        self._commands.pop(command_id, None)

    def verify(self) -> list[str]:
        """Differences between the mirror and the table (empty when they agree)."""
        stored = {c.name: c for c in super().claims()}
        out = [f"claim {name} is in the table only" for name in sorted(set(stored) - set(self._claims))]
        out += [f"claim {name} is in the mirror only" for name in sorted(set(self._claims) - set(stored))]
        for name in sorted(set(stored) & set(self._claims)):
            if stored[name].state != self._claims[name].state:
                out.append(f"claim {name}: table says {stored[name].state}, mirror {self._claims[name].state}")
        commands = {r.id for r in super().commands()}
        if commands != set(self._commands):
            out.append(f"commands differ: table {sorted(commands)}, mirror {sorted(self._commands)}")
        return out

    def _put(self, claim: NodeClaim) -> None:
        if claim.name not in self._claims:
            self._sorted = None
        self._claims[claim.name] = _copy(claim)
        if self._sorted is not None:
            self._sorted = None


class SimulatedLambda:
    """The Lambda client of the provisioner trigger: an Event invoke starts a provisioner run."""

    def __init__(
        self, start: Callable[[str, dict[str, Any]], None], effect: Callable[[str], None] = lambda what: None
    ) -> None:
        self._start = start
        self._effect = effect
        self.invocations: list[tuple[str, dict[str, Any]]] = []

    def invoke(self, **request: Any) -> dict[str, Any]:
        """Accept the invoke (202, as Lambda answers an asynchronous one) and start the function."""
        function = str(request.get("FunctionName", ""))
        payload = request.get("Payload") or b"{}"
        event = json.loads(payload.decode() if isinstance(payload, bytes) else str(payload))
        self.invocations.append((function, event))
        self._start(function, event)
        self._effect("lambda:Invoke")
        return {"StatusCode": 202}


class Account:
    """The moto resources of one simulation (call `create` inside `mock_aws`)."""

    def __init__(self, session: Any) -> None:
        from botocore.config import Config

        # The functions' retry policy (nodewright.adapters.aws.session): what a throttled call meets.
        config = Config(retries={"mode": "standard", "max_attempts": 5})
        self.ec2 = session.client("ec2", region_name=REGION, config=config)
        self.ssm = session.client("ssm", region_name=REGION, config=config)
        self.dynamodb = session.client("dynamodb", region_name=REGION, config=config)
        self.sqs = session.client("sqs", region_name=REGION, config=config)
        self.events = session.client("events", region_name=REGION, config=config)
        self.queue_url = ""
        self.queue_arn = ""
        self.images: dict[str, str] = {}
        self.rules: dict[str, str] = {}

    def create(
        self, nodeclasses: Mapping[str, EC2NodeClass], zones: Sequence[str], interruption_timeout: float
    ) -> None:
        """The network, AMIs, tables, queue and rules the stack and the cluster would provide."""
        self._network(nodeclasses, zones)
        self._images()
        create_table(self.dynamodb, STATE_TABLE)
        self.dynamodb.create_table(
            TableName=IDEMPOTENCY_TABLE,
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        self._queue(interruption_timeout)
        for rule_id, pattern in interruption_rules().items():
            name = f"nodewright-{rule_id}"
            arn = self.events.put_rule(Name=name, EventPattern=json.dumps(pattern), State="ENABLED")["RuleArn"]
            self.events.put_targets(Rule=name, Targets=[{"Id": "interruption-queue", "Arn": self.queue_arn}])
            self.rules[rule_id] = arn

    def _network(self, nodeclasses: Mapping[str, EC2NodeClass], zones: Sequence[str]) -> None:
        subnet_tags: dict[str, str] = {}
        group_tags: dict[str, str] = {}
        group_names: set[str] = set()
        for nodeclass in nodeclasses.values():
            for term in nodeclass.subnet_selector_terms:
                subnet_tags.update({k: "owned" if v == "*" else v for k, v in term.tags.items()})
            for term in nodeclass.security_group_selector_terms:
                group_tags.update({k: "owned" if v == "*" else v for k, v in term.tags.items()})
                if term.name:
                    group_names.add(term.name)
        vpc = self.ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
        for index, zone in enumerate(zones):
            tags = {**subnet_tags, "Name": f"simulated-{zone}"}
            self.ec2.create_subnet(
                VpcId=vpc,
                CidrBlock=f"10.0.{index * 64}.0/18",
                AvailabilityZone=zone,
                TagSpecifications=[{"ResourceType": "subnet", "Tags": _tags(tags)}],
            )
        for name in sorted(group_names) or ["nodewright-simulated-nodes"]:
            self.ec2.create_security_group(
                GroupName=name,
                Description="nodes of the simulated cluster",
                VpcId=vpc,
                TagSpecifications=[{"ResourceType": "security-group", "Tags": _tags(group_tags)}],
            )

    def _images(self) -> None:
        # The AMIs AWS's public parameters point at (see PublicParameters): one per architecture.
        for arch in ("x86_64", "arm64"):
            image = self.ec2.register_image(
                Name=f"simulated-eks-node-{arch}", Architecture=arch, RootDeviceName="/dev/xvda"
            )
            self.images[arch] = str(image["ImageId"])

    def _queue(self, timeout: float) -> None:
        dlq = self.sqs.create_queue(QueueName=DEAD_LETTER_QUEUE, Attributes={"MessageRetentionPeriod": "1209600"})
        dlq_arn = self.sqs.get_queue_attributes(QueueUrl=dlq["QueueUrl"], AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        redrive = {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": QUEUE_MAX_RECEIVE_COUNT}
        self.queue_url = self.sqs.create_queue(
            QueueName=QUEUE,
            Attributes={
                "MessageRetentionPeriod": str(QUEUE_RETENTION_SECONDS),
                "VisibilityTimeout": str(int(timeout) + VISIBILITY_MARGIN_SECONDS),
                "RedrivePolicy": json.dumps(redrive),
            },
        )["QueueUrl"]
        self.queue_arn = self.sqs.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]


def _tags(tags: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in sorted(tags.items())]


def instance_arn(instance_id: str) -> str:
    """The ARN EC2 events name an instance by."""
    return f"arn:aws:ec2:{REGION}:{ACCOUNT}:instance/{instance_id}"
