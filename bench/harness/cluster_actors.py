"""The cluster's other actors around a controller under test: a kubelet and a first-fit kube-scheduler.

Role: the controller tests (`tests/controllers/test_interruption.py`'s world, which the disruption,
repair, handler and event tests reuse) and the crash benchmark (`bench.crash_points`) run the real
controllers over the in-memory cluster, the fake cloud and the in-memory state store on a virtual
clock. What the controllers do not do themselves is done here, one way for all of them:

* `Kubelet`: each live instance becomes a Ready Node `boot` seconds after its launch, labelled as
  Nodewright's launch labels it (NodePool, NodeClaim, instance type, zone, capacity type), its
  capacity that of its instance type;
* `schedule_first_fit`: kube-scheduler reduced to first fit: each pending pod is bound to the first
  Ready, schedulable node its requests fit on; a pod that fits nowhere is marked unschedulable;
* `pdb`: a PodDisruptionBudget over the pods labelled `app=<app>`;
* `running_node`: a node Nodewright launched before the test starts, as every layer holds it (the
  running instance, its initialized claim record, its Ready Node).

What is left out on purpose: affinity, taints, spread and the scheduler's scoring (the controllers'
own decisions are what these worlds test; the binding model is `engine/scheduling/binding.py`).
"""

from __future__ import annotations

from collections.abc import Sequence

from nodewright.inmemory.clock import VirtualClock
from nodewright.inmemory.cloud import FakeCloudProvider
from nodewright.inmemory.cluster import InMemoryCluster
from nodewright.model import labels as wk
from nodewright.model.instance import Instance
from nodewright.model.instancetype import InstanceType
from nodewright.model.node import Node
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.pod import Pod
from nodewright.model.resources import Resources
from nodewright.model.selectors import LabelSelector
from nodewright.model.taints import tolerates_all
from nodewright.model.workloads import PodDisruptionBudget
from nodewright.ports import ClaimRecords


def node_for(instance: Instance, types: Sequence[InstanceType], name: str = "") -> Node:
    """The Ready Node the kubelet registers for `instance` (named `ip-<instance id>` by default);
    its capacity is its instance type's among `types` (StopIteration when the type is not there).
    """
    capacity = next(t.capacity for t in types if t.name == instance.instance_type)
    name = name or f"ip-{instance.instance_id}"
    return Node(
        name=name,
        labels={
            wk.HOSTNAME: name,
            wk.NW_NODEPOOL: instance.nodepool,
            wk.NODEPOOL: instance.nodepool,
            wk.NW_NODECLAIM: instance.nodeclaim,
            wk.INSTANCE_TYPE: instance.instance_type,
            wk.ZONE: instance.zone,
            wk.CAPACITY_TYPE: instance.capacity_type,
        },
        capacity=capacity,
        allocatable=capacity,
        provider_id=instance.provider_id,
        ready=True,
    )


def running_node(
    cluster: InMemoryCluster,
    cloud: FakeCloudProvider,
    claims: ClaimRecords,
    types: Sequence[InstanceType],
    *,
    name: str,
    instance_type: str,
    zone: str,
    launched_at: float,
    capacity_type: str = "on-demand",
    price: float | None = None,
    instance_id: str = "",
    claim_pods: tuple[str, ...] = (),
) -> Node:
    """A node of NodePool `default` launched at `launched_at`, registered and initialized: the
    running instance `instance_id` (default `i-<name>`) tagged with claim `claim-<name>`, that
    claim's record (`claim_pods`: the pods it was launched for, as the provisioner records them)
    and its Ready Node `name` (`node_for`). `price` defaults to the type's offering of that
    capacity type in `zone`. The caller binds the pods it wants on it.
    """
    if price is None:
        offerings = next(t.offerings for t in types if t.name == instance_type)
        price = next(o.price for o in offerings if o.zone == zone and o.capacity_type == capacity_type)
    instance = cloud.add_instance(
        Instance(
            instance_id=instance_id or f"i-{name}",
            instance_type=instance_type,
            zone=zone,
            capacity_type=capacity_type,
            state="running",
            launched_at=launched_at,
            nodeclaim=f"claim-{name}",
            nodepool="default",
            price=price,
        )
    )
    claims.create_claim(
        NodeClaim(
            name=f"claim-{name}",
            nodepool="default",
            state="initialized",
            instance_type=instance_type,
            capacity_type=capacity_type,
            zone=zone,
            price=price,
            instance_id=instance.instance_id,
            provider_id=instance.provider_id,
            node_name=name,
            created_at=launched_at,
            pods=claim_pods,
        )
    )
    return cluster.add_node(node_for(instance, types, name))


class Kubelet:
    """Registers each live instance of `cloud` as a Ready Node `boot` seconds after its launch."""

    def __init__(
        self,
        cluster: InMemoryCluster,
        cloud: FakeCloudProvider,
        clock: VirtualClock,
        types: Sequence[InstanceType],
        *,
        boot: float,
    ) -> None:
        self.cluster, self.cloud, self.clock = cluster, cloud, clock
        self.types = tuple(types)
        self.boot = boot

    def register_booted(self) -> None:
        """Add the Node of every live instance that has booted and has none yet."""
        now = self.clock.now()
        for instance in self.cloud.instances():
            if (
                instance.live
                and instance.launched_at + self.boot <= now
                and not self.cluster.node_by_instance(instance.instance_id)
            ):
                self.cluster.add_node(node_for(instance, self.types))


def schedule_first_fit(cluster: InMemoryCluster) -> None:
    """Bind pending pods first-fit to Ready, schedulable nodes whose NoSchedule/NoExecute taints
    they tolerate (a disrupted node's taint keeps them off, as kube-scheduler does); mark the rest
    unschedulable.
    """
    for p in cluster.pods():
        if p.node_name or p.daemon:
            continue
        for n in cluster.nodes():
            if n.ready and not n.unschedulable and tolerates_all(p.tolerations, n.taints) and fits(cluster, n, p):
                cluster.bind(p, n.name)
                break
        else:
            if not p.unschedulable:
                cluster.mark_unschedulable(p)


def fits(cluster: InMemoryCluster, node: Node, pod: Pod) -> bool:
    """Whether `pod`'s requests fit beside the pods already bound to `node` (allocatable only)."""
    used = Resources()
    for bound in cluster.pods_on(node.name):
        used = used + bound.requests
    total = used + pod.requests
    return all(total[k] <= node.allocatable[k] for k in total)


def pdb(name: str, app: str, min_available: int) -> PodDisruptionBudget:
    """A PodDisruptionBudget `default/<name>` keeping `min_available` of the pods labelled `app=<app>`."""
    return PodDisruptionBudget(
        "default", name, LabelSelector.parse({"matchLabels": {"app": app}}), min_available=min_available
    )
