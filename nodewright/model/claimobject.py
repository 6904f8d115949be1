"""A node claim as a `nodewright.io/v1 NodeClaim` object, shaped as Karpenter's. Pure.

Role: render what the state table knows about one claim (and its Node, when it registered) into
the object `kubectl get nodeclaims` shows: metadata labels the printer columns read (instance
type, capacity type, zone, NodePool), `spec` (requirements, nodeClassRef, resources, taints) and
`status` (providerID, nodeName, imageID, capacity, allocatable, conditions). The decisions the
conditions carry (drifted, consolidatable, disrupting) are made elsewhere and passed in as
`Verdicts`; this module only writes them down.

Conditions, as Karpenter names them: `Launched`, `Registered`, `Initialized` follow the claim's
state (their lastTransitionTime is the claim's own timestamp); `Ready` is True once all three
are; `Drifted`, `Consolidatable` and `Disrupting` come from the verdicts, with the reason in
`reason` (a CamelCase word) and the why in `message`. A condition's lastTransitionTime is kept
from the `previous` object while its status is unchanged, so writing the same claim twice gives
the same object (the mirror writes only what changed).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nodewright.model import labels as wk
from nodewright.model.manifests import format_timestamp, resource_list
from nodewright.model.node import Node
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.resources import Resources
from nodewright.model.taints import Taint

GROUP = "nodewright.io"
VERSION = "v1"
PLURAL = "nodeclaims"
KIND = "NodeClaim"
API_VERSION = f"{GROUP}/{VERSION}"
NODECLASS_KIND = "EC2NodeClass"
# Annotations that say what the printer columns cannot: the claim's price and why it was made.
PRICE_ANNOTATION = "nodewright.io/price"
REASON_ANNOTATION = "nodewright.io/reason"
PODS_ANNOTATION = "nodewright.io/pods"

# The conditions that need a judgement (the consolidator's), not only the claim record.
JUDGED = ("Drifted", "Consolidatable", "Disrupting")
_LAUNCHED_STATES = ("launched", "registered", "initialized", "standby", "starting", "deleting")
_REGISTERED_STATES = ("registered", "initialized", "standby", "starting", "deleting")


@dataclass(frozen=True, slots=True)
class Verdicts:
    """What the disruption logic says about a claim's node right now.

    `drifted`: why the node drifted ("" when it has not); `consolidatable`: "" when consolidation
    may take the node, else why not; `disrupting`: the running command's method and id ("" when
    none); `consolidatable_known` is False when nobody looked (no node yet): no condition then.
    """

    drifted: str = ""
    consolidatable: str = ""
    consolidatable_known: bool = False
    disrupting: str = ""
    disrupting_reason: str = ""


def nodeclaim_object(
    claim: NodeClaim,
    node: Node | None,
    verdicts: Verdicts | None,
    *,
    now: float,
    previous: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The NodeClaim object for `claim` (see the module docstring); `previous` is the object the
    cluster holds now, whose lastTransitionTimes are kept for unchanged conditions. Without
    `verdicts` (a writer that does not judge), `previous`'s Drifted, Consolidatable and
    Disrupting conditions are kept as they are.
    """
    labels = dict(claim.labels)
    labels[wk.NODEPOOL] = claim.nodepool
    for key, value in ((wk.INSTANCE_TYPE, claim.instance_type), (wk.CAPACITY_TYPE, claim.capacity_type)):
        if value:
            labels[key] = value
    if claim.zone:
        labels[wk.ZONE] = claim.zone
    annotations = {
        REASON_ANNOTATION: claim.reason or "pending pods need capacity",
        PODS_ANNOTATION: str(len(claim.pods)),
    }
    if claim.price:
        annotations[PRICE_ANNOTATION] = f"{claim.price:.6f}"
    metadata: dict[str, Any] = {"name": claim.name, "labels": dict(sorted(labels.items())), "annotations": annotations}
    if claim.created_at:
        metadata["creationTimestamp"] = format_timestamp(claim.created_at)
    spec: dict[str, Any] = {
        "requirements": _requirements(claim),
        "nodeClassRef": {"group": GROUP, "kind": NODECLASS_KIND, "name": claim.node_class},
        "resources": {"requests": resource_list(claim.requests)},
    }
    if claim.taints:
        spec["taints"] = [_taint(t) for t in claim.taints]
    if claim.startup_taints:
        spec["startupTaints"] = [_taint(t) for t in claim.startup_taints]
    status: dict[str, Any] = {}
    if claim.provider_id:
        status["providerID"] = claim.provider_id
    if claim.node_name or node is not None:
        status["nodeName"] = claim.node_name or (node.name if node is not None else "")
    if claim.image_id:
        status["imageID"] = claim.image_id
    if node is not None:
        status["capacity"] = resource_list(node.capacity)
        status["allocatable"] = resource_list(node.allocatable)
    status["conditions"] = conditions(claim, verdicts, now=now, previous=previous)
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": metadata, "spec": spec, "status": status}


