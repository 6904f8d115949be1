"""Grants derived from calls: what each function's role must allow, from what the function calls.

Role: the other half of the least-privilege check in tests/infra/test_derived_grants.py. A test
records every AWS operation each function makes (a botocore hook, see tests/infra/derive.py); this
module turns operations into the IAM actions they need (`needed`), turns a role's synthesized
policy statements into the actions it grants (`granted`), and compares the two (`drift`). Both
sides are *labels*: an action, narrowed where the narrowing is what least privilege is about:

  * a DynamoDB action names its table (`dynamodb:PutItem on state`), so a table a function never
    touches cannot hide behind the same action on another table;
  * `ec2:CreateTags on create` is the tag-on-create permission a launch needs (a statement with an
    `ec2:CreateAction` condition); a plain `ec2:CreateTags` would be tagging existing resources.

The Kubernetes side is `kube_verbs` (a request to the authorizer's verb and resource) and
`rbac_rules` (a ClusterRole's rules in the same form).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

# IAM prefix of each botocore service name the functions use (Service Authorization Reference).
IAM_PREFIX: Mapping[str, str] = {
    "ec2": "ec2",
    "ssm": "ssm",
    "pricing": "pricing",
    "eks": "eks",
    "dynamodb": "dynamodb",
    "sqs": "sqs",
    "lambda": "lambda",
    "sts": "sts",
}
ON_CREATE = "ec2:CreateTags on create"
# Operations whose IAM actions are not just `<prefix>:<Operation>`. Sources: the Service
# Authorization Reference ("Actions defined by Amazon EC2", "... AWS Lambda"), and for the launch
# calls the EC2 User Guide: "EC2 Fleet prerequisites" (a fleet launches through RunInstances,
# passes the launch template's instance profile role, and tags what it creates) and "Grant
# permission to tag Amazon EC2 resources during creation" (TagSpecifications need CreateTags,
# which the `ec2:CreateAction` condition limits to the creating call).
OPERATION_ACTIONS: Mapping[str, tuple[str, ...]] = {
    "ec2.CreateFleet": ("ec2:CreateFleet", "ec2:RunInstances", ON_CREATE, "iam:PassRole"),
    "ec2.RunInstances": ("ec2:RunInstances", ON_CREATE, "iam:PassRole"),
    "ec2.CreateLaunchTemplate": ("ec2:CreateLaunchTemplate", ON_CREATE),
    "lambda.Invoke": ("lambda:InvokeFunction",),
    # The EKS token is a presigned GetCallerIdentity URL; GetCallerIdentity needs no permission.
    "sts.GetCallerIdentity": (),
}
# What the Lambda service does with a function's role rather than the function's code: the runtime
# writes its logs (Lambda Developer Guide, "Lambda execution role"), and an SQS event source
# mapping polls with it ("Using Lambda with Amazon SQS": ReceiveMessage, DeleteMessage,
# GetQueueAttributes).
PLATFORM_ACTIONS: Mapping[str, tuple[str, ...]] = {
    "provisioner": ("logs:CreateLogStream", "logs:PutLogEvents"),
    "consolidator": ("logs:CreateLogStream", "logs:PutLogEvents"),
    "interruption": (
        "logs:CreateLogStream",
        "logs:PutLogEvents",
        "sqs:ReceiveMessage",
        "sqs:DeleteMessage",
        "sqs:GetQueueAttributes",
    ),
}


@dataclass(frozen=True, slots=True, order=True)
class Operation:
    """One AWS API call as a function made it: service, operation and (DynamoDB) the table's role."""

    service: str
    name: str
    table: str = ""


