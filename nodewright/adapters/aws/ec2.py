"""The EC2 cloud provider: launch one node per claim with CreateFleet, list and terminate ours.

Role: implements `nodewright.ports.CloudProvider` for AWS through injected EC2 and SSM clients.

Files: this one is the provider (the calls to EC2, idempotency, errors, instance queries);
`fleet.py` is the pure half: the fleet plan (step 2 below), the ClientToken and tags, the
CreateFleet arguments and the classification of its errors.

Theory of operation, for one `launch(request)`:

1. Resolve the claim's EC2NodeClass (`NodeClassResolver`): per zone one subnet, the security
   groups, and one AMI per (architecture, variant) the options need (cached with a TTL): GPU
   types boot the alias's `nvidia` variant, Inferentia/Trainium types its `neuron` variant.
2. Plan the fleet (`plan_fleet`, pure): every offering of the claim's options (already cheapest
   first) that the claim's requirements allow (capacity type, zone, instance type, reservation
   labels: `Offering.allowed_by`), that is not
   in `request.blocked`, whose zone has a subnet and whose (architecture, variant) has an AMI. Capacity type
   by Karpenter's priority: reserved when a capacity reservation offering remains that still has
   an instance left (`reservations`), then spot when any spot offering remains after dropping
   those pricier than the cheapest allowed on-demand offering, else on-demand. A reserved plan
   keeps one kind (the cheapest offering's: ODCRs, capacity blocks or interruptible ODCRs, in
   that order on a price tie), one reservation per
   (type, zone) (the one with most left), and a single override for a capacity block (CreateFleet
   takes one block per request). At most the 60 cheapest instance types, times their zones.
3. One launch template per AMI (`LaunchTemplates`): per architecture and variant, since GPU
   and standard types of one claim boot different AMIs; its user data registers the node with
   its labels and taints (`userdata`). A reserved plan has one per (AMI, reservation): the
   template targets the reservation (`launch_template.reservation_fields`) and the node gets
   the reservation's id, type and interruptible labels.
4. CreateFleet `instant`, target capacity 1, spot `price-capacity-optimized` or on-demand
   `lowest-price` (an ODCR launches on-demand `lowest-price`; a capacity block `capacity-block`,
   no allocation strategy; an interruptible ODCR `reserved-capacity` with ReservedCapacityOptions
   `interruptible-capacity-reservation` and its template's market type of that name), tags on
   the instance, its volumes and the fleet (network interfaces get them from the launch
   template: CreateFleet cannot tag them).

Idempotency: the ClientToken is derived from the cluster and claim name, so a retry after a crash
(same claim, same request) gets EC2's stored answer instead of a second instance. A retry with a
*different* request under the same token (the claim was re-planned after a capacity error) makes
EC2 answer IdempotentParameterMismatch: then an instance tagged with the claim is looked up and
returned if one exists; only when none does is a token derived from the claim *and* the request
used, so launching twice needs both a different request and an instance EC2 does not list yet.

Errors (the port's contract): capacity errors in the response (`CAPACITY_ERROR_CODES`) raise
InsufficientCapacity with the failed (capacity type, instance type, zone) offerings (an error
without overrides counts against every offering asked for); so does a request left with no
offering at all. A capacity error of a reserved plan (ReservationCapacityExceeded: the
reservation is full) also sets the reservation's count to 0, and its offering is blocked like
any capacity error, so the next solve falls back to spot or on-demand (Karpenter's rule). Anything
else raises LaunchError naming the claim and EC2's codes. Throttling is retried with jittered
backoff (`retry.Backoff`) on every call.

Claim label and launch templates: the claim name is a node label (`nodewright.io/nodeclaim`),
so with `claim_label=True` (the default) user data, and with it the template, is per claim; such
a template is deleted right after its CreateFleet (a replay recreates the identical one first)
and `prune_launch_templates` collects any a crash left. With `claim_label=False` templates are
shared per (NodeClass, AMI, capacity type) and cached for the life of the process.
"""

