"""NodeOverlays through the command line: `plan -f` decides by effective price, `catalog -f` shows
list and effective prices and which overlay set them. Input is the savings-plan scenario's own
Karpenter manifests (examples/scenarios/savings-plan.yaml), written out as plain files.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from nodewright.cli import commands as _commands  # noqa: F401  (registers the commands)
from tests.cli.test_catalog_cli import as_group

SCENARIO = Path(__file__).resolve().parents[2] / "examples" / "scenarios" / "savings-plan.yaml"
runner = CliRunner()


@pytest.fixture
def manifests(tmp_path: Path) -> dict[str, Path]:
    """pool.yaml (NodePool + EC2NodeClass), overlays.yaml, web.yaml (60 pending pods)."""
    scenario = yaml.safe_load(SCENARIO.read_text())
    docs = scenario["nodepools"] + scenario["nodeclasses"]
    web = scenario["workloads"][0]["manifest"]
    web["spec"]["replicas"] = 60
    files = {
        "pool": [d for d in docs if d["kind"] != "NodeOverlay"],
        "overlays": [d for d in docs if d["kind"] == "NodeOverlay"],
        "web": [web],
    }
    out = {}
    for name, content in files.items():
        out[name] = tmp_path / f"{name}.yaml"
        out[name].write_text(yaml.safe_dump_all(content))
    return out


def invoke(*args: str | Path) -> Any:
    result = runner.invoke(as_group(), [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_plan_launches_the_family_the_savings_plan_makes_cheapest(manifests: dict[str, Path]) -> None:
    listed = invoke("plan", "-f", manifests["pool"], "-f", manifests["web"], "-o", "json")
    both = ("-f", manifests["pool"], "-f", manifests["overlays"], "-f", manifests["web"])
    effective = invoke("plan", *both, "-o", "json")

    assert {c["instance_type"].split(".")[0] for c in listed["nodeclaims"]} <= {"m5", "m6i"}
    assert {c["instance_type"].split(".")[0] for c in effective["nodeclaims"]} == {"m7i"}
    assert effective["total_price_per_hour"] < listed["total_price_per_hour"]
    assert not effective["unschedulable"]


def test_catalog_shows_list_and_effective_prices_and_the_overlay_that_set_them(manifests: dict[str, Path]) -> None:
    rows = {r["name"]: r for r in invoke("catalog", "-f", manifests["overlays"], "-f", manifests["pool"], "-o", "json")}

    m7i, m5 = rows["m7i.xlarge"], rows["m5.xlarge"]
    assert m7i["price"] > m5["price"]  # at list prices m7i is dearer
    assert m7i["effective_price"] == pytest.approx(m7i["price"] * 0.72)
    assert m7i["overlays"] == ["compute-savings-plan"]  # the heavier overlay wins; no compounding
    assert m5["effective_price"] == pytest.approx(m5["price"] * 0.95)
    assert m5["overlays"] == ["enterprise-discount"]
    assert m7i["effective_spot_price"] == m7i["spot_price"]  # both overlays name on-demand only

    plain = {r["name"]: r for r in invoke("catalog", "-o", "json")}
    assert plain["m7i.xlarge"]["effective_price"] == plain["m7i.xlarge"]["price"]
    assert plain["m7i.xlarge"]["overlays"] == []


def test_catalog_names_a_nodepool_it_cannot_find(manifests: dict[str, Path]) -> None:
    result = runner.invoke(as_group(), ["catalog", "-f", str(manifests["pool"]), "--nodepool", "nope"])

    assert result.exit_code == 2
    assert "--nodepool: NodePool 'nope' is not in the files (general)" in result.output


def test_a_refused_overlay_is_reported_and_the_rest_still_apply(manifests: dict[str, Path], tmp_path: Path) -> None:
    tie = yaml.safe_load_all(manifests["overlays"].read_text())
    clash = [dict(d, metadata={"name": f"{d['metadata']['name']}-twin"}) for d in tie if d["spec"]["weight"] == 10]
    extra = tmp_path / "clash.yaml"
    extra.write_text(yaml.safe_dump_all(clash))

    result = runner.invoke(as_group(), ["catalog", "-f", str(manifests["overlays"]), "-f", str(extra), "-o", "json"])

    assert result.exit_code == 0, result.output
    assert "NodeOverlay/compute-savings-plan: not applied: conflicts with an overlay of the same" in result.stderr
    rows = {r["name"]: r for r in json.loads(result.stdout)}
    assert rows["m7i.xlarge"]["overlays"] == ["compute-savings-plan-twin"]
