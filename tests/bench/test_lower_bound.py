"""The LP bounds are valid (never above a feasible plan) and tight where the answer is known."""

from __future__ import annotations

import pytest

from bench.reference.lower_bound import aggregate_bound, lower_bound
from nodewright.model import labels as wk
from nodewright.model.pod import AffinityTerm
from nodewright.model.selectors import LabelSelector
from tests.builders import instance_type, pod

CPU_NODE = instance_type("c5.xlarge", cpu="4", memory="4Gi", pods=58, price=0.1)
MEM_NODE = instance_type("r5.xlarge", cpu="1", memory="32Gi", pods=58, price=0.1)
TYPES = [CPU_NODE, MEM_NODE]
PRICES = {t.name: 0.1 for t in TYPES}


def test_identical_pods_cost_their_share_of_the_best_type() -> None:
    pods = [pod(cpu="1", memory="1Gi") for _ in range(8)]

    # Four per c5.xlarge (cpu and memory both limit at 4): two nodes.
    assert lower_bound(pods, TYPES, PRICES).cost == pytest.approx(0.2)


def test_the_assignment_bound_does_not_mix_one_pods_cpu_and_memory_across_types() -> None:
    pods = [pod(cpu="1", memory="3Gi") for _ in range(4)]

    # The aggregate LP buys most cpu on c5 and the missing memory on a fraction of an r5:
    # 4 x_c + x_r >= 4 cpu and 4 x_c + 32 x_r >= 12 GiB give x_r = 8/31, x_c = 29/31.
    assert aggregate_bound(pods, TYPES, PRICES).cost == pytest.approx(0.1 * 37 / 31)
    # The assignment LP charges each pod 3/4 of a c5 (memory-bound): 3 nodes. (A real plan needs 4.)
    assert lower_bound(pods, TYPES, PRICES).cost == pytest.approx(0.3)


def test_hostname_anti_affinity_needs_one_node_per_pod() -> None:
    term = AffinityTerm(LabelSelector((("app", "web"),)), wk.HOSTNAME, frozenset({"default"}))
    pods = [pod(cpu="100m", memory="128Mi", labels={"app": "web"}, anti_affinity=(term,)) for _ in range(3)]

    assert lower_bound(pods, TYPES, PRICES).cost == pytest.approx(0.3)


def test_a_pod_no_type_holds_makes_the_bound_fail_loudly() -> None:
    with pytest.raises(ValueError, match="fits no instance type"):
        lower_bound([pod(cpu="64")], TYPES, PRICES)
