"""AWS test doubles shared by the EC2 adapter tests and the provisioner handler tests.

- `IdempotentEc2`: moto's EC2 client plus CreateFleet's ClientToken idempotency as EC2 documents
  it (moto ignores the token), recording every CreateFleet and CreateLaunchTemplate request.
- `PublicParameters`: SSM GetParameter over a dict, for AWS's public `/aws/service/...`
  parameters (the EKS-optimized and Bottlerocket AMI ids), which moto refuses to store
  (PutParameter answers AccessDeniedException for reserved names).
- `create_network`: a VPC with tagged subnets and a tagged security group in moto.
- `amazon_images`: the ids of moto's public AMI catalogue, by architecture.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from botocore.exceptions import ClientError


class IdempotentEc2:
    """moto's EC2 client plus EC2's documented ClientToken semantics for CreateFleet.

    Records every CreateFleet and CreateLaunchTemplate request; everything else goes to moto.
    """

    def __init__(self, client: Any) -> None:
        self._client = client
        self._answers: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
        self.fleet_requests: list[dict[str, Any]] = []
        self.template_requests: list[dict[str, Any]] = []

    def create_fleet(self, **request: Any) -> dict[str, Any]:
        self.fleet_requests.append(copy.deepcopy(request))
        token = request.get("ClientToken", "")
        content = {k: v for k, v in request.items() if k != "ClientToken"}
        if token in self._answers:
            asked, answer = self._answers[token]
            if asked != content:
                raise ClientError(
                    {"Error": {"Code": "IdempotentParameterMismatch", "Message": "token reused"}}, "CreateFleet"
                )
            return answer
        answer = self._client.create_fleet(**request)
        self._answers[token] = (copy.deepcopy(content), answer)
        return dict(answer)

    def create_launch_template(self, **request: Any) -> dict[str, Any]:
        self.template_requests.append(copy.deepcopy(request))
        return dict(self._client.create_launch_template(**request))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


class PublicParameters:
    """An SSM client answering GetParameter from `values`; unknown names raise ParameterNotFound.

    `asked` records every name asked for, in order.
    """

    def __init__(self, values: Mapping[str, str] | None = None) -> None:
        self.values = dict(values or {})
        self.asked: list[str] = []

    def get_parameter(self, **request: Any) -> dict[str, Any]:
        name = str(request["Name"])
        self.asked.append(name)
        if name not in self.values:
            raise ClientError(
                {"Error": {"Code": "ParameterNotFound", "Message": f"Parameter {name} not found."}}, "GetParameter"
            )
        return {"Parameter": {"Name": name, "Type": "String", "Value": self.values[name]}}


def _tag_spec(kind: str, tags: Mapping[str, str]) -> list[dict[str, Any]]:
    return [{"ResourceType": kind, "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}] if tags else []


def create_network(
    ec2: Any, subnets: Sequence[tuple[str, str, str]], tags: Mapping[str, str], *, group: str = "nodes"
) -> dict[str, str]:
    """A VPC with `subnets` (name, CIDR in 10.0.0.0/16, zone) and one security group, all tagged
    `tags`. Returns their ids by name, the group's under "sg".
    """
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    ids: dict[str, str] = {}
    for name, cidr, zone in subnets:
        created = ec2.create_subnet(
            VpcId=vpc, CidrBlock=cidr, AvailabilityZone=zone, TagSpecifications=_tag_spec("subnet", tags)
        )
        ids[name] = str(created["Subnet"]["SubnetId"])
    ids["sg"] = str(
        ec2.create_security_group(
            GroupName=group, Description=group, VpcId=vpc, TagSpecifications=_tag_spec("security-group", tags)
        )["GroupId"]
    )
    return ids


def amazon_images(ec2: Any) -> dict[str, list[str]]:
    """moto's public Amazon AMI ids by architecture (x86_64, arm64), sorted.

    moto registers the same public AMIs (from the list it ships) in every mock, and one
    DescribeImages of them costs it about a second of CPU, so the first call of the process asks
    and later calls reuse its answer, after checking (one cheap DescribeImages by id) that this
    mock holds the first image of each architecture.
    """
    if not _AMAZON_IMAGES:
        for image in ec2.describe_images(Owners=["amazon"])["Images"]:
            _AMAZON_IMAGES.setdefault(str(image["Architecture"]), []).append(str(image["ImageId"]))
        for ids in _AMAZON_IMAGES.values():
            ids.sort()
    else:
        firsts = [ids[0] for ids in _AMAZON_IMAGES.values()]
        assert len(ec2.describe_images(ImageIds=firsts)["Images"]) == len(firsts)
    return {arch: list(ids) for arch, ids in _AMAZON_IMAGES.items()}


_AMAZON_IMAGES: dict[str, list[str]] = {}
