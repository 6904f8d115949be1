"""The shipped ami-release scenario, run by the simulator end to end: AWS publishes a new
EKS-optimized AMI and every node booted from the old one is replaced as drifted.

Real: the provisioner and consolidator handlers with their controllers, the disruption engine,
the EC2 adapter resolving `al2023@latest` through SSM's public parameters and recording each
instance's image (moto), the DynamoDB state store (moto), the in-memory cluster, on the virtual
clock. Faked: the release itself (the simulated account registers new images and the public
parameters point at them from then on). Observed: summary.json's `ami_releases` block, the
images of the instances moto ran, the consolidator's drift decisions, lost pods and violations.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from nodewright.simulator.runner import run_scenario
from nodewright.simulator.scenario import load_scenario

SCENARIO = Path(__file__).resolve().parents[2] / "examples" / "scenarios" / "ami-release.yaml"


def test_every_node_on_the_old_image_is_replaced_within_its_drifted_budget_losing_no_pod() -> None:
    scenario = load_scenario(SCENARIO)
    assert scenario.ami_releases == (1800.0,)
    # The roll takes about 12 minutes; the rest of the shipped 2 hours adds nothing to check.
    result = run_scenario(replace(scenario, duration=3000.0), None, plots=False)
    summary = result.summary

    rolled = summary["ami_releases"]
    assert rolled["releases"] == 1
    assert rolled["instances_on_older_images"] >= 10
    assert rolled["on_older_images_at_end"] == 0
    assert 0 < rolled["rolled_seconds"] < 1200
    assert summary["pods_lost"] == 0
    assert summary["pdb_violations"] == 0
    assert summary["pods_pending_at_end"] == 0

    world = result.world
    assert world is not None
    recorder = world.recorder
    release_at, current = recorder.image_releases[-1]
    before = {r.image_id for r in recorder.instances.values() if r.launched_at < release_at}
    assert before
    assert not before & current
    after = [r for r in recorder.instances.values() if r.launched_at > release_at]
    assert after
    assert all(r.image_id in current for r in after)

    drift = [d for d in world.observers["consolidator"].decisions if d["decision"] == "disruption"]
    assert drift
    assert all(d["method"] == "drift" for d in drift)
    assert all("no longer resolves to" in str(d["detail"]) for d in drift)
    assert all(len(d["candidates"]) <= 2 for d in drift)  # the NodePool's Drifted budget: 2 nodes
