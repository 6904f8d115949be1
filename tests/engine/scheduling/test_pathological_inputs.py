"""Inputs that were slow for their shape, not their size: answered in time and the same as before.

Through `solve()`: a pod no type of any of 2,000 NodePools (each of its own shape) can hold is
answered once, before any pool prepares its view of the catalog; pods with hundreds of tolerations
each are keyed by a number per tolerations list, which must keep equal lists equal (pods of
different classes with equal tolerations still share claims).
"""

from __future__ import annotations

import time

from nodewright.engine.scheduling import PoolCapacity, Strategy, solve
from nodewright.engine.scheduling.cache import SolverCache
from nodewright.engine.scheduling.existing import BoundPods
from nodewright.engine.scheduling.state import Pass
from nodewright.model.taints import Toleration
from tests.builders import node_pool, pod
from tests.engine.scheduling.scenario import catalog, pool, run, scheduling_input


def _pools(count: int) -> list[PoolCapacity]:
    """`count` NodePools, each of its own shape (it leaves out a family of its own)."""
    families = ("m5", "c5", "r5", "t3")
    key = "karpenter.k8s.aws/instance-family"
    return [
        pool(
            node_pool(
                f"pool-{i}",
                weight=i % 100 + 1,
                requirements=[{"key": key, "operator": "NotIn", "values": [f"x{i}", families[i % 4]]}],
            )
        )
        for i in range(count)
    ]


def test_a_pod_no_type_of_any_of_two_thousand_nodepools_holds_gets_one_answer_in_cpu_seconds() -> None:
    huge = pod("huge", cpu="5000", memory="1Gi")
    inp = scheduling_input([huge], pools=_pools(2000))
    started = time.process_time()
    result = solve(inp)
    cpu = time.process_time() - started
    # One reason, naming the resource, the pod's request and the most any type has (m5.metal).
    assert result.unschedulable == {
        "default/huge": "no instance type of any of the 2000 NodePools has 5000 cpu allocatable (the largest has 96)"
    }
    assert not result.claims
    assert cpu < 5.0  # about 25 s of CPU when every pool prepared its types to find none fits


def test_a_pod_asking_for_a_resource_no_type_offers_is_told_so() -> None:
    result = run([pod("gpu", extra={"example.com/fpga": "1"})], pools=_pools(3))
    # Few pools are named (what a user looks for in the answer); many are counted.
    expected = "no instance type of nodepools pool-0, pool-1, pool-2 offers example.com/fpga"
    assert result.unschedulable == {"default/gpu": expected}


def test_a_pod_one_pool_holds_is_not_answered_by_the_catalog_wide_check() -> None:
    # The largest type (m5.metal, 96 cpu) is in the catalog; the pod fits it, and only it.
    result = run([pod("big", cpu="90", memory="1Gi")])
    assert [c.instance_type.name for c in result.claims] == ["m5.metal"]
    assert result.unschedulable == {}


def test_equal_tolerations_are_one_key_whatever_the_tuple_object() -> None:
    inp = scheduling_input([pod("a")])
    cache = SolverCache()
    p = Pass(inp, Strategy(), BoundPods(cache), cache)
    first = tuple(Toleration(f"k{j}", "Equal", "v", "NoSchedule") for j in range(500))
    same = tuple(Toleration(f"k{j}", "Equal", "v", "NoSchedule") for j in range(500))
    other = (*first[:-1], Toleration("k499", "Equal", "w", "NoSchedule"))
    assert first is not same
    assert p.tolerations_id(first) == p.tolerations_id(same) == p.tolerations_id(first)
    assert p.tolerations_id(other) != p.tolerations_id(first)
    assert p.tolerations_id(()) != p.tolerations_id(first)


def test_pods_of_two_classes_with_equal_tolerations_share_a_claim() -> None:
    # Each pod's tolerations are a tuple of its own (as parsed from two manifests): the classes
    # still mix onto one claim, as they did when the tuples themselves were the keys.
    def tolerations() -> list[Toleration]:
        return [Toleration(f"k{j}", "Equal", "v", "NoSchedule") for j in range(300)]

    pods = [pod(f"a-{i}", labels={"app": "a"}, tolerations=tolerations()) for i in range(3)]
    pods += [pod(f"b-{i}", labels={"app": "b"}, tolerations=tolerations()) for i in range(3)]
    result = run(pods, pools=[pool(types=catalog()[:3])])
    assert len(result.claims) == 1
    assert len(result.claims[0].pods) == 6
