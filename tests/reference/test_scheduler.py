"""The Karpenter reference scheduler behaves like Karpenter's pod-by-pod loop.

Small hand-built inputs (tests/builders.py); each test names the Karpenter behaviour it pins.
"""

from __future__ import annotations

from collections.abc import Sequence

from bench.reference import validate
from nodewright.engine.scheduling import PoolCapacity, SchedulingInput, SchedulingResult
from nodewright.model import labels as wk
from nodewright.model.instancetype import InstanceType
from nodewright.model.nodepool import NodePool
from nodewright.model.pod import AffinityTerm, Pod, SpreadConstraint
from nodewright.model.resources import Resources
from nodewright.model.selectors import LabelSelector
from nodewright.model.workloads import DaemonSet
from nodewright.reference.karpenter.scheduler import schedule
from tests.builders import instance_type, node, node_pool, pod

SMALL = instance_type("m5.large", cpu="2", memory="8Gi", pods=29, price=0.096)
MEDIUM = instance_type("m5.xlarge", cpu="4", memory="16Gi", pods=58, price=0.192)
LARGE = instance_type("m5.2xlarge", cpu="8", memory="32Gi", pods=58, price=0.384)
TYPES = (SMALL, MEDIUM, LARGE)


def run(
    pods: Sequence[Pod],
    types: Sequence[InstanceType] = TYPES,
    pool: NodePool | None = None,
    **extra: object,
) -> SchedulingResult:
    inp = SchedulingInput(pods=tuple(pods), pools=(PoolCapacity(pool or node_pool(), tuple(types)),), **extra)  # type: ignore[arg-type]
    result = schedule(inp)
    validate.check(result, pods)
    return result


def anti(app: str) -> AffinityTerm:
    return AffinityTerm(LabelSelector((("app", app),)), wk.HOSTNAME, frozenset({"default"}))


def test_one_claim_grows_and_launches_the_cheapest_type_that_holds_all_its_pods() -> None:
    result = run([pod(cpu="1", memory="1Gi") for _ in range(5)])

    assert len(result.claims) == 1
    assert result.claims[0].instance_type.name == "m5.2xlarge"
    assert [t.name for t in result.claims[0].options] == ["m5.2xlarge"]


def test_pods_go_largest_first_and_to_the_claim_with_fewest_pods() -> None:
    big = [pod(f"big-{i}", cpu="7", memory="1Gi") for i in range(2)]
    small = [pod(f"small-{i}", cpu="500m", memory="1Gi") for i in range(2)]

    result = run(small + big)

    # Two 7-cpu pods need two claims; the small pods then alternate (fewest pods first).
    assert len(result.claims) == 2
    assert sorted(len(c.pods) for c in result.claims) == [2, 2]


def test_hostname_anti_affinity_puts_each_pod_on_its_own_node() -> None:
    pods = [pod(labels={"app": "web"}, anti_affinity=(anti("web"),)) for _ in range(4)]

    result = run(pods)

    assert len(result.claims) == 4
    assert all(c.instance_type.name == "m5.large" for c in result.claims)


def test_zone_spread_pins_each_claim_to_the_least_used_zone() -> None:
    spread = SpreadConstraint(1, wk.ZONE, "DoNotSchedule", LabelSelector((("app", "web"),)))
    pods = [pod(f"web-{i}", cpu="1500m", labels={"app": "web"}, spread=(spread,)) for i in range(3)]

    result = run(pods)

    zones = sorted(next(iter(c.requirements[wk.ZONE].values)) for c in result.claims)
    assert zones == ["us-east-1a", "us-east-1b", "us-east-1c"]


def test_zone_self_affinity_keeps_the_group_in_one_zone() -> None:
    term = AffinityTerm(LabelSelector((("app", "db"),)), wk.ZONE, frozenset({"default"}))
    pods = [pod(cpu="7", labels={"app": "db"}, affinity=(term,)) for _ in range(3)]

    result = run(pods)

    assert len(result.claims) == 3
    assert {next(iter(c.requirements[wk.ZONE].values)) for c in result.claims} == {"us-east-1a"}


def test_daemonset_overhead_is_reserved_on_every_claim() -> None:
    daemon = DaemonSet("kube-system", "agent", pod("agent", cpu="1", memory="1Gi", owner_kind="DaemonSet"))

    result = run([pod(cpu="1500m", memory="1Gi")], daemonsets=(daemon,))

    # 1.5 cpu + 1 cpu of daemon overhead does not fit m5.large's 2 cpu.
    assert result.claims[0].instance_type.name == "m5.xlarge"
    assert result.claims[0].requests["cpu"] == 2500


def test_limits_stop_new_claims_pessimistically() -> None:
    pool = node_pool(limits={"cpu": "10"})
    pods = [pod(f"p-{i}", cpu="7", memory="1Gi") for i in range(3)]

    result = run(pods, pool=pool)

    # The first claim may still become an m5.2xlarge (8 cpu): 2 cpu left, nothing holds a 7-cpu pod.
    assert len(result.claims) == 1
    assert len(result.unschedulable) == 2


def test_existing_nodes_are_filled_before_new_claims() -> None:
    existing = node("node-1", cpu="4", memory="16Gi", labels={wk.ZONE: "us-east-1a"})

    result = run([pod("a", cpu="1"), pod("b", cpu="1")], nodes=(existing,))

    assert result.existing == {"node-1": ("default/a", "default/b")}
    assert result.claims == ()


def test_a_pod_no_type_can_hold_is_reported_unschedulable() -> None:
    result = run([pod("huge", cpu="64")])

    assert result.claims == ()
    assert "default/huge" in result.unschedulable


def test_claims_are_priced_at_the_cheapest_allowed_offering() -> None:
    spot = instance_type("m5.large", cpu="2", memory="8Gi", price=0.096, spot_price=0.03)

    result = run([pod(cpu="1")], types=(spot,))

    assert result.claims[0].offering.capacity_type == "spot"
    assert result.price_per_hour == 0.03
    assert result.claims[0].requests == Resources.of(cpu="1", memory="128Mi", pods=1)
