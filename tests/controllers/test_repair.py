"""Node repair through the consolidator: a node broken for its toleration is replaced (the
replacement first), drained within a deadline and terminated; its pods run elsewhere; each
repair is logged with the condition that triggered it and counted.

Faked: the Kubernetes API (in-memory cluster, a kubelet registering launched instances after a
boot delay, a first-fit scheduler onto Ready nodes), EC2 (the fake cloud, whose `impair` fails a
status check) and the state table (in memory); time is virtual, advanced by the consolidator's
`sleep`. Real: the consolidator, the disruption engine, the provisioner's launch path, the drain.
"""

from __future__ import annotations

import pytest

from bench.harness.cluster_actors import pdb
from nodewright.controllers.settings import Settings, SettingsError
from nodewright.model.nodepool import Budget, Disruption
from tests.builders import node_pool
from tests.controllers.test_disruption import ConsolidationWorld

MINUTE = 60.0
# Consolidation never acts here (consolidateAfter: Never), and budgets allow nothing: whatever
# the consolidator does is repair's, which budgets do not hold.
QUIET = (node_pool(disruption=Disruption("WhenEmpty", None, (Budget(nodes="0"),))),)


def world_with(nodes: int = 3, pods: int = 4) -> ConsolidationWorld:
    world = ConsolidationWorld(pools=QUIET)
    for i in range(nodes):
        world.node_with(f"n{i}", pods, capacity_type="on-demand")
    return world


def test_a_node_not_ready_for_thirty_minutes_is_replaced_first_then_drained_and_terminated() -> None:
    world = world_with(3, pods=26)  # 13 cpu of pods per 16-cpu node: the others cannot take them
    start = world.clock.now()
    world.cluster.set_node_condition("n1", "Ready", "Unknown", "NodeStatusUnknown")
    world.run(60)
    assert world.cluster.get_node("n1") is not None  # 1 minute in: tolerated
    assert world.observer.of("repair") == []
    world.tick(30 * MINUTE)
    world.run(600)
    assert world.cluster.get_node("n1") is None
    assert world.cloud.instance("i-n1").state == "terminated"  # type: ignore[union-attr]
    assert world.cluster.lost_pods() == []
    moved = [p for p in world.workload_pods() if p.name.startswith("web-n1-")]
    assert len(moved) == 26
    assert all(p.node_name and p.node_name != "n1" and p.phase == "Running" for p in moved)
    # The replacement was Ready before the first eviction.
    added = [c.at for c in world.cluster.changes_of("node_added") if c.at > start]
    evicted = [c.at for c in world.cluster.changes_of("pod_evicted")]
    assert added
    assert min(evicted) >= max(added)
    (decision,) = world.observer.of("repair")
    assert decision["node"] == "n1"
    assert decision["condition"] == "Ready"
    assert decision["status"] == "Unknown"
    assert decision["toleration"] == 30 * MINUTE
    assert 30 * MINUTE <= float(decision["held"]) <= 32 * MINUTE  # type: ignore[arg-type]
    assert world.observer.total("NodesRepaired") == 1
    assert [m[3] for m in world.observer.metrics if m[0] == "NodesRepaired"] == [{"condition": "Ready"}]
    assert world.observer.of("disruption-done")[0]["method"] == "repair"


def test_an_impaired_status_check_gets_the_node_repaired_after_ten_minutes() -> None:
    world = world_with(3, pods=2)  # the others have room: no replacement needed
    world.cloud.impair("i-n0", ("instance",))
    world.run(60)
    assert world.cluster.get_node("n0") is not None
    world.tick(10 * MINUTE)
    world.run(300)
    assert world.cluster.get_node("n0") is None
    assert world.cluster.lost_pods() == []
    (decision,) = world.observer.of("repair")
    assert (decision["condition"], decision["status"]) == ("EC2StatusCheck", "impaired (instance)")
    assert world.cloud.calls_to("instance_statuses")
    assert not world.cloud.calls_to("launch")  # the pods fit on the other nodes


def test_a_kernel_condition_from_the_node_monitoring_agent_gets_the_node_repaired() -> None:
    world = world_with(3, pods=2)
    world.cluster.set_node_condition("n2", "KernelReady", "False", "KernelBug")
    world.tick(31 * MINUTE)
    world.run(300)
    assert world.cluster.get_node("n2") is None
    assert world.observer.of("repair")[0]["condition"] == "KernelReady"