from __future__ import annotations

import base64
import json
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from functools import partial
from typing import Any

from nodewright.adapters.aws.fleet import (
    CAPACITY_ERROR_CODES,
    CLUSTER_TAG,
    MAX_INSTANCE_TYPES,
    NODECLAIM_TAG,
    NODEPOOL_TAG,
    FleetErrors,
    FleetPlan,
    Override,
    candidate_overrides,
    classify_errors,
    client_token,
    fleet_request,
    offering_price,
    plan_fleet,
    resource_tags,
    tag_list,
)
from nodewright.adapters.aws.instance_calls import each_known
from nodewright.adapters.aws.instance_profiles import InstanceProfiles
from nodewright.adapters.aws.launch_template import NOT_FOUND_CODES, LaunchTemplates, reservation_fields, template_data
from nodewright.adapters.aws.nodeclass_resolver import (
    STANDARD,
    NodeClassNotResolved,
    NodeClassResolver,
    ResolvedNodeClass,
    variant_of,
)
from nodewright.adapters.aws.reservations import CapacityReservations
from nodewright.adapters.aws.retry import Backoff, error_code
from nodewright.adapters.aws.userdata import Bootstrap, InvalidBootstrap, node_labels, node_taints, render
from nodewright.model import labels as wk
from nodewright.model.cluster import ClusterInfo
from nodewright.model.instance import Instance, InstanceFacts, InstanceStatus
from nodewright.model.instancetype import OfferingKey
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.ports import Clock, InsufficientCapacity, LaunchError, LaunchRequest

__all__ = [
    "CAPACITY_ERROR_CODES",
    "CLUSTER_TAG",
    "LIVE_STATES",
    "MAX_INSTANCE_TYPES",
    "NODECLAIM_TAG",
    "NODEPOOL_TAG",
    "STATUS_BATCH",
    "STATUS_CHECKS",
    "TERMINATE_BATCH",
    "Ec2CloudProvider",
    "FleetErrors",
    "FleetPlan",
    "Override",
    "candidate_overrides",
    "classify_errors",
    "client_token",
    "fleet_request",
    "instance_from_description",
    "instance_status_from_description",
    "plan_fleet",
    "resource_tags",
]


log = logging.getLogger(__name__)

LIVE_STATES = ("pending", "running", "stopping", "stopped", "shutting-down")
TERMINATE_BATCH = 500
_ID_PATTERN = r"i-[0-9a-f]+"


def instance_from_description(item: Mapping[str, Any]) -> Instance:
    """An Instance from one DescribeInstances entry (tags give the claim and NodePool)."""
    tags = {t["Key"]: t["Value"] for t in item.get("Tags", [])}
    lifecycle = item.get("InstanceLifecycle")
    if lifecycle == "spot":
        capacity_type = "spot"
    elif item.get("CapacityReservationId"):
        capacity_type = "reserved"
    else:
        capacity_type = "on-demand"
    launched = item.get("LaunchTime")
    return Instance(
        instance_id=str(item["InstanceId"]),
        instance_type=str(item.get("InstanceType", "")),
        zone=str((item.get("Placement") or {}).get("AvailabilityZone", "")),
        capacity_type=capacity_type,
        state=str((item.get("State") or {}).get("Name", "")),
        launched_at=launched.timestamp() if isinstance(launched, datetime) else 0.0,
        nodeclaim=tags.get(NODECLAIM_TAG, ""),
        nodepool=tags.get(NODEPOOL_TAG, ""),
        image_id=str(item.get("ImageId", "")),
        instance_profile=str((item.get("IamInstanceProfile") or {}).get("Arn", "")).rsplit("/", 1)[-1],
    )


# DescribeInstanceStatus's status blocks, by the name `InstanceStatus.impaired` gives each check.
STATUS_CHECKS = (("system", "SystemStatus"), ("instance", "InstanceStatus"), ("ebs", "AttachedEbsStatus"))
STATUS_BATCH = 100


