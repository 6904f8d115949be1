"""Node repair: a node whose Ready condition, a node monitoring agent condition or an EC2 status
check has been bad for the policy's toleration is replaced (replacements planned for its pods),
forcefully; never while more than the allowed share of its NodePool's or of the cluster's nodes
is unhealthy.

Faked: nothing; each case builds a small cluster (`World`) and runs the real `compute_commands`
and `validate`.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from nodewright.engine.disruption import DisruptionOptions, validate
from nodewright.engine.disruption.repair import POLICIES, allowed_unhealthy
from nodewright.model.instance import InstanceStatus
from nodewright.model.node import NodeCondition
from nodewright.model.nodepool import Budget
from nodewright.model.selectors import LabelSelector
from nodewright.model.workloads import PodDisruptionBudget
from tests.engine.disruption.scenario import NOW, World, only, pool

MINUTE = 60.0
# Nothing else to do in this cluster: no consolidation, so only repair can yield a command.
QUIET = pool(policy="WhenEmpty", after=None)


def world(nodes: int = 5) -> World:
    w = World(pools=[QUIET])
    for i in range(nodes):
        w.node(f"n{i}", "m5.xlarge")
        w.put(f"n{i}", 2, cpu="1")
    return w


def condition(w: World, node: str, kind: str, status: str, held: float) -> None:
    """Set `kind`=`status` on `node` since `held` seconds before NOW (Ready also sets `ready`)."""
    current = next(n for n in w.nodes if n.name == node)
    kept = tuple(c for c in current.conditions if c.type != kind)
    changes: dict[str, object] = {"conditions": (*kept, NodeCondition(kind, status, NOW - held))}
    if kind == "Ready":
        changes["ready"] = status == "True"
    w.edit_node(node, **changes)


# (id, condition, status, held seconds, repaired?)
TABLE = [
    ("ready-false-29m", "Ready", "False", 29 * MINUTE, False),
    ("ready-false-30m", "Ready", "False", 30 * MINUTE, True),
    ("ready-unknown-31m", "Ready", "Unknown", 31 * MINUTE, True),
    ("ready-unknown-10m", "Ready", "Unknown", 10 * MINUTE, False),
    ("accelerated-hardware-10m", "AcceleratedHardwareReady", "False", 10 * MINUTE, True),
    ("accelerated-hardware-9m", "AcceleratedHardwareReady", "False", 9 * MINUTE, False),
    ("storage-30m", "StorageReady", "False", 30 * MINUTE, True),
    ("storage-29m", "StorageReady", "False", 29 * MINUTE, False),
    ("networking-30m", "NetworkingReady", "False", 30 * MINUTE, True),
    ("kernel-30m", "KernelReady", "False", 30 * MINUTE, True),
    ("kernel-unknown-2h", "KernelReady", "Unknown", 2 * 60 * MINUTE, False),
    ("container-runtime-30m", "ContainerRuntimeReady", "False", 30 * MINUTE, True),
    ("container-runtime-true", "ContainerRuntimeReady", "True", 2 * 60 * MINUTE, False),
    ("unmonitored-condition", "MemoryPressure", "True", 2 * 60 * MINUTE, False),
]


@pytest.mark.parametrize(("kind", "status", "held", "repaired"), [t[1:] for t in TABLE], ids=[t[0] for t in TABLE])
def test_a_condition_past_its_toleration_gets_the_node_repaired(
    kind: str, status: str, held: float, repaired: bool
) -> None:
    w = world()
    condition(w, "n1", kind, status, held)
    result = w.run()
    if not repaired:
        assert result.commands == ()
        return
    command = only(result)
    assert (command.method, command.reason, command.budgeted) == ("repair", "Unhealthy", False)
    assert command.candidates == ("n1",)
    assert f"{kind}={status} for" in command.detail
    assert command.pods == ("default/n1-p0", "default/n1-p1")


def test_the_policy_table_is_karpenters_for_aws_plus_the_status_checks() -> None:
    table = {(p.condition, p.status): p.toleration / MINUTE for p in POLICIES}
    assert table == {
        ("Ready", "False"): 30,
        ("Ready", "Unknown"): 30,
        ("AcceleratedHardwareReady", "False"): 10,
        ("StorageReady", "False"): 30,
        ("NetworkingReady", "False"): 30,
        ("KernelReady", "False"): 30,
        ("ContainerRuntimeReady", "False"): 30,
        ("EC2StatusCheck", "impaired"): 10,
    }


@pytest.mark.parametrize(
    ("since", "held"),
    [(NOW - 11 * MINUTE, ""), (NOW - 9 * MINUTE, "repair in 1m"), (0.0, "its start is unknown")],
    ids=["impaired-11m", "impaired-9m", "impaired-since-unknown"],
)
def test_an_impaired_status_check_past_ten_minutes_gets_the_node_repaired(since: float, held: str) -> None:
    w = world()
    w.edit_node("n2", provider_id="aws:///us-east-1a/i-0bad")
    statuses = (InstanceStatus("i-0bad", ("system",), since),)
    result = w.run(instance_statuses=statuses)
    if not held:
        command = only(result)
        assert command.candidates == ("n2",)
        assert "EC2StatusCheck=impaired (system) for 11m" in command.detail
    else:
        assert result.commands == ()
        assert held in result.rejected["n2"]


def test_the_replacement_is_planned_for_the_pods_and_ignores_budgets_and_pdbs() -> None:
    w = World(pools=[pool(policy="WhenEmpty", after=None, budgets=(Budget(nodes="0"),))])
    w.node("a", "m5.xlarge")
    w.put("a", 3, cpu="1", labels={"app": "web"})
    w.node("b", "m5.large")
    w.put("b", 1, cpu="1500m")
    w.pdbs.append(PodDisruptionBudget("default", "web", LabelSelector((("app", "web"),)), min_available="100%"))
    w.edit_node("a", annotations={"karpenter.sh/do-not-disrupt": "true"})
    condition(w, "a", "Ready", "Unknown", 45 * MINUTE)
    command = only(w.run())
    assert command.candidates == ("a",)
    assert len(command.replacements) == 1  # the 3 cpu of pods do not fit in b's half cpu
    assert "1 replacement(s)" in command.detail


def test_a_nodepool_with_more_than_its_share_unhealthy_is_not_repaired() -> None:
    w = world(5)  # ceil(20% of 5) = 1 may be unhealthy
    condition(w, "n0", "Ready", "False", 40 * MINUTE)
    condition(w, "n1", "Ready", "False", 5 * MINUTE)  # not due, but unhealthy: counts
    other = pool("other", policy="WhenEmpty", after=None)
    w.pools.append(other)
    for i in range(10):  # keep the cluster-wide share low: 2 of 15
        w.node(f"o{i}", "m5.large", pool="other")
    result = w.run()
    assert result.commands == ()
    assert "2 of NodePool default's 5 nodes are unhealthy (more than 20%, 1 node(s))" in result.rejected["n0"]
    assert "Ready=False for 40m" in result.rejected["n0"]


def test_one_unhealthy_node_of_three_is_repaired_rounding_up() -> None:
    w = world(3)
    condition(w, "n0", "Ready", "False", 40 * MINUTE)
    assert only(w.run()).candidates == ("n0",)
    assert allowed_unhealthy(3, 20) == 1
    assert allowed_unhealthy(10, 20) == 2
    assert allowed_unhealthy(11, 20) == 3
    assert allowed_unhealthy(100, 0) == 0


def test_nothing_is_repaired_while_the_cluster_wide_share_points_at_the_control_plane() -> None:
    # Two NodePools of five, each with one NotReady node (20% each: within their own cap), plus
    # five foreign nodes NotReady too: 7 of 15 unhealthy cluster-wide.
    w = world(5)
    w.pools.append(pool("other", policy="WhenEmpty", after=None))
    for i in range(5):
        w.node(f"o{i}", "m5.large", pool="other")
    condition(w, "n0", "Ready", "Unknown", 40 * MINUTE)
    condition(w, "o0", "Ready", "Unknown", 40 * MINUTE)
    for i in range(5):
        foreign = w.node(f"f{i}", "m5.large", labels={})
        w.nodes[-1] = replace(
            foreign, labels={}, ready=False, conditions=(NodeCondition("Ready", "Unknown", NOW - 40 * MINUTE),)
        )
    result = w.run()
    assert result.commands == ()
    assert "7 of the cluster's 15 nodes are unhealthy (more than 20%, 3 node(s))" in result.rejected["n0"]
    assert "control-plane or network problem" in result.rejected["o0"]


def test_due_nodes_of_several_nodepools_go_in_one_command_due_first() -> None:
    w = world(5)
    w.pools.append(pool("other", policy="WhenEmpty", after=None))
    for i in range(5):
        w.node(f"o{i}", "m5.large", pool="other")
    condition(w, "n3", "KernelReady", "False", 31 * MINUTE)
    condition(w, "o1", "Ready", "False", 50 * MINUTE)
    command = only(w.run())
    assert command.candidates == ("o1", "n3")


def test_zero_percent_turns_repair_off() -> None:
    w = world()
    condition(w, "n1", "Ready", "False", 2 * 60 * MINUTE)
    assert w.run(options=DisruptionOptions(repair_max_unhealthy_percent=0)).commands == ()


@pytest.mark.parametrize(
    ("setup", "reason"),
    [
        (lambda w: w.edit_claim("n1", state="launched"), "not initialized yet"),
        (lambda w: w.edit_node("n1", deleting=True), "already being deleted"),
        (lambda w: setattr(w, "pools", []), "no longer exists"),
    ],
    ids=["not-initialized", "deleting", "nodepool-gone"],
)
def test_nodes_repair_must_leave_alone(setup, reason: str) -> None:  # type: ignore[no-untyped-def]
    w = world()
    condition(w, "n1", "Ready", "False", 2 * 60 * MINUTE)
    setup(w)
    result = w.run()
    assert result.commands == ()
    assert reason in result.rejected["n1"]


def test_a_node_under_a_running_command_is_not_repaired_again() -> None:
    w = world()
    condition(w, "n1", "Ready", "False", 2 * 60 * MINUTE)
    result = w.run(in_progress=frozenset({"n1"}))
    assert result.commands == ()
    assert "already part of a running disruption command" in result.rejected["n1"]


def test_validate_keeps_a_repair_still_due_and_drops_one_whose_node_recovered() -> None:
    w = world()
    condition(w, "n1", "Ready", "False", 31 * MINUTE)
    command = only(w.run())
    # The consolidator records the command before validating: its node is in progress.
    assert validate(command, w.input(now=NOW + 15, in_progress=frozenset({"n1"}))) is None
    condition(w, "n1", "Ready", "True", 0)
    assert validate(command, w.input(now=NOW + 15)) == "candidate n1: is healthy again"
    w.nodes = [n for n in w.nodes if n.name != "n1"]
    assert validate(command, w.input(now=NOW + 15)) == "candidate n1 is gone"


def test_validate_drops_a_repair_when_the_cluster_guard_closes() -> None:
    w = world(5)
    condition(w, "n1", "Ready", "False", 31 * MINUTE)
    command = only(w.run())
    for name in ("n2", "n3"):
        condition(w, name, "Ready", "Unknown", 1 * MINUTE)
    stale = validate(command, w.input(now=NOW + 15))
    assert stale is not None
    assert "3 of the cluster's 5 nodes are unhealthy" in stale
