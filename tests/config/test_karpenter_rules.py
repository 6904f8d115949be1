"""Karpenter v1's CEL rules, patterns, formats and defaults, one test per rule.

fixtures/karpenter-v1/rules.yaml tables every x-kubernetes-validations rule, pattern, format and
default of Karpenter's NodePool, EC2NodeClass and NodeOverlay CRDs, each with an edit to a small
valid document that breaks that rule alone and the field path the problem must name. The tests
read each edited document through `parse_yaml`, the entry point every command uses, and assert:

- the base documents are valid and warning-free (so a problem comes from the edit);
- each edited document is refused with a problem at exactly the tabled path;
- each default is what the parsed model prints back.

Rules that compare with the stored object (`oldSelf`) cannot be broken by one document: their
tests skip and say so. `test_the_table_names_every_rule_field_of_the_crds` keeps the table honest
against Karpenter's CRDs when a checkout of aws/karpenter-provider-aws is at hand.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from nodewright.config import Loaded, parse_yaml
from nodewright.config.nodeclass_render import render_nodeclass
from nodewright.config.nodepool import render_nodepool
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodepool import NodePool

TABLE: dict[str, Any] = yaml.safe_load((Path(__file__).parent / "fixtures" / "karpenter-v1" / "rules.yaml").read_text())
BASES: dict[str, dict[str, Any]] = TABLE["bases"]
RULES: list[dict[str, Any]] = TABLE["rules"]


def _read(document: dict[str, Any]) -> Loaded:
    return parse_yaml(yaml.safe_dump(document, sort_keys=False), "rules.yaml")


def _edited(rule: dict[str, Any]) -> dict[str, Any]:
    document = copy.deepcopy(BASES[rule["kind"]])
    for edit in rule["change"]:
        *parents, last = edit["path"]
        here: Any = document
        for segment in parents:
            here = here.setdefault(segment, {}) if isinstance(here, dict) else here[segment]
        if edit.get("delete"):
            del here[last]
        else:
            here[last] = copy.deepcopy(edit["value"])
    return document


@pytest.mark.parametrize("kind", sorted(BASES))
def test_each_base_document_is_valid_and_draws_no_warning(kind: str) -> None:
    loaded = _read(BASES[kind])

    assert [str(p) for p in loaded.problems] == []
    assert [str(w) for w in loaded.warnings if "not acted on" not in w.message] == []
    assert len(loaded.documents) == 1


@pytest.mark.parametrize("rule", [pytest.param(r, id=f"{r['kind']}:{r['id']}") for r in RULES])
def test_breaking_a_karpenter_rule_is_a_problem_naming_the_field(rule: dict[str, Any]) -> None:
    if rule.get("transition"):
        pytest.skip(f"{rule['field']}: {rule['rule']}: compares with the stored object, no single document breaks it")

    loaded = _read(_edited(rule))

    assert rule["at"] in [p.path for p in loaded.problems], [str(p) for p in loaded.problems]
    assert loaded.documents == ()


def _lookup(manifest: Any, dotted: str) -> Any:
    for segment in dotted.split("."):
        manifest = manifest[segment]
    return manifest


DEFAULTS = [
    pytest.param(kind, field, value, id=f"{kind}:{field}")
    for kind, fields in TABLE["defaults"].items()
    for field, value in fields.items()
]


@pytest.mark.parametrize(("kind", "field", "value"), DEFAULTS)
def test_karpenters_defaults_fill_what_the_document_leaves_out(kind: str, field: str, value: Any) -> None:
    (document,) = _read(BASES[kind]).require()
    model = document.model
    if isinstance(model, NodePool):
        manifest = render_nodepool(model)
    else:
        assert isinstance(model, EC2NodeClass)
        manifest = render_nodeclass(model)

    assert _lookup(manifest, field) == value


# Where a checkout of aws/karpenter-provider-aws is (its pkg/apis/crds is read); unset: skipped.
CRDS = Path(os.environ.get("KARPENTER_PROVIDER_AWS", "/nonexistent")) / "pkg" / "apis" / "crds"
CRD_FILES = {
    "NodePool": "karpenter.sh_nodepools.yaml",
    "EC2NodeClass": "karpenter.k8s.aws_ec2nodeclasses.yaml",
    "NodeOverlay": "karpenter.sh_nodeoverlays.yaml",
}


def _crd_rules(schema: dict[str, Any], path: str, out: set[tuple[str, str]]) -> None:
    for _ in schema.get("x-kubernetes-validations", ()):
        out.add(("cel", path))
    if "pattern" in schema:
        out.add(("pattern", path))
    # An integer format (int32, int64) with a maximum is the maximum's business (test_karpenter_schema).
    if "format" in schema and not (schema.get("type") == "integer" and "maximum" in schema):
        out.add(("format", path))
    for name, child in (schema.get("properties") or {}).items():
        if path == "" and name == "status":
            continue
        _crd_rules(child, f"{path}.{name}" if path else name, out)
    if isinstance(schema.get("items"), dict):
        _crd_rules(schema["items"], f"{path}[]", out)
    if isinstance(schema.get("additionalProperties"), dict):
        _crd_rules(schema["additionalProperties"], f"{path}{{}}", out)


@pytest.mark.skipif(not CRDS.is_dir(), reason="KARPENTER_PROVIDER_AWS does not name a karpenter-provider-aws checkout")
@pytest.mark.parametrize("kind", sorted(CRD_FILES))
def test_the_table_names_every_rule_field_of_the_crds(kind: str) -> None:
    crd = yaml.safe_load((CRDS / CRD_FILES[kind]).read_text())
    in_crd: set[tuple[str, str]] = set()
    for version in crd["spec"]["versions"]:
        _crd_rules(version["schema"]["openAPIV3Schema"], "", in_crd)
    in_crd = {(source, path) for source, path in in_crd if path.startswith("spec")}
    tabled = {(r["source"], r["field"]) for r in RULES if r["kind"] == kind}

    assert sorted(in_crd - tabled) == [], "rules of Karpenter's CRD the table lacks"
