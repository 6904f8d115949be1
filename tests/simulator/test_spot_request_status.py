"""Simulated spot warnings are confirmed as on AWS: the spot request is marked when the warning goes out.

Real: the simulated EC2 (`SimulatedEc2` over moto: CreateFleet, DescribeInstances, and
DescribeSpotInstanceRequests answered by `nodewright.simulator.standins.spot_requests`), the EC2 adapter's
`instance_facts` and the verification's `verdict`; in the scenario run, everything the simulator
runs (EventBridge, SQS, the interruption handler). Observed: the spot request status the adapter
reads before and after the warning, and the interruption function's metrics and decisions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import boto3
from moto import mock_aws

from nodewright.adapters.aws.ec2 import Ec2CloudProvider
from nodewright.engine.interruption import Message
from nodewright.engine.interruption.messages import SPOT_INTERRUPTION
from nodewright.engine.interruption.rules import SPOT_INTERRUPTION_WARNING
from nodewright.engine.interruption.verification import ACT, GENTLE, verdict
from nodewright.inmemory.clock import VirtualClock
from nodewright.model.cluster import ClusterInfo
from nodewright.simulator.runner import run_scenario
from nodewright.simulator.scenario import Scenario
from nodewright.simulator.standins.ec2 import Ec2Hooks, SimulatedEc2
from tests.adapters.aws.fakes import PublicParameters
from tests.simulator.conftest import NODECLASS, deployment, nodepool


def spot_instance(ec2: SimulatedEc2, moto: Any) -> str:
    """One spot instance, launched through the simulated EC2's CreateFleet."""
    moto.create_launch_template(LaunchTemplateName="nodes", LaunchTemplateData={"ImageId": "ami-12c6146b"})
    answer = ec2.create_fleet(
        Type="instant",
        TargetCapacitySpecification={"TotalTargetCapacity": 1, "DefaultTargetCapacityType": "spot"},
        LaunchTemplateConfigs=[
            {
                "LaunchTemplateSpecification": {"LaunchTemplateName": "nodes", "Version": "$Latest"},
                "Overrides": [{"InstanceType": "m5.large", "AvailabilityZone": "us-east-1a"}],
            }
        ],
    )
    return str(answer["Instances"][0]["InstanceIds"][0])


def test_the_adapter_reads_a_fulfilled_request_then_the_mark_the_warning_set() -> None:
    with mock_aws():
        moto = boto3.client("ec2", region_name="us-east-1")
        ec2 = SimulatedEc2(moto, Ec2Hooks())
        instance_id = spot_instance(ec2, moto)
        cluster = ClusterInfo("simulated", "https://example.invalid", "LS0t", "1.31")
        cloud = Ec2CloudProvider(ec2, PublicParameters(), cluster, instance_profile="p", clock=VirtualClock())
        ids = (instance_id,)
        warning = Message("e-1", SPOT_INTERRUPTION, "aws.ec2", SPOT_INTERRUPTION_WARNING, time=1.0, instance_ids=ids)

        before = cloud.instance_facts([instance_id], spot_status=True)[instance_id]
        assert (before.spot, before.spot_status) == (True, "fulfilled")
        assert verdict(warning, before).outcome == GENTLE  # no warning from EC2 yet: not confirmed

        ec2.spot_requests.mark(instance_id, "terminate")
        after = cloud.instance_facts([instance_id], spot_status=True)[instance_id]
        assert after.spot_status == "marked-for-termination"
        assert verdict(warning, after).outcome == ACT
        # A request id the simulated account never issued is not answered (EC2 would refuse it).
        assert ec2.describe_spot_instance_requests(SpotInstanceRequestIds=["sir-0000"]) == {"SpotInstanceRequests": []}


def test_every_simulated_spot_warning_is_confirmed_and_nothing_is_lost(scenario: Callable[[str], Scenario]) -> None:
    storm = scenario(
        "name: storm\nduration: 10m\nconsolidation: off\n"
        f"nodepools:{nodepool(capacity_types='spot')}nodeclasses:{NODECLASS}workloads:"
        + deployment("web", 30)
        + "interruptions:\n  - {at: 4m, count: 2, within: 30s, rebalance: false}\n"
    )
    result = run_scenario(storm)
    summary = result.summary
    assert summary["interruption"]["instances"] == 2
    assert summary["pods_lost"] == 0
    assert summary["pdb_violations"] == 0
    world = result.world
    assert world is not None
    observer = world.observers["interruption"]
    assert observer.total("UnconfirmedMessages") == 0
    assert observer.total("MessagesDropped") == 0
    acted = [d for d in observer.of("interruption") if "spot request marked-for-termination" in str(d)]
    assert len(acted) == 2, observer.of("interruption")