def test_a_pdb_that_refuses_holds_the_repair_only_until_its_drain_deadline() -> None:
    world = world_with(2, pods=2)
    world.cluster.add_pdb(pdb("web", "web", min_available=4))  # refuses every eviction
    world.cluster.set_node_ready("n0", False)
    world.tick(31 * MINUTE)
    world.run(400, repair_drain_timeout=120.0)
    assert world.cluster.get_node("n0") is None
    (deadline,) = world.observer.of("repair-drain-deadline")
    assert deadline["left"] == 2


def test_no_repair_while_a_large_share_of_the_cluster_is_unhealthy() -> None:
    world = world_with(5, pods=1)  # ceil(20% of 5) = 1 may be unhealthy
    for name in ("n0", "n1"):
        world.cluster.set_node_condition(name, "Ready", "Unknown")
    world.tick(40 * MINUTE)
    world.run(120)
    assert len(world.cluster.nodes()) == 5
    assert world.observer.of("repair") == []
    rejected = {d["node"]: d["reason"] for d in world.observer.of("disruption-rejected")}
    assert "control-plane or network problem" in str(rejected["n0"])


def test_the_deploy_key_sets_the_share_and_zero_turns_repair_off() -> None:
    base = {"CLUSTER_NAME": "c", "STATE_TABLE_NAME": "s", "CONFIG_TABLE_NAME": "t"}
    assert Settings.from_env(base).disruption_options().repair_max_unhealthy_percent == 20
    settings = Settings.from_env({**base, "REPAIR_MAX_UNHEALTHY_PERCENT": "0"})
    assert settings.disruption_options().repair_max_unhealthy_percent == 0
    with pytest.raises(SettingsError, match="REPAIR_MAX_UNHEALTHY_PERCENT '150' is outside 0-100"):
        Settings.from_env({**base, "REPAIR_MAX_UNHEALTHY_PERCENT": "150"})
    with pytest.raises(SettingsError, match=r"REPAIR_MAX_UNHEALTHY_PERCENT 12\.5 is not a whole percentage"):
        Settings.from_env({**base, "REPAIR_MAX_UNHEALTHY_PERCENT": "12.5"})
    world = world_with(3, pods=1)
    world.cluster.set_node_ready("n0", False)
    world.tick(40 * MINUTE)
    report = world.run(120, disruption=settings.disruption_options())  # type: ignore[arg-type]
    assert report["completed"] == []
    assert world.cluster.get_node("n0") is not None


def test_a_status_check_without_a_start_is_timed_from_when_the_consolidator_first_saw_it() -> None:
    world = world_with(3, pods=2)
    world.cloud.impair("i-n1", ("system",), since=0.0)  # EC2 gave no ImpairedSince
    consolidator = world.consolidator()
    first = world.clock.now()
    consolidator.run(world.clock.now() + 60)
    world.tick(9 * MINUTE)
    consolidator.run(world.clock.now() + 60)
    assert world.cluster.get_node("n1") is not None  # 9 minutes after it was first seen
    world.tick(2 * MINUTE)
    consolidator.run(world.clock.now() + 300)
    assert world.cluster.get_node("n1") is None
    (decision,) = world.observer.of("repair")
    assert decision["since"] == first


def test_a_pass_at_rest_notices_the_moment_a_node_becomes_due() -> None:
    # A pass that found nothing skips the next ones while nothing changes (a 10-minute clock in
    # its fingerprint); a node becoming due must still be repaired within the minute.
    world = world_with(3, pods=2)
    consolidator = world.consolidator()
    world.tick(4 * MINUTE)  # due 34 minutes from here: in the middle of a 10-minute bucket
    world.cluster.set_node_condition("n2", "NetworkingReady", "False")
    broke = world.clock.now()
    while world.cluster.get_node("n2") is not None and world.clock.now() < broke + 40 * MINUTE:
        consolidator.run(world.clock.now() + 50)
        world.tick(MINUTE - (world.clock.now() - broke) % MINUTE)
    (decision,) = world.observer.of("repair")
    assert 30 * MINUTE <= float(decision["held"]) <= 31 * MINUTE + 20  # type: ignore[arg-type]
