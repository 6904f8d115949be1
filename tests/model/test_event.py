"""nodewright.model.event: which Event a disruption pass's reason becomes, and the correlator's
series and limits on a virtual timeline (pure: no cluster, no clock).
"""

from __future__ import annotations

import pytest

from nodewright.model.blocker import BUDGET, DO_NOT_DISRUPT_NODE, DO_NOT_DISRUPT_POD, PDB, STALLED_DRAIN, Blocker
from nodewright.model.errors import InvalidValue
from nodewright.model.event import (
    CREATE,
    PATCH,
    EventCorrelator,
    ObjectRef,
    disruption_rejected,
    pod_failed_to_schedule,
    pod_nominated,
)


@pytest.mark.parametrize(
    ("why", "blocker", "reason"),
    [
        pytest.param(
            "pod default/db-0 is annotated karpenter.sh/do-not-disrupt",
            Blocker(DO_NOT_DISRUPT_POD, ("default/db-0",)),
            "DisruptionBlocked",
            id="pod",
        ),
        pytest.param(
            "the node is annotated karpenter.sh/do-not-disrupt",
            Blocker(DO_NOT_DISRUPT_NODE, ("ip-1",)),
            "DisruptionBlocked",
            id="node-annotation",
        ),
        pytest.param(
            "pod default/web-1: PodDisruptionBudget default/web allows no disruption now",
            Blocker(PDB, ("default/web",)),
            "DisruptionBlocked",
            id="pdb",
        ),
        pytest.param(
            "NodePool default's disruption budgets allow 0 Underutilized now",
            Blocker(BUDGET, ("default",)),
            "DisruptionBlocked",
            id="budget",
        ),
        pytest.param(
            "its last drain stalled (PodDisruptionBudgets refused the evictions) and was given up",
            Blocker(STALLED_DRAIN),
            "DisruptionBlocked",
            id="stalled",
        ),
        # The kind comes from the engine's data, not from words in the text.
        pytest.param(
            "a replacement would leave PodDisruptionBudget-covered pods without room",
            None,
            "Unconsolidatable",
            id="text",
        ),
        pytest.param(
            "replacing it saves $0.0040/h, less than the stability guard's $0.0100/h",
            None,
            "Unconsolidatable",
            id="verdict",
        ),
        pytest.param(
            "no method found a command for it: not empty, expired or drifted, and no cheaper placement",
            None,
            None,
            id="not-considered",
        ),
        pytest.param("not managed by Nodewright (no node claim or NodePool label)", None, None, id="foreign"),
        pytest.param("not initialized yet (claim state launched)", None, None, id="young"),
        pytest.param("already part of a running disruption command", None, None, id="in-progress"),
        pytest.param("left for a later pass: this pass chose emptiness", None, None, id="later"),
        pytest.param("its pods last changed 30s ago; consolidateAfter is 1m", None, None, id="not-due"),
        pytest.param(
            "NodePool spot consolidates only empty nodes (consolidationPolicy WhenEmpty)", None, None, id="when-empty"
        ),
        pytest.param(
            "a provisioning pass nominated it 12s ago (window 30s)", Blocker(BUDGET, ("default",)), None, id="nominated"
        ),
    ],
)
def test_a_pass_reason_becomes_blocked_unconsolidatable_or_no_event(
    why: str, blocker: Blocker | None, reason: str | None
) -> None:
    event = disruption_rejected("ip-1", why, blocker)

    assert (event.reason if event else None) == reason
    if event is not None:
        assert (event.regarding, event.note) == (ObjectRef.node("ip-1"), why)


def test_a_series_is_one_create_then_one_patch_per_window_and_a_gap_starts_a_new_one() -> None:
    correlator = EventCorrelator()
    nominated = pod_nominated("default/web-1", "default-abc")

    writes = [correlator.observe(nominated, t) for t in (0, 60, 119, 130, 200, 400)]

    assert [(w.verb, w.count) if w else None for w in writes] == [
        (CREATE, 1),
        None,
        None,
        (PATCH, 4),  # 130 s after the create: the 2-minute window's patch
        None,
        (CREATE, 1),  # 200 s after the last occurrence: a new series
    ]
    assert writes[0].name != writes[5].name  # type: ignore[union-attr]
    assert correlator.folded == 3


def test_a_pod_reference_needs_a_namespace() -> None:
    with pytest.raises(InvalidValue, match="expected namespace/name"):
        ObjectRef.pod("web-1")


def test_ten_thousand_live_series_cost_amortised_constant_time_and_finished_ones_are_forgotten() -> None:
    correlator = EventCorrelator(invocation_budget=1 << 30)
    keys = [f"default/web-{i}" for i in range(10_000)]

    for now in (0.0, 30.0):  # two passes over 10,000 pods no NodePool can take
        for key in keys:
            correlator.observe(pod_failed_to_schedule(key, "nodepool default: no instance type fits"), now)
    correlator.observe(pod_failed_to_schedule("default/late", "nodepool default: no instance type fits"), 10_000.0)

    assert correlator.folded == 10_000
    for key in keys[:3]:  # long finished: a new occurrence is a new Event
        write = correlator.observe(pod_failed_to_schedule(key, "nodepool default: no instance type fits"), 10_001.0)
        assert write is not None
        assert write.verb == CREATE
