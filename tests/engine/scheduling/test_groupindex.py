"""The topology group index: the same groups as a scan of every group, for a fraction of the work.

Faked: nothing. Observed: `GroupIndex.selecting` against a plain scan over selectors of every
kind (matchLabels, In, NotIn, Exists, DoesNotExist, empty), and through the real `solve()`, how
many selector checks a pass of pods that each bring their own anti-affinity term makes.
"""

from __future__ import annotations

import itertools

import pytest

from nodewright.engine.scheduling import solve
from nodewright.engine.scheduling.groupindex import GroupIndex, required_values
from nodewright.engine.scheduling.topology import Group
from nodewright.model import labels as wk
from nodewright.model.selectors import Expression, LabelSelector
from tests.builders import pod
from tests.engine.scheduling.scenario import pool, scheduling_input, term

SELECTORS = (
    LabelSelector(),
    LabelSelector((("app", "a"),)),
    LabelSelector((("app", "a"), ("tier", "web"))),
    LabelSelector((), (Expression("app", "In", frozenset({"a", "b"})),)),
    LabelSelector((), (Expression("app", "NotIn", frozenset({"a"})),)),
    LabelSelector((), (Expression("tier", "Exists"),)),
    LabelSelector((), (Expression("tier", "DoesNotExist"),)),
    LabelSelector((("tier", "db"),), (Expression("app", "In", frozenset({"c"})),)),
)
LABELS: tuple[dict[str, str], ...] = (
    {},
    {"app": "a"},
    {"app": "b"},
    {"app": "c", "tier": "db"},
    {"app": "a", "tier": "web"},
    {"tier": "x"},
)


def test_selecting_is_exactly_the_scan_in_insertion_order() -> None:
    groups = [
        Group(key, sel, ns)
        for key, sel, ns in itertools.product(
            (wk.HOSTNAME, wk.ZONE), SELECTORS, (None, frozenset({"default"}), frozenset({"other"}))
        )
    ]
    index: GroupIndex[Group] = GroupIndex()
    for g in groups:
        assert index.add(g)
    assert not index.add(groups[0])
    assert len(index) == len(groups)
    assert list(index) == groups
    for namespace, labels in itertools.product(("default", "other"), LABELS):
        assert index.selecting(namespace, labels) == [g for g in groups if g.selects(namespace, labels)]


@pytest.mark.parametrize(
    ("selector", "values"),
    [
        (LabelSelector(), []),
        (LabelSelector((("app", "a"), ("tier", "web"))), [("app", "a")]),
        (LabelSelector((), (Expression("app", "In", frozenset({"b", "a"})),)), [("app", "a"), ("app", "b")]),
        (LabelSelector((), (Expression("app", "NotIn", frozenset({"a"})),)), []),
    ],
)
def test_required_values(selector: LabelSelector, values: list[tuple[str, str]]) -> None:
    assert required_values(selector) == values


def test_a_pass_of_pods_with_their_own_anti_affinity_checks_few_selectors(monkeypatch: pytest.MonkeyPatch) -> None:
    """2,000 pods, each with a required hostname anti-affinity term of its own: a scan of every
    group for every pod would check millions of selectors; the index checks a few per pod.
    """
    count = 2_000
    pods = [pod(f"p{i}", labels={"app": f"a{i}"}, anti_affinity=(term(f"a{i}"),)) for i in range(count)]
    checks = 0
    original = Group.selects

    def counting(self: Group, namespace: str, labels: object) -> bool:
        nonlocal checks
        checks += 1
        return original(self, namespace, labels)  # type: ignore[arg-type]

    monkeypatch.setattr(Group, "selects", counting)
    result = solve(scheduling_input(pods, pools=[pool()]))
    assert not result.unschedulable
    placed = [p.name for c in result.claims for p in c.pods]
    assert sorted(placed) == sorted(p.name for p in pods)
    assert checks <= 10 * count, checks