def needed(operations: Iterable[Operation], platform: Sequence[str] = ()) -> set[str]:
    """The action labels `operations` (and the platform's own uses) need."""
    labels = set(platform)
    for op in operations:
        actions = OPERATION_ACTIONS.get(f"{op.service}.{op.name}", (f"{IAM_PREFIX[op.service]}:{op.name}",))
        for action in actions:
            labels.add(f"{action} on {op.table}" if op.table and action.startswith("dynamodb:") else action)
    return labels


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def granted(statements: Iterable[Mapping[str, Any]], tables: Mapping[str, Any]) -> set[str]:
    """The action labels a role's Allow `statements` grant; `tables` maps a table's role (config,
    state, idempotency) to its ARN as CloudFormation holds it, to name DynamoDB grants.
    """
    by_arn = {json.dumps(arn, sort_keys=True): name for name, arn in tables.items()}
    labels: set[str] = set()
    for statement in statements:
        if statement.get("Effect") != "Allow":
            continue
        on_create = "ec2:CreateAction" in json.dumps(statement.get("Condition", {}))
        for action in _listed(statement["Action"]):
            if action.startswith("dynamodb:"):
                for resource in _listed(statement["Resource"]):
                    if resource == {"Ref": "AWS::NoValue"}:  # the L2 grant's absent index ARNs
                        continue
                    table = by_arn.get(json.dumps(resource, sort_keys=True), f"? {json.dumps(resource)}")
                    labels.add(f"{action} on {table}")
            elif action == "ec2:CreateTags" and on_create:
                labels.add(ON_CREATE)
            else:
                labels.add(action)
    return labels


@dataclass(frozen=True, slots=True)
class Drift:
    """Grants nothing uses and uses nothing grants (both empty: least privilege holds)."""

    unused: frozenset[str]
    ungranted: frozenset[str]

    def __bool__(self) -> bool:
        return bool(self.unused or self.ungranted)

    def __str__(self) -> str:
        return f"granted, never used: {sorted(self.unused)}; used, never granted: {sorted(self.ungranted)}"


def drift(used: Iterable[str], allowed: Iterable[str]) -> Drift:
    """Compare what is used with what is allowed."""
    used_set, allowed_set = set(used), set(allowed)
    return Drift(frozenset(allowed_set - used_set), frozenset(used_set - allowed_set))


# --- Kubernetes ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, order=True)
class KubeAccess:
    """One RBAC permission: API group, resource (`pods/eviction` for a subresource) and verb."""

    group: str
    resource: str
    verb: str

    def __str__(self) -> str:
        return f"{self.verb} {self.group + '/' if self.group else ''}{self.resource}"


def kube_access(method: str, url: str, query: Mapping[str, Any] | Sequence[tuple[str, Any]] | None) -> KubeAccess:
    """The permission an API request needs, as the API server's authorizer derives it
    (Kubernetes docs, "Authorization: determine the request verb"): POST create, PUT update,
    PATCH patch, DELETE delete, GET get on a named object, list on a collection, watch with
    `watch=true`.
    """
    parts = [p for p in urlsplit(url).path.split("/") if p]
    if parts[:1] == ["api"]:
        group, rest = "", parts[2:]
    else:
        group, rest = parts[1], parts[3:]
    if rest[:1] == ["namespaces"] and len(rest) > 2:
        rest = rest[2:]
    resource = rest[0] + (f"/{rest[2]}" if len(rest) > 2 else "")
    named = len(rest) > 1
    pairs = dict(query.items() if isinstance(query, Mapping) else (query or ()))
    watching = str(pairs.get("watch", "")).lower() in ("true", "1")
    verb = {
        "POST": "create",
        "PUT": "update",
        "PATCH": "patch",
        "DELETE": "delete" if named else "deletecollection",
    }.get(method.upper(), "watch" if watching else ("get" if named else "list"))
    return KubeAccess(group, resource, verb)


APPLY_PATCH = "application/apply-patch+yaml"


def kube_accesses(
    method: str, url: str, query: Mapping[str, Any] | Sequence[tuple[str, Any]] | None, content_type: str = ""
) -> set[KubeAccess]:
    """The permissions an API request needs: `kube_access`'s, and for a server-side apply also
    create on the resource (an apply may create the object, and kube-apiserver authorizes that
    as create as well as patch).
    """
    access = kube_access(method, url, query)
    if method.upper() == "PATCH" and content_type.startswith(APPLY_PATCH):
        return {access, KubeAccess(access.group, access.resource, "create")}
    return {access}


def rbac_rules(role: Mapping[str, Any]) -> set[KubeAccess]:
    """Every (group, resource, verb) a ClusterRole's rules allow (no wildcards expected)."""
    return {
        KubeAccess(group, resource, verb)
        for rule in role.get("rules", ())
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
