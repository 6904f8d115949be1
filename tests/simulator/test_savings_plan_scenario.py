"""The shipped savings-plan scenario, run by the simulator end to end (issue 19 item 5).

What is real: the provisioner, consolidator and interruption handlers with their real controllers
against moto's EC2 and DynamoDB and the in-memory cluster, on the virtual clock, reading the
scenario's Karpenter documents (a NodePool and two NodeOverlays, karpenter.sh/v1alpha1, unchanged).
What is observed: the instance types running at the end, the cluster's $/h at list and at
effective prices with and without the overlays, and the run's lost pods and violations
(bench/savings_plan.py measures the same way).
"""

from __future__ import annotations

from pathlib import Path

from bench.savings_plan import measure
from nodewright.simulator.scenario import load_scenario

SCENARIO = Path(__file__).resolve().parents[2] / "examples" / "scenarios" / "savings-plan.yaml"


def test_the_scenario_reads_its_nodeoverlays_unchanged() -> None:
    scenario = load_scenario(SCENARIO)

    assert [(o.name, o.weight, str(o.price_adjustment)) for o in scenario.nodeoverlays] == [
        ("compute-savings-plan", 10, "-28%"),
        ("enterprise-discount", 1, "-5%"),
    ]


def test_the_savings_plan_makes_the_dearest_family_the_one_launched_and_the_bill_lower() -> None:
    result = measure(None)
    with_overlays, without = result["with_overlays"], result["without_overlays"]

    assert {name.split(".")[0] for name in with_overlays["instance_types_at_end"]} == {"m7i"}
    assert "m7i" not in {name.split(".")[0] for name in without["instance_types_at_end"]}
    # At list prices the discounted plan is dearer (m7i lists above m5/m6i); what is paid is less.
    assert with_overlays["usd_per_hour_effective"] < without["usd_per_hour_effective"]
    assert with_overlays["usd_per_hour_list"] > without["usd_per_hour_list"]
    for run in (with_overlays, without):
        assert run["pods_lost"] == 0
        assert run["pdb_violations"] == run["do_not_disrupt_violations"] == run["limit_violations"] == 0