def conditions(
    claim: NodeClaim, verdicts: Verdicts | None, *, now: float, previous: Mapping[str, Any] | None = None
) -> list[dict[str, str]]:
    """The claim's conditions, sorted by type (see the module docstring)."""
    launched = claim.state in _LAUNCHED_STATES
    registered = claim.state in _REGISTERED_STATES
    initialized = claim.state in ("initialized", "deleting") and bool(claim.initialized_at)
    rows: list[tuple[str, bool, str, str, float]] = [
        (
            "Launched",
            launched,
            "Launched" if launched else "AwaitingLaunch",
            f"{claim.instance_type} {claim.capacity_type} in {claim.zone} ({claim.instance_id})"
            if launched
            else "the claim is recorded; CreateFleet has not answered yet",
            claim.launched_at or claim.created_at,
        ),
        (
            "Registered",
            registered,
            "Registered" if registered else "NodeNotFound",
            f"node {claim.node_name}" if registered else "no Node has registered for the instance yet",
            claim.registered_at or claim.launched_at or claim.created_at,
        ),
        (
            "Initialized",
            initialized,
            "Initialized" if initialized else "NotInitialized",
            "the node is Ready, its startup taints are gone and its resources registered"
            if initialized
            else "waiting for the node to become Ready without startup taints",
            claim.initialized_at or claim.registered_at or claim.launched_at or claim.created_at,
        ),
    ]
    ready = launched and registered and initialized
    rows.append(("Ready", ready, "Ready" if ready else "NotReady", "" if ready else "not initialized yet", rows[2][4]))
    kept = _previous_conditions(previous)
    out = [_condition(kind, ok, reason, message, at) for kind, ok, reason, message, at in rows]
    if verdicts is None:
        out += [dict(kept[kind]) for kind in JUDGED if kind in kept]
        return sorted(out, key=lambda c: c["type"])
    if verdicts.drifted or registered:
        drifted = bool(verdicts.drifted)
        out.append(
            _kept(
                kept,
                _condition(
                    "Drifted",
                    drifted,
                    "Drifted" if drifted else "NotDrifted",
                    verdicts.drifted,
                    now,
                ),
            )
        )
    if verdicts.consolidatable_known:
        ok = not verdicts.consolidatable
        out.append(
            _kept(
                kept,
                _condition(
                    "Consolidatable",
                    ok,
                    "Consolidatable" if ok else "NotConsolidatable",
                    verdicts.consolidatable,
                    now,
                ),
            )
        )
    if verdicts.disrupting:
        out.append(
            _kept(
                kept,
                _condition("Disrupting", True, verdicts.disrupting_reason or "Disrupting", verdicts.disrupting, now),
            )
        )
    return sorted(out, key=lambda c: c["type"])


def nodepool_status(
    resources: Resources,
    nodes: int,
    *,
    now: float,
    previous: Mapping[str, Any] | None = None,
    refused: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """A NodePool's `status` as Karpenter writes it: `resources` (the capacity of its nodes and of
    its claims not registered yet, plus `nodes`) and the conditions ValidationSucceeded,
    NodeClassReady and Ready (Nodewright acts only on NodePools that validated). `refused` is
    (reason, message) when its EC2NodeClass cannot be used (a node role the deployment may not
    pass): NodeClassReady and Ready are then False with it. `previous` is the status last
    written: its lastTransitionTimes are kept.
    """
    listed = resource_list(resources)
    listed["nodes"] = str(nodes)
    kept = _previous_conditions({"status": previous} if previous else None)
    reason, message = refused or ("", "")
    conditions = [
        _kept(kept, _condition("ValidationSucceeded", True, "ValidationSucceeded", "", now)),
        _kept(kept, _condition("NodeClassReady", not refused, reason or "NodeClassReady", message, now)),
        _kept(kept, _condition("Ready", not refused, reason or "Ready", message, now)),
    ]
    return {"resources": listed, "conditions": sorted(conditions, key=lambda c: c["type"])}


def comparable(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of a NodeClaim object the mirror writes, without what the API server adds
    (resourceVersion, uid, managedFields, ...), conditions in type order: equal values mean
    nothing needs writing.
    """
    metadata = manifest.get("metadata") or {}
    return {
        "labels": dict(metadata.get("labels") or {}),
        "annotations": dict(metadata.get("annotations") or {}),
        "spec": manifest.get("spec") or {},
        "status": _sorted_conditions(manifest.get("status") or {}),
    }


def _sorted_conditions(status: Mapping[str, Any]) -> Mapping[str, Any]:
    """`status` with its conditions by type: a list-map's order is the server's, not a change."""
    rows = status.get("conditions")
    if not isinstance(rows, list):
        return status
    return {**status, "conditions": sorted(rows, key=lambda c: str(c.get("type")) if isinstance(c, Mapping) else "")}


def _requirements(claim: NodeClaim) -> list[dict[str, Any]]:
    """The claim's requirements with its instance-type options as an `In` term, as Karpenter
    writes them (the options the launch chose from, cheapest first, at most 60).
    """
    terms = [t for t in claim.requirements.to_manifest() if t["key"] != wk.INSTANCE_TYPE]
    if claim.instance_type_options:
        terms.append({"key": wk.INSTANCE_TYPE, "operator": "In", "values": list(claim.instance_type_options)})
    return sorted(terms, key=lambda t: str(t["key"]))


def _taint(taint: Taint) -> dict[str, str]:
    out = {"key": taint.key, "effect": taint.effect}
    if taint.value:
        out["value"] = taint.value
    return out


def _condition(kind: str, ok: bool, reason: str, message: str, at: float) -> dict[str, str]:
    return {
        "type": kind,
        "status": "True" if ok else "False",
        "reason": reason,
        "message": message,
        "lastTransitionTime": format_timestamp(at),
    }


def _previous_conditions(previous: Mapping[str, Any] | None) -> dict[str, Mapping[str, Any]]:
    if not previous:
        return {}
    rows = (previous.get("status") or {}).get("conditions") or ()
    return {str(c.get("type")): c for c in rows if isinstance(c, Mapping)}


def _kept(previous: Mapping[str, Mapping[str, Any]], condition: dict[str, str]) -> dict[str, str]:
    """`condition` with the previous lastTransitionTime when its status did not change."""
    before = previous.get(condition["type"])
    if before is not None and before.get("status") == condition["status"] and before.get("lastTransitionTime"):
        condition["lastTransitionTime"] = str(before["lastTransitionTime"])
    return condition
