"""What the solver remembers from one solve to the next gives exactly the answers of working afresh.

Consolidation asks the solver dozens of questions per pass, and the same questions again in the
next pass: the same bound pods, the same moving pods, the same claims to finalize. Three memos
serve them, all held by the caller's `SolverCache`: `bound_runs` (a node's bound pods added up once
per run of pods), `Targets.best` (a claim's target type per demand) and
`PreparedPool.claim_options` (a claim's options per load and limits). These tests ask
consolidation-like sequences of questions with the memos warm and compare every answer with one
computed afresh (or pod by pod).
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest

from nodewright.engine.scheduling import SchedulingInput, SchedulingResult, SolverCache, solve
from nodewright.engine.scheduling.cache import BoundRuns, PodFacts
from nodewright.engine.scheduling.existing import Bound, BoundPods
from nodewright.engine.scheduling.prepare import PoolType, PreparedPool, vec
from nodewright.engine.scheduling.targets import TARGET_SLACK, Targets, best_target, dominated, priced
from nodewright.model import labels as wk
from nodewright.model.pod import Pod
from nodewright.model.requirements import Requirement, Requirements
from tests.builders import ZONES, instance_type, node, node_pool, pod
from tests.engine.scheduling.scenario import GPU, catalog, pods, pool, scheduling_input, spread, term

NAMES = ("cpu", "memory", "pods")
GI = (1 << 30) * 1000  # a GiB of memory in the solver's milli-units


def _fresh(inp: SchedulingInput) -> SchedulingResult:
    """Solve with nothing remembered from any other solve."""
    return solve(inp, cache=SolverCache(prepared=0, pod_facts=0, node_facts=0, bound_runs=0))


def _cluster() -> tuple[tuple[Any, ...], dict[str, tuple[Pod, ...]]]:
    """Six nodes and their bound pods: one tuple per node, reused by every question (as a pass does)."""
    nodes = tuple(
        node(f"n{i}", cpu="8", memory="32Gi", labels={wk.ZONE: ZONES[i % len(ZONES)], wk.CAPACITY_TYPE: "spot"})
        for i in range(6)
    )
    on: dict[str, tuple[Pod, ...]] = {}
    for i, n in enumerate(nodes):
        apps = ["api"] * (i % 3 + 1) + ["web"] * (i % 2) + ["solo"] * (i == 4)
        on[n.name] = tuple(
            pod(
                f"{n.name}-{app}-{j}",
                cpu="500m",
                memory="1Gi",
                labels={"app": app},
                node_name=n.name,
                anti_affinity=(term("solo"),) if app == "solo" else (),
            )
            for j, app in enumerate(apps)
        )
    return nodes, on


def _question(
    nodes: Sequence[Any], on: dict[str, tuple[Pod, ...]], leaving: Sequence[str], moving: Sequence[Pod], **fields: Any
) -> SchedulingInput:
    staying = [n for n in nodes if n.name not in leaving]
    bound = tuple(p for n in staying for p in on[n.name])
    return scheduling_input(moving, nodes=tuple(staying), bound_pods=bound, **fields)


def test_consolidation_like_questions_give_the_fresh_results() -> None:
    nodes, on = _cluster()
    names = [n.name for n in nodes]
    types = tuple(sorted(catalog(), key=lambda t: t.name))
    cuts = [pool(types=types), pool(types=types[:4]), pool(types=types[:7])]
    limited = pool(node_pool(limits={"cpu": "20"}), types=types)
    flexible = pool(
        node_pool(
            requirements=[
                {"key": wk.INSTANCE_TYPE, "operator": "Exists", "minValues": 2},
            ]
        ),
        types=types,
    )
    moving = {
        "api": pods(4, "mv-api", cpu="500m", memory="1Gi", labels={"app": "api"}, spread=(spread("api"),)),
        "web": pods(6, "mv-web", cpu="1", memory="2Gi", labels={"app": "web"}),
        "big": pods(3, "mv-big", cpu="3", memory="12Gi"),
    }
    questions = []
    for size in (1, 2, 3):
        for leaving in itertools.combinations(names, size):
            for kind, pools in (("api", cuts[:1]), ("web", cuts[1:2]), ("big", cuts[2:]), ("web", [limited])):
                questions.append(_question(nodes, on, leaving, moving[kind], pools=tuple(pools)))
    questions.append(_question(nodes, on, ("n0",), moving["big"], pools=(flexible,)))
    random.Random(7).shuffle(questions)
    cache = SolverCache()
    warm = [solve(q, cache=cache) for q in questions] + [solve(q, cache=cache) for q in questions]  # all hit
    cold = [_fresh(q) for q in questions]
    assert warm == cold + cold
    assert any(r.claims for r in cold)
    assert any(r.existing for r in cold)


def _pod_by_pod(bound_pods: Sequence[Pod], names: tuple[str, ...]) -> Bound:
    """What `BoundPods.get` computed before runs were remembered: every pod on its own."""
    used: dict[str, list[int]] = {}
    by_node: dict[str, list[Pod]] = {}
    alike: dict[str, dict[tuple[object, ...], list[Any]]] = {}
    for p in bound_pods:
        if p.terminal or not p.node_name:
            continue
        by_node.setdefault(p.node_name, []).append(p)
        acc = used.setdefault(p.node_name, [0] * len(names))
        for i, v in enumerate(vec(p.requests, names)):
            acc[i] += v
        key = (p.namespace, tuple(sorted(p.labels.items())), p.anti_affinity)
        seen = alike.setdefault(p.node_name, {}).get(key)
        if seen is None:
            alike[p.node_name][key] = [p, 1]
        else:
            seen[1] += 1
    return Bound(used, by_node, {n: [(p, c) for p, c in runs.values()] for n, runs in alike.items()})


def _same(a: Bound, b: Bound) -> None:
    assert a.used == b.used
    assert {n: [id(p) for p in ps] for n, ps in a.pods.items()} == {n: [id(p) for p in ps] for n, ps in b.pods.items()}
    assert list(a.pods) == list(b.pods)
    assert {n: [(id(p), c) for p, c in r] for n, r in a.alike.items()} == {
        n: [(id(p), c) for p, c in r] for n, r in b.alike.items()
    }


def test_bound_pods_added_up_run_by_run_are_added_up_pod_by_pod() -> None:
    cache = SolverCache()  # one for every sequence: later ones reuse the runs earlier ones added up
    _, on = _cluster()
    done = replace(pod("n1-done", node_name="n1", labels={"app": "api"}), phase="Succeeded")
    unbound = pod("pending", labels={"app": "api"})
    n0, n1, n2, n3, n4 = (on[f"n{i}"] for i in range(5))
    sequences: list[tuple[Pod, ...]] = [
        n0 + n1 + n2 + n3 + n4,
        n0 + n2 + n4,  # nodes left out
        n4 + n3 + n0,  # another order
        n1[:1] + n2,  # a run cut short: a prefix of a remembered run
        n1 + n1[:1] + n0,  # a node's pods in two runs
        (*n1[:1], done, *n1[1:], unbound, *n2),  # pods that are not counted, inside a run
        (unbound, done, *n3),
        n2 + n2,  # the same pods twice
        (*n3, n3[0], n3[0]),
        (),
    ]
    for names in (NAMES, ("cpu", "ephemeral-storage", "memory", "pods")):
        for rounds in range(2):
            for sequence in sequences if rounds == 0 else reversed(sequences):
                _same(BoundPods(cache).get(sequence, names), _pod_by_pod(sequence, names))
                _same(BoundPods(cache).get(list(sequence), names), _pod_by_pod(sequence, names))


def test_remembered_runs_are_bounded() -> None:
    runs = BoundRuns(PodFacts(), limit=3)
    _, on = _cluster()
    every = tuple(p for ps in on.values() for p in ps)
    for start in range(len(every)):
        runs.get(every, start, NAMES)
        assert len(runs._runs) <= 3
        assert all(len(known) <= runs.PER_POD for known in runs._runs.values())


def _targets() -> tuple[PreparedPool, tuple[PoolType, ...]]:
    inp = scheduling_input(pods(1, "x"), pools=(pool(node_pool(limits={"cpu": "64"})),))
    prepared = PreparedPool(inp.pools[0].nodepool, (), frozenset(), NAMES)
    types, _ = prepared.types(inp.pools[0].instance_types)
    return prepared, types


def test_a_remembered_target_is_the_target_chosen_afresh() -> None:
    prepared, types = _targets()
    rng = random.Random(3)
    alt = Requirements([Requirement.new(wk.ARCH, "In", ["amd64"])])
    cts_choices = [frozenset({"spot"}), frozenset({"on-demand"}), frozenset({"spot", "on-demand"})]
    asked = []
    for _ in range(400):
        # Vectors over NAMES in the solver's units (milli-cpu, milli-bytes, milli-pods).
        req = (rng.choice([250, 1000, 3000]), rng.choice([1, 4, 12]) * GI, 1000)
        demand = (
            max(req[0], rng.randrange(0, 64_000)),
            max(req[1], rng.randrange(0, 256) * GI),
            max(req[2], rng.randrange(1, 60) * 1000),
        )
        asked.append((req, rng.choice(cts_choices), demand))
    chosen: set[str | None] = set()
    for req, cts, demand in asked + asked:
        base = prepared.targets(types, alt, req)
        afresh = best_target(priced(base.fitting, req, cts), demand)
        assert base.best(cts, demand) is afresh
        assert len(base._chosen) <= base.MAX_CHOICES
        chosen.add(None if afresh is None else afresh.it.name)
    assert len(chosen) >= 4  # the demands ask for different targets


def test_remembered_claim_options_are_the_options_found_afresh() -> None:
    prepared, types = _targets()
    rng = random.Random(5)
    plain = Requirements([Requirement.new(wk.ARCH, "In", ["amd64"])])
    two_types = Requirements([replace(Requirement.new(wk.INSTANCE_TYPE, "Exists", []), min_values=2)])
    too_many = Requirements([replace(Requirement.new(wk.INSTANCE_TYPE, "Exists", []), min_values=50)])
    asked = []
    for _ in range(300):
        used = (rng.choice([0, 500, 1900, 3500, 7000, 90_000]), rng.choice([0, 1, 6, 14, 40]) * GI, 3000)
        budget = rng.choice([None, (8000, 32 * GI, 110_000), (100_000, 1024 * GI, 1_000_000), (2000, 8 * GI, 29_000)])
        asked.append((rng.choice([plain, two_types, too_many, Requirements()]), used, budget))
    answers: set[str] = set()
    for reqs, used, budget in asked + asked:
        fresh = PreparedPool(prepared.nodepool, (), frozenset(), NAMES)
        fresh_types, _ = fresh.types(_catalog_of(prepared))
        answer = _names(prepared.claim_options(types, reqs, used, budget))
        assert answer == _names(fresh.claim_options(fresh_types, reqs, used, budget))
        answers.add(repr(answer))
    assert len(answers) >= 8  # loads, limits and requirements that give different options


def _catalog_of(prepared: PreparedPool) -> Sequence[Any]:
    return [known[0] for known in prepared._view.by_type.values()]


def _names(answer: tuple[list[Any], str]) -> tuple[list[tuple[float, str, tuple[Any, ...]]], str]:
    options, why = answer
    return [(price, name, offers) for price, name, _, offers in options], why


def _type_by_type(
    fitting: Sequence[PoolType], req: tuple[int, ...], cts: frozenset[str], demand: Sequence[int]
) -> PoolType | None:
    """The target as it was chosen before the early stop: every type costed."""
    plain = [t for t in fitting if not t.exotic]
    costs = []
    for t in plain or fitting:
        if not any(ct in t.prices for ct in cts):
            continue
        price = min(p for ct, p in t.prices.items() if ct in cts)
        worst = 0.0
        for i, cap in enumerate(t.cap):
            if cap and demand[i] > 0:
                worst = max(worst, demand[i] / ((cap // req[i]) * req[i] if req[i] else cap))
        costs.append((price * max(1, math.ceil(worst - 1e-9)), price, t))
    if not costs:
        return None
    best = min(c for c, _, _ in costs)
    near = [(price, t) for c, price, t in costs if c <= best * (1 + TARGET_SLACK)]
    return min(near, key=lambda n: (n[0], n[1].it.name))[1]


def _many_types(rng: random.Random) -> list[Any]:
    """A catalog of 240 types: families of sizes priced about (not exactly) by size, plus GPU types."""
    out = []
    for family, (per_cpu, gib_per_cpu) in enumerate([(0.0425, 2), (0.048, 4), (0.063, 8), (0.0385, 4)] * 5):
        for size in (1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96):
            price = round(per_cpu * 2 * size * rng.uniform(0.97, 1.03), 4)
            out.append(
                instance_type(
                    f"f{family}.{size}x",
                    cpu=str(2 * size),
                    memory=f"{2 * size * gib_per_cpu}Gi",
                    price=price,
                    spot_price=round(price * rng.uniform(0.3, 0.45), 4),
                )
            )
    out += [
        instance_type(f"g{i}.xlarge", cpu=str(4 * i), memory=f"{16 * i}Gi", price=0.5 * i, extra={GPU: str(i)})
        for i in (1, 2, 4, 8)
    ]
    return out


@pytest.mark.parametrize("many", [False, True])
def test_the_target_chosen_with_an_early_stop_is_the_one_chosen_among_all(many: bool) -> None:
    names = ("cpu", "memory", GPU, "pods")
    rng = random.Random(11)
    inp = scheduling_input(pods(1, "x"), pools=(pool(types=_many_types(rng)) if many else pool(),))
    prepared = PreparedPool(inp.pools[0].nodepool, (), frozenset(), names)
    types, _ = prepared.types(inp.pools[0].instance_types)
    cts_choices = [frozenset({"spot"}), frozenset({"on-demand"}), frozenset({"spot", "on-demand"})]
    chosen = set()
    for _ in range(600):
        req = (rng.choice([100, 1000, 2500]), rng.choice([1, 3, 7]) * GI, rng.choice([0, 0, 0, 1000]), 1000)
        fitting = [t for t in types if all(c >= r for c, r in zip(t.cap, req, strict=True))]
        demand = tuple(max(r, rng.choice([0, 1, 3, 7, 40, 150]) * r + rng.randrange(0, 3) * 999) for r in req)
        cts = rng.choice(cts_choices)
        expected = _type_by_type(fitting, req, cts, demand)
        assert best_target(priced(fitting, req, cts), demand) is expected
        chosen.add(None if expected is None else expected.it.name)
    assert len(chosen) >= 4


def _shapes(rng: random.Random) -> list[Any]:
    """A catalog of 120 types over few shapes (cpu, memory, max pods) at prices drawn from a short
    list, so shapes repeat at equal and at different prices, some with a GPU, some spot.
    """
    out = []
    for i in range(120):
        cpu = rng.choice([2, 4, 8, 16])
        gpu = rng.random() < 0.15
        price = rng.choice([0.05, 0.08, 0.1, 0.1, 0.2, 0.35, 0.4, 0.8, 1.6])
        spot = rng.choice([None, round(price * 0.35, 4), round(price * 0.5, 4)])
        out.append(
            instance_type(
                f"s{i}.x",
                cpu=str(cpu),
                memory=f"{cpu * rng.choice([2, 4, 8])}Gi",
                pods=rng.choice([8, 29, 58]),
                price=price,
                spot_price=spot,
                extra={GPU: "1"} if gpu else None,
            )
        )
    return out


@pytest.mark.parametrize("seed", range(6))
def test_the_target_chosen_among_the_types_not_dominated_is_the_one_chosen_among_all(seed: int) -> None:
    # `Targets.best` looks only at the types no cheaper type of the same kind outdoes in every resource.
    names = ("cpu", "memory", GPU, "pods")
    rng = random.Random(seed)
    inp = scheduling_input(pods(1, "x"), pools=(pool(types=_shapes(rng)),))
    prepared = PreparedPool(inp.pools[0].nodepool, (), frozenset(), names)
    types, _ = prepared.types(inp.pools[0].instance_types)
    cts_choices = [frozenset({"spot"}), frozenset({"on-demand"}), frozenset({"spot", "on-demand"})]
    assert all(dominated(types, cts) for cts in cts_choices)  # the catalog has some to leave out
    chosen = set()
    for _ in range(300):
        req = (rng.choice([100, 1000, 2500, 7000]), rng.choice([1, 3, 7]) * GI, rng.choice([0, 0, 0, 1000]), 1000)
        demand = tuple(max(r, rng.choice([0, 1, 3, 7, 40, 150]) * r + rng.randrange(0, 3) * 999) for r in req)
        cts = rng.choice(cts_choices)
        targets = Targets(list(types), req)
        expected = best_target(priced(targets.fitting, req, cts), demand)
        assert targets.best(cts, demand) is expected
        chosen.add(None if expected is None else expected.it.name)
    assert len(chosen) >= 3


def test_a_cut_by_limits_prices_the_types_it_keeps_as_pricing_them_afresh() -> None:
    # `choose_target` under limits: the whole list's priced types, less those cut, as `priced` of the cut.
    names = ("cpu", "memory", GPU, "pods")
    rng = random.Random(13)
    inp = scheduling_input(pods(1, "x"), pools=(pool(types=_many_types(rng)),))
    prepared = PreparedPool(inp.pools[0].nodepool, (), frozenset(), names)
    types, _ = prepared.types(inp.pools[0].instance_types)
    cuts = 0
    for _ in range(300):
        req = (rng.choice([100, 1000, 2500]), rng.choice([1, 3]) * GI, rng.choice([0, 0, 1000]), 1000)
        base = prepared.targets(types, Requirements(), req)
        remaining = (
            rng.randrange(2, 200) * 1000,
            rng.randrange(4, 800) * GI,
            rng.choice([1000, 8000, 1 << 40]),
            1 << 40,
        )
        kept = [t for t in base.fitting if all(c <= r for c, r in zip(t.capacity, remaining, strict=True))]
        if not any(not t.exotic for t in kept):
            continue
        cuts += len(kept) < len(base.fitting)
        cts = rng.choice([frozenset({"spot"}), frozenset({"spot", "on-demand"})])
        ids = {id(t) for t in kept}
        assert [p for p in base.priced(cts) if id(p[0]) in ids] == priced(kept, req, cts)
    assert cuts > 50
