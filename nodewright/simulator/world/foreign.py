"""Nodes another autoscaler launched before the run (scenario key `initial_nodes`).

Role: start a simulated cluster the way a migration from Karpenter starts: Ready nodes whose EC2
instances carry none of Nodewright's tags and whose Node objects carry none of its labels (only
what the other autoscaler put there, e.g. `karpenter.sh/nodepool`). Nodewright must leave them
alone unless the user hands them over; the migration scenario
(examples/scenarios/migrate-from-karpenter.yaml) and tests/simulator/test_migrate_from_karpenter.py
check that it does.

Contract: `add_initial_nodes(world)` runs once in `World.build`, before any workload pod exists:
for every node of every `initial_nodes` group it launches an instance in the world's EC2 (moto)
tagged as the other autoscaler tags its own, and adds a Ready Node (capacity and allocatable from
the catalog, the usual well-known labels, then the group's labels). Returns the node names.
"""

from __future__ import annotations

from nodewright.model import labels as wk
from nodewright.simulator.scenario import Scenario
from nodewright.simulator.standins.account import Account
from nodewright.simulator.standins.catalog import SimCatalog
from nodewright.simulator.standins.kube import SimulatedCluster, node_for
from nodewright.simulator.standins.lambdas import REGION

# How Karpenter tags the instances it launches (its cluster ownership tag), so the EC2 side looks
# like a real migration's: instances of the account Nodewright does not own.
OTHER_OWNER_TAG = "karpenter.sh/managed-by"


def add_initial_nodes(
    scenario: Scenario, account: Account, catalog: SimCatalog, cluster: SimulatedCluster
) -> list[str]:
    """Launch the scenario's `initial_nodes` in `account` and register them in `cluster` (see the
    module docstring); their names.
    """
    names: list[str] = []
    ec2 = account.ec2
    for group in scenario.initial_nodes:
        instance_type = catalog.find(group.instance_type, None)
        if instance_type is None:
            raise ValueError(f"initial_nodes: {group.instance_type} is not in the catalog")
        image = account.images.get("arm64" if instance_type.arch == "arm64" else "x86_64", "")
        for _ in range(group.count):
            launched = ec2.run_instances(
                ImageId=image,
                InstanceType=group.instance_type,
                MinCount=1,
                MaxCount=1,
                Placement={"AvailabilityZone": group.zone},
                TagSpecifications=[
                    {
                        "ResourceType": "instance",
                        "Tags": [
                            {"Key": OTHER_OWNER_TAG, "Value": "demo"},
                            *({"Key": k, "Value": v} for k, v in sorted(group.labels.items())),
                        ],
                    }
                ],
            )["Instances"][0]
            instance_id = str(launched["InstanceId"])
            name = str(launched.get("PrivateDnsName") or instance_id)
            labels = {
                wk.HOSTNAME: name,
                wk.ZONE: group.zone,
                wk.REGION: REGION,
                wk.ARCH: instance_type.arch,
                wk.OS: "linux",
                wk.INSTANCE_TYPE: group.instance_type,
                wk.CAPACITY_TYPE: group.capacity_type,
                **group.labels,
            }
            cluster.memory.add_node(
                node_for(
                    name,
                    labels=labels,
                    taints=(),
                    startup_taints=(),
                    capacity=instance_type.capacity,
                    allocatable=instance_type.allocatable,
                    provider_id=f"aws:///{group.zone}/{instance_id}",
                )
            )
            names.append(name)
    if names:
        cluster.memory.reconcile_daemonsets()
    return names
