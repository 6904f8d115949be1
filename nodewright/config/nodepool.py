"""NodePool documents (`karpenter.sh/v1`, `nodewright.io/v1`): validate into the model and back. Pure.

`parse_nodepool` checks every field of Karpenter's v1 NodePool schema (its OpenAPI types and
its CEL rules) and reports every problem through the cursor; `render_nodepool` prints a model
back as a manifest that parses to an equal model. Nodewright's additions are annotations on the
NodePool's own metadata, so a manifest stays valid against Karpenter's CRD schema (which rejects
unknown spec fields) and Karpenter ignores them: `nodewright.io/rebalance-policy`,
`nodewright.io/zone-balance` (`nodes:1`, `cpu:32`: what to count per zone and the largest
difference allowed; `engine/zonebalance.py`) and `nodewright.io/daemonset-overflow` (Ignore,
Report or Replace: `engine/daemonfit.py`). Unknown fields are
warnings, not errors. `spec.replicas` makes a static NodePool (`engine/scheduling/static.py`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from nodewright.config import fields as f
from nodewright.config.problems import At, show
from nodewright.model import labels as wk
from nodewright.model.cron import parse_cron
from nodewright.model.duration import format_duration
from nodewright.model.errors import InvalidValue
from nodewright.model.nodepool import (
    CONSOLIDATION_POLICIES,
    DAEMON_OVERFLOW_POLICIES,
    DISRUPTION_REASONS,
    REBALANCE_POLICIES,
    ZONE_BALANCE_BY,
    Budget,
    Disruption,
    NodeClassRef,
    NodePool,
    ZoneBalance,
)
from nodewright.model.requirements import OPERATORS, Requirement, Requirements
from nodewright.model.resources import Resources
from nodewright.model.taints import EFFECTS, Taint

# Patterns from Karpenter's v1 CRDs.
EXPIRE_AFTER = re.compile(r"^(([0-9]+(s|m|h))+|Never)$")
CONSOLIDATE_AFTER = EXPIRE_AFTER
TERMINATION_GRACE = re.compile(r"^([0-9]+(s|m|h))+$")
BUDGET_NODES = re.compile(r"^((100|[0-9]{1,2})%|[0-9]+)$")
BUDGET_DURATION = re.compile(r"^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$")

NODE_CLASS_GROUPS = ("karpenter.k8s.aws", "nodewright.io")
NODE_CLASS_KINDS = ("EC2NodeClass",)
MAX_REQUIREMENTS = 100
MAX_BUDGETS = 50
MAX_MIN_VALUES = 50
# Labels a NodePool may not set or require: each node gets them from its own identity.
RESTRICTED_LABELS = frozenset(
    {wk.NODEPOOL, wk.NW_NODEPOOL, wk.NW_NODECLAIM, wk.HOSTNAME, "karpenter.k8s.aws/ec2nodeclass"}
)
# Label domains reserved for Kubernetes and Karpenter, except well-known keys and these subdomains.
RESTRICTED_DOMAINS = ("kubernetes.io", "k8s.io", "karpenter.sh", "karpenter.k8s.aws")
# The karpenter.k8s.aws keys Karpenter's CRD lets a NodePool label or require (v1.14); the rest of
# that domain is refused. Some (tenancy, placement group) are not labels Nodewright sets; the
# reservation labels are (on reserved nodes), and requirements on them select reserved offerings.
KARPENTER_AWS_LABELS = frozenset(
    f"karpenter.k8s.aws/{name}"
    for name in (
        "instance-tenancy",
        "capacity-reservation-type",
        "capacity-reservation-id",
        "capacity-reservation-interruptible",
        "ec2nodeclass",
        "instance-encryption-in-transit-supported",
        "nitro-sandbox",
        "instance-category",
        "instance-hypervisor",
        "instance-family",
        "instance-generation",
        "instance-local-nvme",
        "instance-size",
        "instance-cpu",
        "instance-cpu-manufacturer",
        "instance-cpu-sustained-clock-speed-mhz",
        "instance-memory",
        "instance-ebs-bandwidth",
        "instance-network-bandwidth",
        "instance-gpu-name",
        "instance-gpu-manufacturer",
        "instance-gpu-count",
        "instance-gpu-memory",
        "instance-accelerator-name",
        "instance-accelerator-manufacturer",
        "instance-accelerator-count",
        "instance-capability-flex",
        "placement-group-id",
        "placement-group-partition",
    )
)
DOMAIN_EXCEPTIONS = ("node.kubernetes.io", "node-restriction.kubernetes.io", "kops.k8s.io")

SPEC_FIELDS = ("template", "disruption", "limits", "weight", "replicas")
_TEMPLATE = ("metadata", "spec")
_TEMPLATE_METADATA = ("labels", "annotations")
TEMPLATE_SPEC_FIELDS = (
    "requirements",
    "taints",
    "startupTaints",
    "expireAfter",
    "terminationGracePeriod",
    "nodeClassRef",
)
_TEMPLATE_SPEC_HINTS = {
    "kubelet": "kubelet moved to EC2NodeClass spec.kubelet in karpenter v1",
    "resources": "resources are not part of the v1 NodePool template",
}
_REQUIREMENT = ("key", "operator", "values", "minValues")
_TAINT = ("key", "value", "effect", "timeAdded")
_NODE_CLASS_REF = ("group", "kind", "name")
DISRUPTION_FIELDS = ("consolidationPolicy", "consolidateAfter", "budgets")
_DISRUPTION_HINTS = {"expireAfter": "expireAfter moved to spec.template.spec.expireAfter in karpenter v1"}
BUDGET_FIELDS = ("nodes", "schedule", "duration", "reasons")


def label_key_rule(at: At, key: str) -> None:
    """Report a label key that is malformed or reserved for Kubernetes, Karpenter or Nodewright."""
    problem = f.qualified_name_problem(key)
    if problem is not None:
        at.error(problem)
    elif key in RESTRICTED_LABELS:
        at.error(f"label {show(key)} is restricted: nodes get it from their own identity")
    elif key not in wk.WELL_KNOWN and key not in KARPENTER_AWS_LABELS:
        domain = key.rpartition("/")[0]
        for restricted in RESTRICTED_DOMAINS:
            if (domain == restricted or domain.endswith("." + restricted)) and not any(
                domain == ok or domain.endswith("." + ok) for ok in DOMAIN_EXCEPTIONS
            ):
                at.error(f"label domain {show(restricted)} is restricted; {show(key)} is not a well-known label")
                break


def _labels(at: At, value: Any) -> dict[str, str] | None:
    found = f.string_map(at, value, key_rule=label_key_rule)
    if found is None:
        return None
    for key, text in found.items():
        problem = f.label_value_problem(text)
        if problem is not None:
            (at / key).error(problem)
    return found


def requirement_reader(
    key_rule: Callable[[At, str], None], *, min_values: bool = True, not_in_needs_values: bool = False
) -> Callable[[At, Any], Requirement | None]:
    """A reader of one requirement term (key, operator, values[, minValues]) as Karpenter's CRDs
    check it; NodeOverlays differ from NodePools in their key rule, no minValues, and NotIn
    needing a value.
    """
    fields = _REQUIREMENT if min_values else _REQUIREMENT[:3]
    needs_values = ("In", "NotIn") if not_in_needs_values else ("In",)

    def read(at: At, value: Any) -> Requirement | None:
        return _requirement(at, value, key_rule, fields, needs_values)

    return read


def _requirement(
    at: At, value: Any, key_rule: Callable[[At, str], None], fields: tuple[str, ...], needs_values: tuple[str, ...]
) -> Requirement | None:
    start = at.mark()
    term = f.kube_item(at, value, fields)
    if term is None:
        return None
    key = f.string(at / "key", f.required(at, term, "key"), non_empty=True)
    if key is not None:
        key_rule(at / "key", key)
    operator = f.string(at / "operator", f.required(at, term, "operator"), enum=OPERATORS)
    values = f.string_list(at / "values", term.get("values")) or ()
    min_values = f.integer(at / "minValues", term.get("minValues"), minimum=1, maximum=MAX_MIN_VALUES)
    if operator is None or key is None or at.failed_since(start):
        return None
    if operator in needs_values and not values:
        (at / "values").error(f"operator {operator} needs at least one value")
    elif operator in ("Exists", "DoesNotExist") and values:
        (at / "values").error(f"operator {operator} takes no values")
    elif operator in ("Gt", "Lt", "Gte", "Lte") and (len(values) != 1 or not values[0].isdigit()):
        (at / "values").error(f"operator {operator} needs exactly one non-negative integer value, got {show(values)}")
    elif operator in ("In", "NotIn"):
        for index, item in enumerate(values):
            problem = f.label_value_problem(item)
            if problem is not None:
                (at / "values" / index).error(problem)
    if min_values is not None and operator == "In" and len(values) < min_values:
        (at / "minValues").error(f"must be at most the number of values ({len(values)}), got {min_values}")
    if at.failed_since(start):
        return None
    try:
        return Requirement.new(key, operator, values, min_values)
    except InvalidValue as error:  # pragma: no cover - the checks above are stricter
        at.error(str(error))
        return None


def _taint(at: At, value: Any) -> Taint | None:
    taint = f.kube_obj(at, value, _TAINT)
    if taint is None:
        return None
    key = f.string(at / "key", f.required(at, taint, "key"), non_empty=True)
    if key is not None and (problem := f.qualified_name_problem(key)) is not None:
        (at / "key").error(problem)
    effect = f.string(at / "effect", f.required(at, taint, "effect"), enum=EFFECTS)
    text = f.string(at / "value", taint.get("value")) or ""
    if text and (problem := f.label_value_problem(text)) is not None:
        (at / "value").error(problem)
    f.date_time(at / "timeAdded", taint.get("timeAdded"))
    if key is None or effect is None:
        return None
    return Taint(key, effect, text)


def _node_class_ref(at: At, value: Any) -> NodeClassRef | None:
    ref = f.kube_obj(at, value, _NODE_CLASS_REF)
    if ref is None:
        return None
    raw_group = f.required(at, ref, "group")
    if isinstance(raw_group, str) and "/" in raw_group:
        # An apiVersion written where the group goes (Karpenter's CRD refuses any "/" here).
        (at / "group").error(
            f"{show(raw_group)} is an apiVersion, not a group: write {show(raw_group.partition('/')[0])}"
        )
        raw_group = None
    group = f.string(at / "group", raw_group, enum=NODE_CLASS_GROUPS)
    kind = f.string(at / "kind", f.required(at, ref, "kind"), enum=NODE_CLASS_KINDS)
    name = f.dns_subdomain(at / "name", f.required(at, ref, "name"))
    if group is None or kind is None or name is None:
        return None
    return NodeClassRef(name=name, kind=kind, group=group)


def _budget(at: At, value: Any) -> Budget | None:
    start = at.mark()
    budget = f.kube_obj(at, value, BUDGET_FIELDS)
    if budget is None:
        return None
    nodes = f.string(
        at / "nodes",
        f.required(at, budget, "nodes"),
        pattern=BUDGET_NODES,
        rule="is not a node count (e.g. 5) or a percentage (e.g. 10%)",
    )
    schedule = f.string(at / "schedule", budget.get("schedule"), non_empty=True)
    if schedule is not None:
        try:
            parse_cron(schedule)
        except InvalidValue as error:
            (at / "schedule").error(f"is not a valid cron schedule: {error}")
            schedule = None
    duration = f.duration(at / "duration", budget.get("duration"), pattern=BUDGET_DURATION, examples="10m, 2h or 1h30m")
    reasons = f.items(
        at / "reasons", budget.get("reasons"), lambda a, v: f.string(a, v, enum=DISRUPTION_REASONS), max_items=50
    )
    if (budget.get("schedule") is None) != (budget.get("duration") is None):
        at.error("schedule and duration must be set together")
    if nodes is None or at.failed_since(start):
        return None
    return Budget(
        nodes=nodes,
        schedule=schedule,
        duration=duration[0] if duration is not None else None,
        reasons=tuple(reasons or ()),
    )


def _disruption(at: At, value: Any) -> Disruption | None:
    disruption = f.kube_obj(at, value, DISRUPTION_FIELDS, hints=_DISRUPTION_HINTS)
    if disruption is None:
        return Disruption() if value is None else None
    policy = f.string(at / "consolidationPolicy", disruption.get("consolidationPolicy"), enum=CONSOLIDATION_POLICIES)
    after = f.duration(
        at / "consolidateAfter",
        disruption.get("consolidateAfter"),
        pattern=CONSOLIDATE_AFTER,
        examples="30s, 5m, 1h or Never",
    )
    budgets = f.items(at / "budgets", disruption.get("budgets"), _budget, max_items=MAX_BUDGETS)
    default = Disruption()
    return Disruption(
        consolidation_policy=policy or default.consolidation_policy,
        consolidate_after=after[0] if after is not None else default.consolidate_after,
        budgets=budgets if budgets is not None else default.budgets,
    )


def parse_nodepool(
    at: At, name: str, metadata: Mapping[str, Any], spec_value: Any, api_version: str
) -> NodePool | None:
    """Validate a NodePool's spec (and its rebalance annotation); None when anything is wrong.

    `at` points at the document root; every problem is reported through it.
    """
    annotations = metadata.get("annotations") or {}
    rebalance = "ReplaceThenDrain"
    # A non-string value is reported once, by the metadata.annotations check of the envelope.
    if isinstance(annotations, Mapping) and isinstance(annotations.get(wk.NW_REBALANCE_POLICY), str):
        rebalance = (
            f.string(
                at / "metadata" / "annotations" / wk.NW_REBALANCE_POLICY,
                annotations[wk.NW_REBALANCE_POLICY],
                enum=REBALANCE_POLICIES,
            )
            or rebalance
        )
    zone_balance = _zone_balance(at / "metadata" / "annotations" / wk.NW_ZONE_BALANCE, annotations)
    overflow = "Ignore"
    if isinstance(annotations, Mapping) and isinstance(annotations.get(wk.NW_DAEMONSET_OVERFLOW), str):
        overflow = (
            f.string(
                at / "metadata" / "annotations" / wk.NW_DAEMONSET_OVERFLOW,
                annotations[wk.NW_DAEMONSET_OVERFLOW],
                enum=DAEMON_OVERFLOW_POLICIES,
            )
            or overflow
        )
    spec = f.kube_obj(at / "spec", spec_value, SPEC_FIELDS)
    if spec is None:
        if spec_value is None:
            (at / "spec").error("is required")
        return None
    at_spec = at / "spec"
    template = f.kube_obj(at_spec / "template", f.required(at_spec, spec, "template"), _TEMPLATE)
    at_tpl = at_spec / "template"
    tpl_meta = f.kube_obj(at_tpl / "metadata", (template or {}).get("metadata"), _TEMPLATE_METADATA) or {}
    labels = _labels(at_tpl / "metadata" / "labels", tpl_meta.get("labels")) or {}
    node_annotations = f.string_map(at_tpl / "metadata" / "annotations", tpl_meta.get("annotations")) or {}
    at_ts = at_tpl / "spec"
    tpl_spec_raw = f.kube_obj(
        at_ts, f.required(at_tpl, template, "spec"), TEMPLATE_SPEC_FIELDS, hints=_TEMPLATE_SPEC_HINTS
    )
    tpl_spec = tpl_spec_raw or {}
    requirements = f.items(
        at_ts / "requirements",
        f.required(at_ts, tpl_spec_raw, "requirements"),
        requirement_reader(label_key_rule),
        max_items=MAX_REQUIREMENTS,
    )
    taints = f.items(at_ts / "taints", tpl_spec.get("taints"), _taint) or ()
    startup_taints = f.items(at_ts / "startupTaints", tpl_spec.get("startupTaints"), _taint) or ()
    expire_after = f.duration(
        at_ts / "expireAfter", tpl_spec.get("expireAfter"), pattern=EXPIRE_AFTER, examples="720h, 30m or Never"
    )
    grace = f.duration(
        at_ts / "terminationGracePeriod",
        tpl_spec.get("terminationGracePeriod"),
        pattern=TERMINATION_GRACE,
        examples="30s, 10m or 24h",
    )
    node_class_ref = _node_class_ref(at_ts / "nodeClassRef", f.required(at_ts, tpl_spec_raw, "nodeClassRef"))
    limits = resource_list(at_spec / "limits", spec.get("limits"))
    weight = f.integer(at_spec / "weight", spec.get("weight"), minimum=1, maximum=100)
    replicas = _replicas(at_spec, spec)
    disruption = _disruption(at_spec / "disruption", spec.get("disruption"))
    if at.failed_since() or node_class_ref is None or disruption is None:
        return None
    default = NodePool(name)
    return NodePool(
        name=name,
        node_class_ref=node_class_ref,
        requirements=Requirements(requirements or ()),
        labels=labels,
        annotations=node_annotations,
        taints=taints,
        startup_taints=startup_taints,
        expire_after=expire_after[0] if expire_after is not None else default.expire_after,
        termination_grace_period=grace[0] if grace is not None else None,
        limits=limits,
        weight=weight or 0,
        disruption=disruption,
        rebalance_policy=rebalance,
        zone_balance=zone_balance,
        daemon_overflow=overflow,
        replicas=replicas,
        api_version=api_version,
        resource_version=str(metadata.get("resourceVersion") or ""),
    )


def _zone_balance(at: At, annotations: Any) -> ZoneBalance | None:
    """The `nodewright.io/zone-balance` annotation: `<by>:<max skew>` (`nodes:1`, `cpu:64`), or a
    bare number of nodes (`2`); None when absent or wrong (reported through `at`).
    """
    if not isinstance(annotations, Mapping) or not isinstance(annotations.get(wk.NW_ZONE_BALANCE), str):
        return None
    raw = annotations[wk.NW_ZONE_BALANCE].strip()
    by, _, number = raw.rpartition(":")
    by = by.strip() or "nodes"
    if by not in ZONE_BALANCE_BY:
        at.error(f"{show(raw)}: counts {show(by)}, not one of {', '.join(ZONE_BALANCE_BY)} (e.g. nodes:1 or cpu:32)")
        return None
    kind, example, least = ("number", "cpu:32", 0) if by == "cpu" else ("whole number", "nodes:1", 1)
    try:
        skew = float(number) if by == "cpu" else int(number)
    except ValueError:
        at.error(f"{show(raw)}: the maximum skew {show(number.strip())} is not a {kind} (e.g. {example})")
        return None
    if not least <= skew < float("inf"):
        at.error(f"{show(raw)}: the maximum skew must be at least {least} (e.g. {example})")
        return None
    return ZoneBalance(by=by, max_skew=float(skew))


def _replicas(at_spec: At, spec: Mapping[str, Any]) -> int | None:
    """`spec.replicas` with the static NodePool rules of Karpenter's CRD (only limits.nodes, no weight)."""
    replicas = f.integer(at_spec / "replicas", spec.get("replicas"), minimum=0)
    if spec.get("replicas") is None:
        return None
    limits = spec.get("limits")
    if isinstance(limits, Mapping) and any(key != "nodes" for key in limits):
        (at_spec / "limits").error("only limits.nodes is supported on a static NodePool (one with replicas)")
    if spec.get("weight") is not None:
        (at_spec / "weight").error("weight is not supported on a static NodePool (one with replicas)")
    return replicas


