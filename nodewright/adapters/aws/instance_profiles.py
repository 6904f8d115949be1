"""The instance profile a launch names, from its EC2NodeClass's `role` or `instanceProfile`.

Role: Karpenter's EC2NodeClass gives nodes an IAM identity with `role` (Karpenter creates an
instance profile for the role and keeps it) or `instanceProfile` (an existing profile, used as it
is). `InstanceProfiles.for_nodeclass` does the same for a launch template:

* `role` is the stack's own node role: the stack's instance profile (NODE_INSTANCE_PROFILE);
* `role` is another role the deployment may pass (`NodeRoles`, the deploy key `nodeRoles`): the
  profile `nodewright_<cluster>_<hash of region and role>` under the path `/nodewright/<cluster>/`,
  tagged with the cluster (`nodewright.io/cluster`), created when missing and given the role when
  it holds none or another one. Every step reads first, so a run that died half-way is finished
  by the next (an IAM change takes a few seconds to reach EC2: a launch right after a creation
  may fail with an invalid profile, and the next pass succeeds);
* `role` is a role the deployment may not pass: `LaunchError` naming the role and the fix. It is
  never replaced by the stack's role;
* `instanceProfile`: used as it is, once IAM says the role it holds is one the deployment may
  pass (the same refusal otherwise; EC2 would refuse the launch with a bare UnauthorizedOperation).
  A deployment without nodeRoles may not read profiles: the profile is then used unchecked and
  iam:PassRole (the stack's own role only) decides.

The IAM policy (infra/constructs/permissions.py, `allow_node_roles`) allows iam:PassRole on
exactly the deployment's roles and, with nodeRoles, instance profile writes only under the path
above with the cluster's tag, and iam:GetInstanceProfile to read which role a profile holds. Answers are kept
`ttl` seconds per container: one IAM read per profile per warm container, not one per launch.

`CreatedProfiles.remove()` undoes the creations at `nodewright uninstall` (run with the caller's
own credentials, once every instance Nodewright launched is gone): it deletes exactly the profiles
this module creates for the cluster, those under `/nodewright/<cluster>/` named
`nodewright_<cluster>_...` AND tagged `nodewright.io/cluster=<cluster>`, after taking their role
out (the role itself is the user's and stays). A profile failing any of the three checks is
another's and is left. Deleting what is already gone is a no-op, so a second run finishes the first.
"""

from __future__ import annotations

import hashlib
from typing import Any

from botocore.exceptions import ClientError

from nodewright.adapters.aws.retry import Backoff, error_code
from nodewright.config.noderoles import NodeRoles, role_name
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.ports import Clock, LaunchError

CLUSTER_TAG = "nodewright.io/cluster"
ROLE_TAG = "nodewright.io/node-role"
PROFILE_TTL = 300.0


def profile_path(cluster: str) -> str:
    """The IAM path of the instance profiles Nodewright creates for `cluster`."""
    return f"/nodewright/{cluster}/"


def profile_name(cluster: str, region: str, role: str) -> str:
    """The instance profile Nodewright keeps for `role` in `cluster` and `region` (at most 128 characters)."""
    digest = hashlib.sha256(f"{region}/{role_name(role)}".encode()).hexdigest()[:16]
    return f"nodewright_{cluster}_{digest}"


class Unreadable(LaunchError):
    """IAM refuses to describe the profile (the deployment has no nodeRoles, so no such right)."""

    def __init__(self, name: str) -> None:
        super().__init__(f"cannot read instance profile {name!r}: iam:GetInstanceProfile is not granted")


