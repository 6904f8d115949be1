"""The node roles a deployment may pass to its nodes, and the EC2NodeClasses that name another. Pure.

Role: an EC2NodeClass names its nodes' IAM identity the way Karpenter's does, with `role` (the
functions create or reuse an instance profile for it) or `instanceProfile` (used as it is). The
stack may pass only the roles its deploy key `nodeRoles` lists, plus its own node role; its IAM
policy allows `iam:PassRole` on exactly those. `NodeRoles` holds that list, and says why a
NodeClass naming another role is refused, in one sentence that names the role and the fix. The
same sentence is a `nodepool validate`/`apply` problem (`role_problems`), a launch error, and the
reason on the NodePool's `NodeClassReady` condition, Event and decision record (`refused_pools`).

A NodeClass is never given the stack's role in place of the one it names: a node without the
policies its role carries (ECR pull-through, SSM, an S3 bootstrap) would fail later, and quietly.

A role is compared by name: `KarpenterNodeRole-demo` and
`arn:aws:iam::111122223333:role/KarpenterNodeRole-demo` (or `role/path/KarpenterNodeRole-demo`)
are the same role, as IAM resolves a role name within the account.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from nodewright.config.documents import EC2NODECLASS, Loaded
from nodewright.config.problems import Problem
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodepool import NodePool

# The NodePool condition, its reason when the NodeClass names a role the stack may not pass, and
# the Event reason (Karpenter reports a NodeClass it cannot use through NodeClassReady too).
NODECLASS_READY = "NodeClassReady"
ROLE_NOT_ALLOWED = "NodeRoleNotAllowed"


def role_name(text: str) -> str:
    """The role's name, from a name or an ARN (`arn:aws:iam::1:role/some/path/name` -> `name`)."""
    text = text.strip()
    if text.startswith("arn:"):
        return text.rsplit("/", 1)[-1]
    return text


@dataclass(frozen=True, slots=True)
class NodeRoles:
    """The roles this deployment may pass to nodes: its own (`own`, a name) and the listed ones.

    `own` empty means the deployment's roles are not known here (a test or a tool without the
    settings): nothing is refused, and IAM alone decides.
    """

    own: str = ""
    listed: frozenset[str] = frozenset()

    @classmethod
    def of(cls, own: str, listed: Iterable[str] = ()) -> NodeRoles:
        """From the stack's node role (name or ARN) and the deploy key's roles (names or ARNs)."""
        return cls(role_name(own), frozenset(role_name(r) for r in listed if r.strip()))

    @property
    def known(self) -> bool:
        """True when the list is known (the functions' settings, or `--node-roles`)."""
        return bool(self.own)

    @property
    def allowed(self) -> frozenset[str]:
        """Every role name the deployment may pass."""
        return self.listed | {self.own} if self.own else self.listed

    def is_own(self, role: str) -> bool:
        """True for the stack's own node role (its instance profile is the stack's)."""
        return bool(self.own) and role_name(role) == self.own

    def refusal(self, role: str) -> str | None:
        """Why nodes may not get `role` (None when they may): the sentence names the role and the fix."""
        if not self.known or role_name(role) in self.allowed:
            return None
        allowed = ", ".join(sorted(self.allowed))
        return (
            f"node role {role_name(role)!r} is not one this deployment may pass ({allowed}): add it to the "
            f"deploy key nodeRoles and redeploy, or name one of those roles"
        )

    def nodeclass_refusal(self, nodeclass: EC2NodeClass | None) -> str | None:
        """Why a NodeClass's `role` is refused (its `instanceProfile`'s role is checked at launch)."""
        if nodeclass is None or nodeclass.role is None:
            return None
        why = self.refusal(nodeclass.role)
        return f"EC2NodeClass {nodeclass.name}: {why}" if why else None


def refused_pools(
    nodepools: Sequence[NodePool], nodeclasses: Mapping[str, EC2NodeClass], roles: NodeRoles
) -> dict[str, str]:
    """The NodePools (by name) whose EC2NodeClass names a role `roles` refuses, with why."""
    refused: dict[str, str] = {}
    for pool in nodepools:
        why = roles.nodeclass_refusal(nodeclasses.get(pool.node_class_ref.name))
        if why is not None:
            refused[pool.name] = why
    return refused


def role_problems(loaded: Loaded, roles: NodeRoles) -> Loaded:
    """`loaded` with a problem (at spec.role) for each EC2NodeClass whose `role` `roles` refuses
    (none when the list is not known: `nodepool validate` without `--node-roles`).
    """
    problems = [
        Problem(document.source, document.key, "spec.role", why, document.line)
        for document in loaded.of_kind(EC2NODECLASS)
        if isinstance(document.model, EC2NodeClass)
        and document.model.role is not None
        and (why := roles.refusal(document.model.role)) is not None
    ]
    if not problems:
        return loaded
    return Loaded(loaded.documents, (*loaded.problems, *problems), loaded.warnings)
