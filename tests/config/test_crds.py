"""The shipped CRDs (deploy/crds) type the same top-level fields the validator accepts, so a
document the cluster stores is one Nodewright can read and vice versa.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from nodewright.config import nodeclass, nodepool

CRDS = Path(__file__).parents[2] / "deploy" / "crds"


def schema_of(file: str) -> dict[str, Any]:
    crd = yaml.safe_load((CRDS / file).read_text())
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    # Nodewright's own kinds, or Karpenter's (for clusters without Karpenter), named by their file.
    assert crd["spec"]["group"] == file.partition("_")[0]
    assert crd["spec"]["scope"] == "Cluster"
    (version,) = crd["spec"]["versions"]
    assert version["name"] == "v1"
    assert version["served"]
    assert version["storage"]
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


@pytest.mark.parametrize(
    ("file", "kind", "spec_fields"),
    [
        pytest.param("nodewright.io_nodepools.yaml", "NodePool", nodepool.SPEC_FIELDS, id="nodepools"),
        pytest.param("nodewright.io_ec2nodeclasses.yaml", "EC2NodeClass", nodeclass.SPEC_FIELDS, id="ec2nodeclasses"),
        pytest.param("karpenter.sh_nodepools.yaml", "NodePool", nodepool.SPEC_FIELDS, id="karpenter-nodepools"),
        pytest.param(
            "karpenter.k8s.aws_ec2nodeclasses.yaml",
            "EC2NodeClass",
            nodeclass.SPEC_FIELDS,
            id="karpenter-ec2nodeclasses",
        ),
    ],
)
def test_each_crd_types_exactly_the_spec_fields_the_validator_accepts(
    file: str, kind: str, spec_fields: tuple[str, ...]
) -> None:
    schema = schema_of(file)

    assert set(schema["properties"]["spec"]["properties"]) == set(spec_fields)
    assert yaml.safe_load((CRDS / file).read_text())["spec"]["names"]["kind"] == kind


@pytest.mark.parametrize("file", ["nodewright.io_nodepools.yaml", "karpenter.sh_nodepools.yaml"])
def test_the_nodepool_crd_types_every_template_spec_field(file: str) -> None:
    spec = schema_of(file)["properties"]["spec"]["properties"]
    template_spec = spec["template"]["properties"]["spec"]["properties"]

    assert set(template_spec) == set(nodepool.TEMPLATE_SPEC_FIELDS)
    assert set(spec["disruption"]["properties"]) == set(nodepool.DISRUPTION_FIELDS)
    assert set(spec["disruption"]["properties"]["budgets"]["items"]["properties"]) == set(nodepool.BUDGET_FIELDS)