def resource_list(at: At, value: Any) -> Resources | None:
    """A resource list ({cpu: "100", memory: 1000Gi}); each bad quantity is a problem naming its key."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        f.wrong_type(at, dict, value)
        return None
    out: dict[str, int] = {}
    for key, raw in value.items():
        milli = f.quantity(at / str(key), raw)
        if milli is not None:
            out[str(key)] = milli
    return Resources(out)


def render_nodepool(pool: NodePool) -> dict[str, Any]:
    """The manifest of a NodePool model; parsing it gives an equal model (Gte/Lte print as Gt/Lt)."""
    metadata: dict[str, Any] = {"name": pool.name}
    annotations: dict[str, str] = {}
    if pool.rebalance_policy != "ReplaceThenDrain":
        annotations[wk.NW_REBALANCE_POLICY] = pool.rebalance_policy
    if pool.zone_balance is not None:
        skew = pool.zone_balance.max_skew
        annotations[wk.NW_ZONE_BALANCE] = f"{pool.zone_balance.by}:{int(skew) if skew.is_integer() else skew}"
    if pool.daemon_overflow != "Ignore":
        annotations[wk.NW_DAEMONSET_OVERFLOW] = pool.daemon_overflow
    if annotations:
        metadata["annotations"] = annotations
    template_spec: dict[str, Any] = {
        "nodeClassRef": {
            "group": pool.node_class_ref.group,
            "kind": pool.node_class_ref.kind,
            "name": pool.node_class_ref.name,
        },
        "requirements": pool.requirements.to_manifest(),
        "expireAfter": format_duration(pool.expire_after),
    }
    if pool.taints:
        template_spec["taints"] = [t.to_manifest() for t in pool.taints]
    if pool.startup_taints:
        template_spec["startupTaints"] = [t.to_manifest() for t in pool.startup_taints]
    if pool.termination_grace_period is not None:
        template_spec["terminationGracePeriod"] = format_duration(pool.termination_grace_period)
    template: dict[str, Any] = {}
    template_metadata: dict[str, Any] = {}
    if pool.labels:
        template_metadata["labels"] = dict(pool.labels)
    if pool.annotations:
        template_metadata["annotations"] = dict(pool.annotations)
    if template_metadata:
        template["metadata"] = template_metadata
    template["spec"] = template_spec
    spec: dict[str, Any] = {"template": template, "disruption": _render_disruption(pool.disruption)}
    if pool.limits is not None:
        spec["limits"] = pool.limits.format()
    if pool.weight:
        spec["weight"] = pool.weight
    if pool.replicas is not None:
        spec["replicas"] = pool.replicas
    return {"apiVersion": pool.api_version, "kind": "NodePool", "metadata": metadata, "spec": spec}


def _render_disruption(disruption: Disruption) -> dict[str, Any]:
    budgets: list[dict[str, Any]] = []
    for budget in disruption.budgets:
        item: dict[str, Any] = {"nodes": budget.nodes}
        if budget.schedule is not None:
            item["schedule"] = budget.schedule
        if budget.duration is not None:
            item["duration"] = _budget_duration(budget.duration)
        if budget.reasons:
            item["reasons"] = list(budget.reasons)
        budgets.append(item)
    return {
        "consolidationPolicy": disruption.consolidation_policy,
        "consolidateAfter": format_duration(disruption.consolidate_after),
        "budgets": budgets,
    }


def _budget_duration(seconds: float) -> str:
    # Budget durations only allow hours and minutes, so seconds are dropped (the schema has none).
    minutes = int(seconds) // 60
    hours, minutes = divmod(minutes, 60)
    if hours and minutes:
        return f"{hours}h{minutes}m"
    return f"{hours}h" if hours else f"{minutes}m"