class InstanceProfiles:
    """Chooses, creates and checks the instance profiles of launches (see the module docstring)."""

    def __init__(
        self,
        iam_client: Any,
        *,
        cluster: str,
        region: str,
        roles: NodeRoles,
        own_profile: str,
        clock: Clock,
        backoff: Backoff | None = None,
        ttl: float = PROFILE_TTL,
    ) -> None:
        self._iam = iam_client
        self._cluster = cluster
        self._region = region
        self._roles = roles
        self._own_profile = own_profile
        self._clock = clock
        self._backoff = backoff or Backoff()
        self._ttl = ttl
        # By role name (for `role`) or profile name (for `instanceProfile`): the profile and when checked.
        self._checked: dict[tuple[str, str], tuple[str, float]] = {}

    def for_nodeclass(self, nodeclass: EC2NodeClass) -> str:
        """The instance profile (name or ARN) launches of `nodeclass` name; LaunchError when none may be."""
        if nodeclass.instance_profile:
            return self._remembered(("profile", nodeclass.instance_profile), lambda: self._check_profile(nodeclass))
        role = role_name(nodeclass.role or "")
        if not role or self._roles.is_own(role):
            return self._own_profile
        why = self._roles.nodeclass_refusal(nodeclass)
        if why is not None:
            raise LaunchError(why)
        return self._remembered(("role", role), lambda: self._ensure(role))

    def _remembered(self, key: tuple[str, str], find: Any) -> str:
        now = self._clock.now()
        known = self._checked.get(key)
        if known is not None and now - known[1] < self._ttl:
            return known[0]
        profile: str = find()
        self._checked[key] = (profile, now)
        return profile

    def _check_profile(self, nodeclass: EC2NodeClass) -> str:
        name = str(nodeclass.instance_profile)
        try:
            profile = self._get(name)
        except Unreadable:
            # Without nodeRoles the stack may not read profiles: iam:PassRole alone decides at launch.
            return name
        if profile is None:
            raise LaunchError(f"EC2NodeClass {nodeclass.name}: instance profile {name!r} does not exist")
        for role in profile.get("Roles") or []:
            why = self._roles.refusal(str(role.get("RoleName") or ""))
            if why is not None:
                raise LaunchError(f"EC2NodeClass {nodeclass.name}: instance profile {name!r} holds a {why}")
        return name

    def _ensure(self, role: str) -> str:
        name = profile_name(self._cluster, self._region, role)
        profile = self._get(name)
        if profile is None:
            self._call(
                "CreateInstanceProfile",
                lambda: self._iam.create_instance_profile(
                    InstanceProfileName=name,
                    Path=profile_path(self._cluster),
                    Tags=[
                        {"Key": CLUSTER_TAG, "Value": self._cluster},
                        {"Key": f"kubernetes.io/cluster/{self._cluster}", "Value": "owned"},
                        {"Key": ROLE_TAG, "Value": role},
                    ],
                ),
                ignore="EntityAlreadyExists",
            )
            profile = self._get(name) or {"Roles": []}
        held = [str(r.get("RoleName") or "") for r in profile.get("Roles") or []]
        if role in held:
            return name
        for other in held:  # a profile holds one role: the one it was made for replaces another
            self._call(
                "RemoveRoleFromInstanceProfile",
                lambda other=other: self._iam.remove_role_from_instance_profile(
                    InstanceProfileName=name, RoleName=other
                ),
                ignore="NoSuchEntity",
            )
        try:
            self._backoff.call(lambda: self._iam.add_role_to_instance_profile(InstanceProfileName=name, RoleName=role))
        except ClientError as error:
            # A racing run may have added it first (IAM answers LimitExceeded): fine if it is there now.
            again = self._get(name) or {}
            if role not in [str(r.get("RoleName") or "") for r in again.get("Roles") or []]:
                raise LaunchError(f"iam:AddRoleToInstanceProfile failed: {error}") from None
        return name

    def _get(self, name: str) -> dict[str, Any] | None:
        try:
            response = self._backoff.call(lambda: self._iam.get_instance_profile(InstanceProfileName=name))
        except ClientError as error:
            if error_code(error) == "NoSuchEntity":
                return None
            if error_code(error) in ("AccessDenied", "AccessDeniedException"):
                raise Unreadable(name) from None
            raise LaunchError(f"cannot read instance profile {name!r}: {error}") from None
        found: dict[str, Any] = response["InstanceProfile"]
        return found

    def _call(self, action: str, call: Any, *, ignore: str) -> None:
        try:
            self._backoff.call(call)
        except ClientError as error:
            if error_code(error) == ignore:  # done already (by an earlier run, or a racing one)
                return
            raise LaunchError(f"iam:{action} failed: {error}") from None


class CreatedProfiles:
    """The instance profiles Nodewright created for a cluster's `nodeRoles` (module docstring)."""

    def __init__(self, iam_client: Any, *, cluster: str, backoff: Backoff | None = None) -> None:
        self._iam = iam_client
        self._cluster = cluster
        self._backoff = backoff or Backoff()

    def created(self) -> list[dict[str, Any]]:
        """The profiles under the cluster's path, named and tagged as Nodewright's for it."""
        prefix = f"nodewright_{self._cluster}_"
        pages = self._iam.get_paginator("list_instance_profiles").paginate(PathPrefix=profile_path(self._cluster))
        found = []
        for page in pages:
            for profile in page.get("InstanceProfiles") or ():
                name = str(profile.get("InstanceProfileName") or "")
                if profile.get("Path") != profile_path(self._cluster) or not name.startswith(prefix):
                    continue
                if {"Key": CLUSTER_TAG, "Value": self._cluster} in self._tags(name):
                    found.append(profile)
        return found

    def remove(self) -> list[str]:
        """Take the role out of each created profile and delete it; the names deleted."""
        removed = []
        for profile in self.created():
            name = str(profile["InstanceProfileName"])
            self._delete(name, [str(role.get("RoleName")) for role in profile.get("Roles") or ()])
            removed.append(name)
        return sorted(removed)

    def _tags(self, name: str) -> list[dict[str, str]]:
        """A profile's tags, as GetInstanceProfile returns them (ListInstanceProfiles does not)."""
        response: dict[str, Any] = self._backoff.call(lambda: self._iam.get_instance_profile(InstanceProfileName=name))
        return list(response["InstanceProfile"].get("Tags") or [])

    def _delete(self, name: str, roles: list[str]) -> None:
        for role in roles:
            self._quietly(
                lambda role=role: self._iam.remove_role_from_instance_profile(InstanceProfileName=name, RoleName=role)
            )
        self._quietly(lambda: self._iam.delete_instance_profile(InstanceProfileName=name))

    def _quietly(self, call: Any) -> None:
        """One IAM write; NoSuchEntity (removed already, by an earlier or a racing run) is success."""
        try:
            self._backoff.call(call)
        except ClientError as error:
            if error_code(error) != "NoSuchEntity":
                raise
