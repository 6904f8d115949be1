"""Bounded passes: a solve budget, and tenants taking fair turns under it, through the provisioner.

Faked: the Kubernetes API, EC2 and the state store (in memory, as in test_provisioning), time (a
virtual clock), and in the fairness tests the clock the solve budget is measured by (a scripted
one: every reading is one second later, so "slow" is exact and independent of the machine).
Observed: which pods the first pass launched capacity for, what it deferred, and that later
passes launch the rest.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from nodewright.controllers.provisioning import Provisioner
from nodewright.model import labels as wk
from nodewright.model.pod import AffinityTerm, Pod
from nodewright.model.selectors import LabelSelector
from tests.builders import pod
from tests.controllers.test_provisioning import World


def own_anti_affinity(count: int, namespace: str = "tenant-a", cpu: str = "200m") -> list[Pod]:
    """`count` pods, each with its own label and a required hostname anti-affinity term on it:
    every pod is a class of its own, the shape that made a pass quadratic.
    """
    return [
        pod(
            f"hard-{i}",
            namespace=namespace,
            cpu=cpu,
            memory="256Mi",
            labels={"app": f"hard-{i}"},
            anti_affinity=(AffinityTerm(LabelSelector((("app", f"hard-{i}"),)), wk.HOSTNAME, frozenset({namespace})),),
        )
        for i in range(count)
    ]


def deployment(count: int, namespace: str = "tenant-b") -> list[Pod]:
    """A Deployment's `count` identical replicas."""
    return [
        pod(f"web-{i}", namespace=namespace, cpu="100m", memory="128Mi", labels={"app": "web"}) for i in range(count)
    ]


def add(world: World, pods: list[Pod]) -> None:
    world.cluster.add_pods([replace(p, created_at=world.clock.now()) for p in pods])


def on_claims(world: World) -> set[str]:
    return {p for c in world.store.claims() for p in c.pods}


def scripted_clock() -> Callable[[], float]:
    """A clock that reads one second later at every reading."""
    now = [0.0]

    def read() -> float:
        now[0] += 1.0
        return now[0]

    return read


def test_ten_thousand_pods_with_their_own_anti_affinity_and_another_workload_launch_in_the_first_pass() -> None:
    world = World()
    hard, web = own_anti_affinity(10_000), deployment(300)
    add(world, hard + web)
    provisioner = world.provisioner()
    cpu = time.process_time()
    report = provisioner.provision(world.cluster.snapshot())
    cpu = time.process_time() - cpu
    first = on_claims(world)
    # The other workload has capacity after the first pass, whatever the machine's load.
    assert {p.key for p in web} <= first
    assert report.unschedulable == {}
    # On an idle machine the solve takes about 1 s (it was quadratic: 78 s) and nothing is
    # deferred; on a busy one the 8 s budget may leave some hard pods to the next pass.
    assert {p.key for p in hard} == (first & {p.key for p in hard}) | set(report.deferred)
    assert report.solve_seconds <= 10.0, report.solve_seconds
    # The whole pass (the solve, recording the claims, CreateFleet) in CPU seconds, which a busy
    # machine does not stretch: about 0.5 s (`python -m bench.pathological --case provisioner:10000`).
    assert cpu <= 10.0, cpu


def fair_world(budget: float) -> tuple[World, Provisioner, list[Pod], list[Pod]]:
    world = World()
    # The hard tenant's pods are larger, so the solver's order (largest first) reaches them first.
    hard, web = own_anti_affinity(40, cpu="500m"), deployment(20)
    add(world, hard + web)
    provisioner = world.provisioner(solve_budget=budget)
    provisioner.solve_clock = scripted_clock()
    return world, provisioner, hard, web


def test_a_tenant_slow_to_place_cannot_starve_another_past_the_solve_budget() -> None:
    world, provisioner, hard, web = fair_world(budget=30.0)
    report = provisioner.provision(world.cluster.snapshot())
    first = on_claims(world)
    # The other tenant's Deployment is in the first pass's plan, all of it.
    assert {p.key for p in web} <= first
    # The hard tenant had its share and the time left, and the rest waits for the next pass.
    assert report.deferred
    assert set(report.deferred) <= {p.key for p in hard}
    assert {p.key for p in hard} == (first & {p.key for p in hard}) | set(report.deferred)
    assert report.unschedulable == {}
    assert world.observer.of("deferred")


def test_deferred_pods_are_planned_by_the_next_passes_at_once() -> None:
    world, provisioner, hard, web = fair_world(budget=30.0)
    report = provisioner.run(world.clock.now() + 60.0)
    assert on_claims(world) == {p.key for p in hard + web}
    assert report.passes >= 2
    # No 30 s parking as if unschedulable: the passes follow each other within a few seconds.
    assert not world.observer.of("unschedulable")


def test_without_a_budget_problem_nothing_is_deferred() -> None:
    world, provisioner, hard, web = fair_world(budget=1e9)
    report = provisioner.provision(world.cluster.snapshot())
    assert report.deferred == []
    assert on_claims(world) == {p.key for p in hard + web}
