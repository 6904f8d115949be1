"""The simulated account's stand-ins over moto: AMI parameters, mirrored reads, the Lambda client.

Role: `PublicParameters` (AWS's public AMI parameters), `MirroredCloud` and `MirroredStateStore`
(decorators of the real EC2 provider and DynamoDB state store, with reads answered from a
write-through mirror, checked against moto at the end of a run) and `SimulatedLambda` (an asynchronous invoke starts a
provisioner invocation); why each exists is in `nodewright.simulator.standins.account`'s docstring.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from nodewright.adapters.aws.ec2 import Ec2CloudProvider
from nodewright.adapters.aws.state_store import DynamoStateStore
from nodewright.model.command import CommandRecord
from nodewright.model.instance import Instance, InstanceFacts, InstanceStatus
from nodewright.model.instancetype import OfferingKey
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.ports import DrainRecord, LaunchRequest


class PublicParameters:
    """moto's SSM client plus AWS's public AMI parameters (`/aws/service/...`)."""

    def __init__(self, client: Any, images: Mapping[str, str]) -> None:
        self._client = client
        # EC2 architecture (x86_64, arm64) -> image id: the account's own mapping, read live, so
        # an AMI release (SimulatedAccount.release_images) moves every alias to the new images.
        self._images = images

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


class MirroredCloud:
    """The EC2 cloud provider (the real one, decorated) with `instances()` answered from a
    registry (see the module docstring); every other call is the provider's.
    """

    def __init__(self, cloud: Ec2CloudProvider, registry: Callable[[], list[Instance]]) -> None:
        self.cloud = cloud  # the real provider: DescribeInstances and every write go through it
        self._registry = registry

    def launch(self, request: LaunchRequest) -> Instance:
        """The provider's launch (CreateFleet)."""
        return self.cloud.launch(request)

    def instances(self) -> list[Instance]:
        """The cluster's live instances, oldest first, from the registry."""
        return sorted(self._registry(), key=lambda i: (i.launched_at, i.instance_id))

    def terminate(self, instance_ids: Sequence[str]) -> None:
        """The provider's termination."""
        self.cloud.terminate(instance_ids)

    def stop(self, instance_ids: Sequence[str]) -> None:
        """The provider's StopInstances."""
        self.cloud.stop(instance_ids)

    def start(self, instance_id: str, offering: OfferingKey) -> None:
        """The provider's StartInstances."""
        self.cloud.start(instance_id, offering)

    def instance_statuses(self, instance_ids: Sequence[str]) -> list[InstanceStatus]:
        """The provider's DescribeInstanceStatus."""
        return self.cloud.instance_statuses(instance_ids)

    def instance_facts(self, instance_ids: Sequence[str], *, spot_status: bool = False) -> dict[str, InstanceFacts]:
        """The provider's facts about the instances."""
        return self.cloud.instance_facts(instance_ids, spot_status=spot_status)

    def image_ids(self, nodeclasses: Mapping[str, EC2NodeClass]) -> dict[str, frozenset[str]]:
        """The provider's resolved AMIs per EC2NodeClass (SSM parameters, DescribeImages)."""
        return self.cloud.image_ids(nodeclasses)

    def described(self) -> list[Instance]:
        """The same list as `instances()`, from moto (DescribeInstances), for the end-of-run check."""
        return self.cloud.instances()


class MirroredStateStore:
    """The DynamoDB state store (the real one, decorated) with claim, capacity-error and command
    reads served from a write-through mirror (see the module docstring). Every write goes to the
    table first, then to the mirror; leases and drain records are the table's only.

    Claims are copied in (their `labels` dict), as the table keeps a serialised record; readers get
    the stored copies, which no controller mutates.
    """

    def __init__(self, store: DynamoStateStore) -> None:
        self.store = store  # the table: every write, and the end-of-run check, go through it
        self._claims: dict[str, NodeClaim] = {}
        self._sorted: list[NodeClaim] | None = None
        self._blocked: dict[OfferingKey, float] = {}
        self._commands: dict[str, CommandRecord] = {}

    def create_claim(self, claim: NodeClaim) -> bool:
        """DynamoDB's conditional put decides; the mirror follows. A refused put is looked up in
        the table: the record may be this very claim, written by an attempt whose answer was lost.
        """
        created = self.store.create_claim(claim)
        if created:
            self._put(claim)
        elif claim.name not in self._claims:
            stored = next((c for c in self.store.claims() if c.name == claim.name), None)
            if stored is not None:
                self._put(stored)
        return created

    def save_claim(self, claim: NodeClaim) -> None:
        """Overwrite in DynamoDB, then in the mirror."""
        self.store.save_claim(claim)
        self._put(claim)

    def claims(self) -> list[NodeClaim]:
        """Every claim, sorted by name, from the mirror."""
        if self._sorted is None:
            self._sorted = [self._claims[name] for name in sorted(self._claims)]
        return list(self._sorted)

    def delete_claim(self, name: str) -> None:
        """Delete in DynamoDB, then in the mirror."""
        self.store.delete_claim(name)
        if self._claims.pop(name, None) is not None:
            self._sorted = None

    def acquire_lease(self, name: str, holder: str, now: float, ttl: float) -> bool:
        """The table's conditional lease."""
        return self.store.acquire_lease(name, holder, now, ttl)

    def release_lease(self, name: str, holder: str) -> None:
        """The table's lease release."""
        self.store.release_lease(name, holder)

    def block_offerings(self, offerings: Iterable[OfferingKey], until: float) -> None:
        """Block in DynamoDB (never shortening a block), then in the mirror."""
        chosen = sorted(set(offerings))
        self.store.block_offerings(chosen, until)
        for offering in chosen:
            self._blocked[offering] = max(until, self._blocked.get(offering, until))

    def blocked_offerings(self, now: float) -> frozenset[OfferingKey]:
        """Offerings blocked beyond `now`, from the mirror."""
        return frozenset(o for o, until in self._blocked.items() if until > now)

    def save_command(self, record: CommandRecord) -> None:
        """Write in DynamoDB, then in the mirror."""
        self.store.save_command(record)
        self._commands[record.id] = record

    def commands(self) -> list[CommandRecord]:
        """Every command record, oldest first, from the mirror."""
        return sorted(self._commands.values(), key=lambda r: (r.created_at, r.id))

    def delete_command(self, command_id: str) -> None:
        """Delete in DynamoDB, then in the mirror."""
        self.store.delete_command(command_id)
        self._commands.pop(command_id, None)

    def save_drain(self, record: DrainRecord) -> None:
        """The table's drain record."""
        self.store.save_drain(record)

    def drain_record(self, chain: str, now: float) -> DrainRecord | None:
        """The table's drain record of `chain`."""
        return self.store.drain_record(chain, now)

    def delete_drain(self, chain: str) -> None:
        """Delete the table's drain record."""
        self.store.delete_drain(chain)

    def verify(self) -> list[str]:
        """Differences between the mirror and the table (empty when they agree)."""
        stored = {c.name: c for c in self.store.claims()}
        out = [f"claim {name} is in the table only" for name in sorted(set(stored) - set(self._claims))]
        out += [f"claim {name} is in the mirror only" for name in sorted(set(self._claims) - set(stored))]
        for name in sorted(set(stored) & set(self._claims)):
            if stored[name].state != self._claims[name].state:
                out.append(f"claim {name}: table says {stored[name].state}, mirror {self._claims[name].state}")
        commands = {r.id for r in self.store.commands()}
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
