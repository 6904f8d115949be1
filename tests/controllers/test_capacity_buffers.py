"""CapacityBuffers (headroom) through the provisioner's and the consolidator's `run`.

Faked: the Kubernetes API, EC2, DynamoDB and time (the world of tests/controllers/test_disruption.py:
a kubelet registering launched instances after a boot delay, a first-fit kube-scheduler that
never sees virtual pods). Observed: instances launched and terminated, the pods in the cluster,
where a burst lands, and the decisions logged.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from nodewright.controllers.configstatus import ConfigStatus
from nodewright.controllers.disruption import Consolidator
from nodewright.controllers.provisioning import Provisioner
from nodewright.controllers.provisionoptions import StaticConfiguration
from nodewright.model.capacitybuffer import CapacityBuffer, PodTemplate, ScalableRef
from nodewright.model.pod import Pod
from nodewright.ports import Configuration
from tests.builders import node_pool, pod
from tests.controllers.test_disruption import ConsolidationWorld
from tests.controllers.test_interruption import BOOT

CHUNK = PodTemplate("chunk", "default", pod("chunk", cpu="1", memory="2Gi", labels={"app": "web"}))
BUFFER = CapacityBuffer("burst", "default", pod_template_ref="chunk", replicas=6)


@dataclass
class BufferWorld(ConsolidationWorld):
    buffers: tuple[CapacityBuffer, ...] = (BUFFER,)

    def configuration(self) -> StaticConfiguration:
        return StaticConfiguration(self.pools, capacitybuffers=self.buffers, podtemplates=(CHUNK,))

    def provisioner(
        self, config: Configuration | None = None, config_status: ConfigStatus | None = None
    ) -> Provisioner:
        return super().provisioner(config if config is not None else self.configuration(), config_status)

    def consolidator(self, **options: float) -> Consolidator:
        c = super().consolidator(**options)
        c.config = c.launcher.config = self.configuration()
        return c

    def provision(self, seconds: float = 20.0) -> dict[str, object]:
        """One provisioner invocation, then time for what it launched to boot and register."""
        p = self.provisioner()
        p.sleep = lambda s: self.tick(max(1.0, s))
        report = p.run(self.clock.now() + seconds + 10).as_dict()
        self.tick(BOOT + 5)
        return report

    def room(self) -> int:
        """Millicpu free on ready nodes."""
        free = 0
        for n in self.cluster.nodes():
            used = sum(p.requests["cpu"] for p in self.cluster.pods_on(n.name))
            free += n.allocatable["cpu"] - used
        return free


def test_a_buffer_launches_room_for_its_chunks_with_no_pending_pod_and_no_pod_created() -> None:
    world = BufferWorld()
    report = world.provision()
    assert report["launched"]
    assert world.room() >= 6000  # six chunks of 1 cpu
    assert world.cluster.pods() == []  # virtual pods never reach the cluster
    assert world.observer.of("buffer-scale-up")[0]["buffers"] == ["burst"]
    # Asked again, the room is there: nothing more is launched.
    launches = len(world.cloud.calls_to("launch"))
    world.provision()
    assert len(world.cloud.calls_to("launch")) == launches


def test_a_burst_lands_on_buffer_room_at_once_and_the_buffer_is_refilled() -> None:
    world = BufferWorld()
    world.provision()
    launches = len(world.cloud.calls_to("launch"))
    burst = world.cluster.add_pods([pod(f"web-{i}", cpu="1", memory="2Gi") for i in range(6)])
    world.tick(1)  # kube-scheduler binds them into the buffer room, before any launch
    assert all(p.node_name for p in world.cluster.pods() if p.key in {b.key for b in burst})
    assert len(world.cloud.calls_to("launch")) == launches
    world.provision()  # the buffer asks for its room again
    assert len(world.cloud.calls_to("launch")) > launches
    assert world.room() >= 6000


def test_real_pending_pods_come_before_the_buffer() -> None:
    world = BufferWorld()
    world.cluster.add_pods([pod(f"web-{i}", cpu="1", memory="2Gi") for i in range(3)])
    world.tick(1)
    world.provision()
    assert all(p.node_name for p in world.cluster.pods())
    launched = world.observer.of("launch")
    assert launched[0]["reason"] == "pending pods need capacity"
    assert len(launched[0]["pods"]) == 3  # type: ignore[arg-type]


def test_a_workload_buffer_takes_its_shape_and_percentage_from_the_workload() -> None:
    share = CapacityBuffer("web", "default", scalable_ref=ScalableRef("Deployment", "web", "apps"), percentage=50)
    world = BufferWorld(buffers=(share,))
    owned: list[Pod] = [
        replace(
            pod(f"web-abc-{i}", cpu="1", memory="2Gi", labels={"app": "web", "pod-template-hash": "abc"}),
            owner_kind="ReplicaSet",
            owner_name="web-abc",
        )
        for i in range(4)
    ]
    world.cluster.add_pods(owned)
    world.tick(1)
    world.provision()
    assert all(p.node_name for p in world.cluster.pods())
    world.provision()
    assert world.room() >= 2000  # 50% of 4 replicas: two chunks of 1 cpu


def test_consolidation_keeps_a_node_whose_room_the_buffer_holds() -> None:
    world = BufferWorld()
    world.provision()
    world.provision()  # housekeeping marks the claims initialized
    nodes = sorted(n.name for n in world.cluster.nodes())
    report = world.run(seconds=120)
    assert report["decided"] == []
    assert sorted(n.name for n in world.cluster.nodes()) == nodes
    # Without the buffer the same empty nodes go.
    world.buffers = ()
    world.run(seconds=120)
    assert len(world.cluster.nodes()) < len(nodes)


def test_a_buffer_naming_a_missing_template_is_logged_once_per_warm_container_and_launches_nothing() -> None:
    world = BufferWorld(buffers=(replace(BUFFER, pod_template_ref="gone"),))
    warm = world.provisioner()
    warm.sleep = lambda s: world.tick(max(1.0, s))
    warm.run(world.clock.now() + 40)
    warm.run(world.clock.now() + 40)
    assert world.cloud.calls_to("launch") == []
    skipped = world.observer.of("buffer-short")
    assert [s["buffer"] for s in skipped] == ["default/burst"]
    assert skipped[0]["reason"] == "PodTemplate default/gone is not in the configuration"


def test_consolidation_moves_buffer_room_to_a_cheaper_node_and_names_no_virtual_pod() -> None:
    world = BufferWorld(buffers=(replace(BUFFER, replicas=2),))
    world.node_with("large", 0, capacity_type="on-demand")  # m5.4xlarge, holding only the buffer room
    report = world.run(seconds=200)
    assert report["completed"]
    assert world.cluster.get_node("large") is None
    assert world.room() >= 2000  # the replacement holds the two chunks
    assert all(c.pods == () for c in world.store.claims())
    assert world.cluster.pods() == []
    assert not any("buffer" in e.event.regarding.name for e in world.cluster.events())


def test_a_buffer_the_nodepool_limits_cut_short_says_so_once_and_keeps_what_fits() -> None:
    world = BufferWorld(pools=(node_pool(limits={"cpu": "4"}),))
    warm = world.provisioner()
    warm.sleep = lambda s: world.tick(max(1.0, s))
    warm.run(world.clock.now() + 40)
    world.tick(BOOT + 5)
    warm.run(world.clock.now() + 40)
    assert 0 < world.room() <= 4000  # what the limit allows of the six 1-cpu chunks
    (short,) = world.observer.of("buffer-short")
    assert short["buffer"] == "default/burst"
    assert str(short["reason"]).startswith("a chunk fits no NodePool:")
