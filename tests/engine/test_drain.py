"""Drain planning: which pods go, in which tier, and which stay (nodewright.engine.drain)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from nodewright.engine.drain import CRITICAL, NON_CRITICAL, plan_drain
from nodewright.model import labels as wk
from nodewright.model.pod import Pod
from nodewright.model.taints import Taint, Toleration
from tests.builders import pod

TAINT = Taint(wk.DISRUPTED_TAINT_KEY, "NoSchedule", wk.DISRUPTED_REPLACE)


def bound(name: str, **fields: object) -> Pod:
    phase = fields.pop("phase", "Running")
    return replace(pod(name, node_name="n1", **fields), phase=phase)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"owner_kind": "DaemonSet"}, "DaemonSet pod"),
        ({"mirror": True}, "mirror pod"),
        ({"phase": "Succeeded"}, "finished"),
        ({"tolerations": [Toleration(key=wk.DISRUPTED_TAINT_KEY, operator="Exists")]}, "tolerates the disrupted taint"),
        ({"tolerations": [Toleration(operator="Exists")]}, "tolerates the disrupted taint"),
        ({"annotations": {wk.DO_NOT_DISRUPT: "true"}}, "do-not-disrupt"),
    ],
)
def test_pods_a_voluntary_drain_leaves_in_place(fields: dict[str, object], reason: str) -> None:
    plan = plan_drain([bound("p", **fields)], TAINT, forced=False)
    assert plan.kept == (("default/p", reason),)
    assert plan.evict == ()
    assert plan.done


def test_a_forced_drain_evicts_do_not_disrupt_pods() -> None:
    plan = plan_drain([bound("p", annotations={wk.DO_NOT_DISRUPT: "true"})], TAINT, forced=True)
    assert [p.name for p in plan.evict] == ["p"]


def test_critical_pods_wait_until_the_non_critical_tier_is_gone() -> None:
    pods = [bound("dns", priority_class="system-cluster-critical"), bound("web-1"), bound("web-0")]
    plan = plan_drain(pods, TAINT, forced=True)
    assert plan.tier == NON_CRITICAL
    assert [p.name for p in plan.evict] == ["web-0", "web-1"]
    assert plan.later == 1
    terminating = [pods[0], bound("web-0", deleting=True)]
    plan = plan_drain(terminating, TAINT, forced=True)
    assert plan.tier == NON_CRITICAL
    assert plan.evict == ()
    assert plan.terminating == 1
    assert not plan.done
    plan = plan_drain(pods[:1], TAINT, forced=True)
    assert plan.tier == CRITICAL
    assert [p.name for p in plan.evict] == ["dns"]


def test_an_empty_node_is_drained() -> None:
    assert plan_drain([], TAINT, forced=False).done
