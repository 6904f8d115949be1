"""EC2 instances Nodewright launched, as the cloud provider reports them; what EC2 says about any
instance id (`InstanceFacts`). Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

# EC2 instance states that still cost money or may come back.
LIVE_STATES = frozenset({"pending", "running", "stopping", "stopped"})


@dataclass(frozen=True, slots=True)
class Instance:
    """One instance carrying this cluster's tags; `nodeclaim` is '' when the tag is missing."""

    instance_id: str
    instance_type: str
    zone: str
    capacity_type: str
    state: str
    launched_at: float
    nodeclaim: str = ""
    nodepool: str = ""
    price: float = 0.0
    image_id: str = ""
    # The IAM instance profile's name as EC2 reports it ("" when it reports none).
    instance_profile: str = ""

    @property
    def provider_id(self) -> str:
        """The Kubernetes providerID of the node this instance becomes."""
        return f"aws:///{self.zone}/{self.instance_id}"

    @property
    def live(self) -> bool:
        """True until the instance is shutting down or terminated."""
        return self.state in LIVE_STATES


@dataclass(frozen=True, slots=True)
class InstanceStatus:
    """An instance whose EC2 status checks fail (DescribeInstanceStatus): which ones are impaired
    ("system", "instance", "ebs": AWS's hardware and network, the instance's own OS and network,
    its attached EBS volumes) and since when (the earliest ImpairedSince; 0.0 when EC2 gave none).
    """

    instance_id: str
    impaired: tuple[str, ...]
    since: float = 0.0


@dataclass(frozen=True, slots=True)
class InstanceFacts:
    """What EC2 says about one instance id, whoever launched it (DescribeInstances by id, then its
    spot request): the facts an interruption message is checked against
    (`nodewright.engine.interruption.verification`).

    `known` is False when EC2 does not know the id (terminated long ago, or never existed);
    `state` is the instance state name; `spot` is True for a spot instance; `spot_status` is its
    spot request's status code (`marked-for-termination`, ...), "" when EC2 exposes no request.
    """

    instance_id: str
    known: bool
    state: str = ""
    spot: bool = False
    spot_status: str = ""