def instance_status_from_description(item: Mapping[str, Any]) -> InstanceStatus | None:
    """An InstanceStatuses entry as an `InstanceStatus` when a check is impaired, else None.
    `since` is the earliest ImpairedSince of the failed checks' details (0.0 when EC2 gave none).
    """
    impaired: list[str] = []
    since: list[float] = []
    for name, key in STATUS_CHECKS:
        block = item.get(key) or {}
        if block.get("Status") != "impaired":
            continue
        impaired.append(name)
        for detail in block.get("Details") or ():
            moment = detail.get("ImpairedSince")
            if isinstance(moment, datetime):
                since.append(moment.timestamp())
    if not impaired:
        return None
    return InstanceStatus(str(item.get("InstanceId") or ""), tuple(impaired), min(since, default=0.0))


# --- the provider (I/O) ------------------------------------------------------------------------


class Ec2CloudProvider:
    """`CloudProvider` for EC2 (see the module docstring for how a launch works).

    `profiles` chooses each launch's instance profile from its NodeClass's `role` or
    `instanceProfile` (`adapters.aws.instance_profiles`: the deployment's roles only, never the
    stack's in place of another); the functions always pass it. Without it (tools and tests that
    launch with one known profile), `instance_profile` is used for every NodeClass naming a
    `role`, and a NodeClass's `instanceProfile` as is.
    `reservations` is the container's capacity reservation counts, shared with the catalog: a
    launch into a reservation takes one, a full reservation is set to 0 (without it, the
    offerings' own counts decide). Not thread-safe: one per Lambda container.
    """

    def __init__(
        self,
        ec2_client: Any,
        ssm_client: Any,
        cluster: ClusterInfo,
        *,
        instance_profile: str = "",
        profiles: InstanceProfiles | None = None,
        clock: Clock,
        backoff: Backoff | None = None,
        resolver: NodeClassResolver | None = None,
        templates: LaunchTemplates | None = None,
        claim_label: bool = True,
        terminate_batch: int = TERMINATE_BATCH,
        reservations: CapacityReservations | None = None,
    ) -> None:
        self._ec2 = ec2_client
        self._cluster = cluster
        self._instance_profile = instance_profile
        self._profiles = profiles
        self._clock = clock
        self._backoff = backoff or Backoff()
        self._resolver = resolver or NodeClassResolver(
            ec2_client, ssm_client, cluster, clock=clock, backoff=self._backoff
        )
        self._templates = templates or LaunchTemplates(ec2_client, cluster.name, backoff=self._backoff)
        self._claim_label = claim_label
        self._terminate_batch = terminate_batch
        self._reservations = reservations

    # CloudProvider ------------------------------------------------------------------------------

    def launch(self, request: LaunchRequest) -> Instance:
        """Launch the claim's node; see the module docstring for the contract."""
        claim = request.claim
        variants = sorted({variant_of(option) for option in request.options}) or [STANDARD]
        try:
            resolved = self._resolver.resolve(request.nodeclass, variants)
        except LaunchError:
            raise
        except Exception as error:
            raise LaunchError(
                f"claim {claim.name}: EC2NodeClass {request.nodeclass.name} could not be resolved: "
                f"{_describe_error(error)}"
            ) from error
        if request.options and not any(resolved.image_for(option) for option in request.options):
            raise NodeClassNotResolved(
                f"claim {claim.name}: EC2NodeClass {request.nodeclass.name} has no AMI for the "
                f"{', '.join(variants)} variant of any instance type option"
            )
        remaining = self._reservations.remaining() if self._reservations is not None else None
        plan = plan_fleet(request, resolved, remaining)
        if plan is None:
            raise InsufficientCapacity((), f"claim {claim.name}: no allowed offering is left to launch")
        templates = self._ensure_templates(request, resolved, plan)
        try:
            outcome = self._create_fleet(request, plan, templates)
            if (
                not isinstance(outcome, Instance)
                and classify_errors(outcome.get("Errors") or [], plan).template_missing
            ):
                # Deleted behind our back (pruned by another process): recreate once and retry.
                for name in templates.values():
                    self._templates.forget(name)
                templates = self._ensure_templates(request, resolved, plan)
                outcome = self._create_fleet(request, plan, templates)
        finally:
            if self._claim_label:
                self._drop_templates(templates.values())
        if isinstance(outcome, Instance):
            price = offering_price(request.options, outcome.capacity_type, outcome.instance_type, outcome.zone)
            instance = replace(outcome, nodepool=request.nodepool.name, price=price)
        else:
            try:
                instance = self._instance_or_raise(request, plan, outcome)
            except InsufficientCapacity as error:
                self._reservations_full(plan, error.offerings)
                raise
            self._reservation_taken(plan, instance)
        if not instance.image_id:
            image_id = next((o.image_id for o in plan.overrides if o.instance_type == instance.instance_type), "")
            if image_id:
                instance = replace(instance, image_id=image_id)
        return instance

    def instances(self) -> list[Instance]:
        """Every instance tagged for this cluster that is not terminated."""
        return self._describe([{"Name": f"tag:{CLUSTER_TAG}", "Values": [self._cluster.name]}])

    def terminate(self, instance_ids: Sequence[str]) -> None:
        """Terminate in batches; ids EC2 does not know count as terminated."""
        ids = list(dict.fromkeys(instance_ids))
        for start in range(0, len(ids), self._terminate_batch):
            each_known(self._backoff, self._ec2.terminate_instances, ids[start : start + self._terminate_batch])

    def stop(self, instance_ids: Sequence[str]) -> None:
        """Stop standby instances (their EBS volumes stay); a no-op on a stopped one, unknown ids skipped."""
        if ids := list(dict.fromkeys(instance_ids)):
            each_known(self._backoff, self._ec2.stop_instances, ids)

    def start(self, instance_id: str, offering: OfferingKey) -> None:
        """StartInstances (no-op if running); capacity errors: InsufficientCapacity(`offering`), others LaunchError."""
        try:
            self._backoff.call(partial(self._ec2.start_instances, InstanceIds=[instance_id]))
        except Exception as error:
            if (code := error_code(error)) in CAPACITY_ERROR_CODES:
                raise InsufficientCapacity([offering], code) from error
            raise LaunchError(f"StartInstances {instance_id}: {_describe_error(error)}") from error

    def image_ids(self, nodeclasses: Mapping[str, EC2NodeClass]) -> dict[str, frozenset[str]]:
        """The AMI ids each EC2NodeClass resolves to now (`NodeClassResolver.image_ids`)."""
        return self._resolver.image_ids(nodeclasses)

    def instance_statuses(self, instance_ids: Sequence[str]) -> list[InstanceStatus]:
        """The running instances among `instance_ids` whose system, instance or attached-EBS status
        check is impaired (DescribeInstanceStatus, `STATUS_BATCH` ids a call, as EC2 allows with
        ids); ids EC2 does not know are skipped, other errors raised.
        """
        ids = list(dict.fromkeys(instance_ids))
        out: list[InstanceStatus] = []
        for start in range(0, len(ids), STATUS_BATCH):
            out += self._statuses(ids[start : start + STATUS_BATCH])
        return sorted(out, key=lambda s: s.instance_id)

    def instance_facts(self, instance_ids: Sequence[str], *, spot_status: bool = False) -> dict[str, InstanceFacts]:
        """What EC2 says about each id, by id (DescribeInstances with InstanceIds: no tag filter,
        so a tag removed or forged changes nothing), then with `spot_status` each spot instance's
        request status (DescribeSpotInstanceRequests); ids EC2 does not know map to facts not `known`.
        """
        ids = list(dict.fromkeys(instance_ids))
        found: dict[str, Mapping[str, Any]] = {}
        for start in range(0, len(ids), STATUS_BATCH):
            found.update(self._described(ids[start : start + STATUS_BATCH]))
        requests = {i: str(d["SpotInstanceRequestId"]) for i, d in found.items() if d.get("SpotInstanceRequestId")}
        statuses = self._spot_statuses(sorted(set(requests.values()))) if requests and spot_status else {}
        out: dict[str, InstanceFacts] = {}
        for instance_id in ids:
            item = found.get(instance_id)
            if item is None:
                out[instance_id] = InstanceFacts(instance_id, known=False)
                continue
            out[instance_id] = InstanceFacts(
                instance_id,
                known=True,
                state=str((item.get("State") or {}).get("Name", "")),
                spot=item.get("InstanceLifecycle") == "spot",
                spot_status=statuses.get(requests.get(instance_id, ""), ""),
            )
        return out

    # housekeeping ------------------------------------------------------------------------------

    def prune_launch_templates(self, older_than: float = 3600.0) -> list[str]:
        """Delete this cluster's launch templates older than `older_than` seconds.

        Any still needed are recreated on use. Returns the names deleted.
        """
        return self._templates.prune(self._clock.now(), older_than)

    # internals ----------------------------------------------------------------------------------

    def _reservation_taken(self, plan: FleetPlan, instance: Instance) -> None:
        if self._reservations is None or plan.capacity_type != "reserved":
            return
        for override in plan.overrides:
            if (override.instance_type, override.zone) == (instance.instance_type, instance.zone):
                self._reservations.mark_launched(override.reservation_id)
                return

    def _reservations_full(self, plan: FleetPlan, failed: Iterable[OfferingKey]) -> None:
        if self._reservations is None or plan.capacity_type != "reserved":
            return
        hit = {(t, z) for _, t, z in failed}
        self._reservations.mark_unavailable(
            o.reservation_id for o in plan.overrides if (o.instance_type, o.zone) in hit
        )

    def _user_data(self, request: LaunchRequest, plan: FleetPlan, override: Override) -> str:
        """Base64 user data for the nodes of one launch template (the reservation's labels on a
        reserved node, as Karpenter labels it).
        """
        nodeclass = request.nodeclass
        labels = node_labels(request.claim, request.nodepool, plan.capacity_type, claim_label=self._claim_label)
        if override.reservation_id:
            labels[wk.CAPACITY_RESERVATION_ID] = override.reservation_id
            labels[wk.CAPACITY_RESERVATION_TYPE] = override.reservation_type
            labels[wk.CAPACITY_RESERVATION_INTERRUPTIBLE] = "true" if override.reservation_interruptible else "false"
        bootstrap = Bootstrap(
            cluster=self._cluster,
            labels=dict(sorted(labels.items())),
            taints=node_taints(request.claim, request.nodepool),
            kubelet=nodeclass.kubelet,
            custom_user_data=nodeclass.user_data,
        )
        try:
            text = render(nodeclass.effective_ami_family, bootstrap)
        except InvalidBootstrap as error:
            raise LaunchError(f"claim {request.claim.name}: cannot build user data: {error}") from None
        return base64.b64encode(text.encode()).decode()

    def _ensure_templates(
        self, request: LaunchRequest, resolved: ResolvedNodeClass, plan: FleetPlan
    ) -> dict[tuple[str, str], str]:
        nodeclass = request.nodeclass
        if self._profiles is not None:
            profile = self._profiles.for_nodeclass(nodeclass)
        else:
            profile = nodeclass.instance_profile or self._instance_profile
        static_tags = {
            k: v for k, v in resource_tags(self._cluster.name, request).items() if k not in (NODECLAIM_TAG, "Name")
        }
        names: dict[tuple[str, str], str] = {}
        firsts = {o.template_key: o for o in reversed(plan.overrides)}
        for key in sorted(firsts):
            override = firsts[key]
            data = template_data(
                nodeclass=nodeclass,
                image_id=override.image_id,
                user_data_b64=self._user_data(request, plan, override),
                security_groups=resolved.security_groups,
                instance_profile=profile,
                ip_family=self._cluster.ip_family,
            )
            data.update(
                reservation_fields(
                    nodeclass,
                    override.reservation_id,
                    override.reservation_type,
                    interruptible=override.reservation_interruptible,
                )
            )
            # CreateFleet cannot tag network interfaces, a launch template can; claim-free tags
            # keep one shared template per NodePool when the claim label is off.
            data["TagSpecifications"] = [{"ResourceType": "network-interface", "Tags": tag_list(static_tags)}]
            try:
                names[key] = self._templates.ensure(data, nodeclass=nodeclass)
            except Exception as error:
                raise LaunchError(
                    f"claim {request.claim.name}: CreateLaunchTemplate failed: {_describe_error(error)}"
                ) from error
        return names

    def _create_fleet(
        self, request: LaunchRequest, plan: FleetPlan, templates: Mapping[tuple[str, str], str]
    ) -> dict[str, Any] | Instance:
        """The CreateFleet response, or the claim's instance when an earlier attempt launched it."""
        claim = request.claim
        tags = resource_tags(self._cluster.name, request)
        arguments = fleet_request(plan, templates, tags, client_token(self._cluster.name, claim.name))
        try:
            return self._call_fleet(arguments)
        except Exception as error:
            code = error_code(error)
            if code in NOT_FOUND_CODES:
                # Reported as an API error rather than in Errors: the same case to `launch`.
                return {"Instances": [], "Errors": [{"ErrorCode": code, "ErrorMessage": _describe_error(error)}]}
            if code != "IdempotentParameterMismatch":
                raise LaunchError(f"claim {claim.name}: CreateFleet failed: {_describe_error(error)}") from error
        # The claim's token was spent on a different request (an earlier attempt of this claim).
        existing = self._claim_instances(claim.name)
        if existing:
            log.info("claim %s: already launched as %s", claim.name, existing[0].instance_id)
            return existing[0]
        content = json.dumps({k: v for k, v in arguments.items() if k != "ClientToken"}, sort_keys=True)
        arguments["ClientToken"] = client_token(self._cluster.name, claim.name, content)
        try:
            return self._call_fleet(arguments)
        except Exception as error:
            raise LaunchError(f"claim {claim.name}: CreateFleet failed: {_describe_error(error)}") from error

    def _call_fleet(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        response: dict[str, Any] = self._backoff.call(lambda: self._ec2.create_fleet(**arguments))
        return response

    def _instance_or_raise(self, request: LaunchRequest, plan: FleetPlan, response: Mapping[str, Any]) -> Instance:
        claim = request.claim
        errors = classify_errors(response.get("Errors") or [], plan)
        for entry in response.get("Instances") or []:
            ids = entry.get("InstanceIds") or []
            if not ids:
                continue
            if len(ids) > 1:
                log.warning("claim %s: CreateFleet returned %d instances, keeping %s", claim.name, len(ids), ids[0])
            overrides = (entry.get("LaunchTemplateAndOverrides") or {}).get("Overrides") or {}
            instance_type = str(entry.get("InstanceType") or overrides.get("InstanceType", ""))
            subnet_zone = {o.subnet_id: o.zone for o in plan.overrides}
            zone = str(overrides.get("AvailabilityZone") or subnet_zone.get(str(overrides.get("SubnetId", "")), ""))
            capacity_type = str(entry.get("Lifecycle") or plan.capacity_type)
            if plan.capacity_type == "reserved":
                capacity_type = "reserved"  # EC2 says on-demand (or capacity-block): it is the reservation's
            if errors.capacity:
                log.info("claim %s: launched after capacity errors on %s", claim.name, errors.capacity)
            return Instance(
                instance_id=str(ids[0]),
                instance_type=instance_type,
                zone=zone,
                capacity_type=capacity_type,
                state="pending",
                launched_at=self._clock.now(),
                nodeclaim=claim.name,
                nodepool=request.nodepool.name,
                price=offering_price(request.options, capacity_type, instance_type, zone),
            )
        if errors.capacity:
            raise InsufficientCapacity(errors.capacity, errors.reason)
        detail = "; ".join(errors.other) or "CreateFleet returned no instance and no error"
        raise LaunchError(f"claim {claim.name}: {detail}")

    def _drop_templates(self, names: Iterable[str]) -> None:
        for name in names:
            try:
                self._templates.delete(name)
            except Exception as error:  # best effort: prune_launch_templates collects leftovers
                log.warning("could not delete launch template %s: %s", name, _describe_error(error))

    def _claim_instances(self, claim: str) -> list[Instance]:
        return self._describe(
            [
                {"Name": f"tag:{CLUSTER_TAG}", "Values": [self._cluster.name]},
                {"Name": f"tag:{NODECLAIM_TAG}", "Values": [claim]},
            ]
        )

    def _describe(self, filters: list[dict[str, Any]]) -> list[Instance]:
        query = [*filters, {"Name": "instance-state-name", "Values": list(LIVE_STATES)}]

        def pages() -> list[Instance]:
            paginator = self._ec2.get_paginator("describe_instances")
            return [
                instance_from_description(item)
                for page in paginator.paginate(Filters=query)
                for reservation in page.get("Reservations", [])
                for item in reservation.get("Instances", [])
            ]

        found = self._backoff.call(pages)
        return sorted(found, key=lambda i: (i.launched_at, i.instance_id))

    def _statuses(self, ids: list[str]) -> list[InstanceStatus]:
        remaining = list(ids)
        while remaining:
            try:
                response = self._backoff.call(partial(self._ec2.describe_instance_status, InstanceIds=remaining))
            except Exception as error:
                # One gone instance fails the whole call: drop the ids EC2 names and ask again.
                gone = set(re.findall(_ID_PATTERN, str(error))) & set(remaining)
                if error_code(error) != "InvalidInstanceID.NotFound" or not gone:
                    raise
                remaining = [i for i in remaining if i not in gone]
                continue
            found = (instance_status_from_description(item) for item in response.get("InstanceStatuses", []))
            return [status for status in found if status is not None]
        return []

    def _described(self, ids: list[str]) -> dict[str, Mapping[str, Any]]:
        """DescribeInstances entries by id; ids EC2 does not know are left out (one unknown id
        fails the whole call: drop the ids EC2 names and ask again).
        """
        remaining = list(ids)
        while remaining:
            try:
                response = self._backoff.call(partial(self._ec2.describe_instances, InstanceIds=remaining))
            except Exception as error:
                gone = set(re.findall(_ID_PATTERN, str(error))) & set(remaining)
                if error_code(error) not in ("InvalidInstanceID.NotFound", "InvalidInstanceID.Malformed") or not gone:
                    raise
                remaining = [i for i in remaining if i not in gone]
                continue
            return {
                str(item["InstanceId"]): item
                for reservation in response.get("Reservations", [])
                for item in reservation.get("Instances", [])
            }
        return {}

    def _spot_statuses(self, request_ids: list[str]) -> dict[str, str]:
        """Spot request id -> its status code (DescribeSpotInstanceRequests by id)."""
        response = self._backoff.call(
            partial(self._ec2.describe_spot_instance_requests, SpotInstanceRequestIds=request_ids)
        )
        return {
            str(r.get("SpotInstanceRequestId", "")): str((r.get("Status") or {}).get("Code", ""))
            for r in response.get("SpotInstanceRequests", [])
        }


def _describe_error(error: BaseException) -> str:
    code = error_code(error)
    if code:
        message = getattr(error, "response", {}).get("Error", {}).get("Message", "")
        return f"{code}: {message}" if message else code
    return f"{type(error).__name__}: {error}"
