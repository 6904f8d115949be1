"""The spot request behind each simulated spot instance, and the status a warning gives it.

Role: on AWS every spot instance has a spot instance request; DescribeInstances names it
(`SpotInstanceRequestId`) and DescribeSpotInstanceRequests reports its status, which EC2 sets to
`marked-for-termination` (`-stop`, `-hibernation`) when it sends the two-minute warning. The
interruption function confirms a warning by that status (`engine.interruption.verification`).
moto launches spot instances but names no request on them and never marks one, so without this
every simulated warning took the unconfirmed path, which a real one never does.

`SpotRequests` answers both calls for the simulated EC2 (`SimulatedEc2`): DescribeInstances is
moto's answer with each spot instance's request id filled in (`sir-` and the instance id's
suffix, so no lookup is needed), DescribeSpotInstanceRequests is answered from this table:
`fulfilled` until the world `mark`s the instance as its warning goes out. Ids this table does not
know are left out of the answer (EC2 would refuse them; the caller then stays unconfirmed).
"""

from __future__ import annotations

from typing import Any

# instance-action of the warning -> the request status EC2 sets (EC2 User Guide, "Spot request status").
MARKED = {
    "terminate": "marked-for-termination",
    "stop": "marked-for-stop",
    "hibernate": "marked-for-hibernation",
}
PREFIX = "sir-"


def request_id(instance_id: str) -> str:
    """The spot request id of a simulated spot instance."""
    return PREFIX + instance_id.removeprefix("i-")


class SpotRequests:
    """Spot request ids and statuses of the simulated account's spot instances (module docstring)."""

    def __init__(self) -> None:
        self._spot: set[str] = set()  # instance ids DescribeInstances reported as spot
        self._status: dict[str, str] = {}  # instance id -> status code once marked

    def mark(self, instance_id: str, instance_action: str) -> None:
        """EC2 sends `instance_id`'s interruption warning: its request is marked."""
        self._status[instance_id] = MARKED.get(instance_action, MARKED["terminate"])

    def described(self, response: dict[str, Any]) -> dict[str, Any]:
        """moto's DescribeInstances answer with each spot instance's request id, as EC2 names it."""
        for reservation in response.get("Reservations", []):
            for item in reservation.get("Instances", []):
                if item.get("InstanceLifecycle") == "spot" and not item.get("SpotInstanceRequestId"):
                    instance_id = str(item["InstanceId"])
                    self._spot.add(instance_id)
                    item["SpotInstanceRequestId"] = request_id(instance_id)
        return response

    def describe(self, request: dict[str, Any]) -> dict[str, Any]:
        """DescribeSpotInstanceRequests by id (`SpotInstanceRequestIds`), in EC2's shape."""
        found = []
        for sir in request.get("SpotInstanceRequestIds", []):
            instance_id = "i-" + str(sir).removeprefix(PREFIX)
            if not str(sir).startswith(PREFIX) or instance_id not in self._spot:
                continue
            code = self._status.get(instance_id, "fulfilled")
            found.append(
                {
                    "SpotInstanceRequestId": str(sir),
                    "InstanceId": instance_id,
                    "State": "active",
                    "Status": {"Code": code},
                }
            )
        return {"SpotInstanceRequests": found}
