"""The NodeClaim object the mirror writes fits the shipped CRD: the API server prunes any field its
schema does not declare, so every field written must be declared, with the type written.

Observed: `nodeclaim_object` for claims in each state, walked against the openAPIV3Schema of
deploy/crds/nodewright.io_nodeclaims.yaml; and the printer columns, Karpenter's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from nodewright.model import labels as wk
from nodewright.model.claimobject import Verdicts, nodeclaim_object
from nodewright.model.node import Node
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.requirements import Requirements
from nodewright.model.resources import Resources
from nodewright.model.taints import Taint

CRD = yaml.safe_load((Path(__file__).parents[2] / "deploy" / "crds" / "nodewright.io_nodeclaims.yaml").read_text())
(VERSION,) = CRD["spec"]["versions"]
SCHEMA = VERSION["schema"]["openAPIV3Schema"]
TYPES = {"object": dict, "array": list, "string": str, "integer": int}


def undeclared(value: Any, schema: dict[str, Any], path: str = "") -> list[str]:
    """Paths of `value` the schema would prune or refuse (wrong type)."""
    if schema.get("x-kubernetes-int-or-string"):
        return [] if isinstance(value, int | str) else [f"{path}: not int-or-string"]
    kind = schema.get("type")
    if kind and not isinstance(value, TYPES[kind]):
        return [f"{path}: {type(value).__name__} is not {kind}"]
    found: list[str] = []
    if isinstance(value, dict) and path.endswith("metadata"):
        return found  # metadata is the API server's ObjectMeta
    if isinstance(value, dict):
        for key, item in value.items():
            if "properties" in schema and key in schema["properties"]:
                found += undeclared(item, schema["properties"][key], f"{path}.{key}")
            elif "additionalProperties" in schema:
                found += undeclared(item, schema["additionalProperties"], f"{path}.{key}")
            else:
                found.append(f"{path}.{key}: not in the schema (pruned)")
        found += [f"{path}.{r}: required" for r in schema.get("required", ()) if r not in value]
    if isinstance(value, list):
        for index, item in enumerate(value):
            found += undeclared(item, schema.get("items", {}), f"{path}[{index}]")
    return found


def claim(state: str) -> NodeClaim:
    launched = state != "pending"
    return NodeClaim(
        name="default-abc",
        nodepool="default",
        requirements=Requirements.parse([{"key": wk.CAPACITY_TYPE, "operator": "In", "values": ["spot"]}]),
        instance_type_options=("m5.large",),
        requests=Resources.of(cpu="1500m", memory="3Gi", pods=2),
        pods=("default/a", "default/b"),
        taints=(Taint("dedicated", "batch", "NoSchedule"),),
        startup_taints=(Taint("node.cilium.io/agent-not-ready", "", "NoExecute"),),
        state=state,
        instance_type="m5.large" if launched else "",
        capacity_type="spot" if launched else "",
        zone="us-east-1a" if launched else "",
        price=0.04 if launched else 0.0,
        instance_id="i-1" if launched else "",
        provider_id="aws:///us-east-1a/i-1" if launched else "",
        node_name="ip-1" if state in ("registered", "initialized") else "",
        image_id="ami-1" if launched else "",
        created_at=1_800_000_000.0,
        launched_at=1_800_000_010.0 if launched else 0.0,
        registered_at=1_800_000_050.0 if state in ("registered", "initialized") else 0.0,
        initialized_at=1_800_000_060.0 if state == "initialized" else 0.0,
    )


@pytest.mark.parametrize("state", ["pending", "launched", "registered", "initialized"])
def test_every_field_the_mirror_writes_is_declared_by_the_crd(state: str) -> None:
    node = Node("ip-1", capacity=Resources.of(cpu="2", memory="8Gi", pods=29)) if state != "pending" else None
    verdicts = Verdicts(
        drifted="NodePool template changed",
        consolidatable="consolidateAfter (30s) has not passed since its pods last changed",
        consolidatable_known=state == "initialized",
        disrupting="command c-1 (consolidation, tainted): replace" if state == "initialized" else "",
        disrupting_reason="Underutilized",
    )
    obj = nodeclaim_object(claim(state), node, verdicts, now=1_800_000_100.0)

    assert undeclared(obj, SCHEMA) == []
    obj["status"]["bogus"] = 1  # the walk does find what the schema would prune
    assert undeclared(obj, SCHEMA) == [".status.bogus: not in the schema (pruned)"]


def test_the_printer_columns_are_karpenters() -> None:
    columns = [(c["name"], c["jsonPath"], c.get("priority", 0)) for c in VERSION["additionalPrinterColumns"]]

    assert [name for name, _, priority in columns if not priority] == [
        "Type",
        "Capacity",
        "Zone",
        "Node",
        "Ready",
        "Age",
    ]
    assert [name for name, _, priority in columns if priority] == ["ImageID", "ID", "NodePool", "NodeClass", "Drifted"]
    assert ("Ready", '.status.conditions[?(@.type=="Ready")].status', 0) in columns
