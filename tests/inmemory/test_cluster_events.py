"""Events in the in-memory cluster: what the API server would hold after the controllers' `record`.

Faked: nothing but the clock (virtual). Real: `InMemoryCluster.record` with the adapter's
correlator. Observed: `events()`.
"""

from __future__ import annotations

from nodewright.inmemory.clock import VirtualClock
from nodewright.inmemory.cluster import InMemoryCluster
from nodewright.model.event import ObjectRef, disruption_blocked, pod_failed_to_schedule
from tests.builders import pod

START = 1_767_571_200.0


def test_repeats_become_one_event_whose_series_counts_them() -> None:
    clock = VirtualClock(START)
    cluster = InMemoryCluster(clock)
    waiting = cluster.add_pod(pod("web-1"))

    for _ in range(11):  # a pass every 30 s for five minutes
        cluster.record(pod_failed_to_schedule(waiting.key, "nodepool default: no instance type fits"), clock.now())
        clock.advance(30)

    [stored] = cluster.events(ObjectRef.pod(waiting.key))
    assert stored.event.regarding.uid == waiting.uid  # filled in from the stored pod
    assert (stored.count, stored.last) == (11, START + 300)  # patched once the 5-minute window passed
    assert cluster.event_summary() == {"nodewright": {"FailedScheduling": {"events": 1, "occurrences": 11}}}
    # The two writes (a create, a patch) count as requests, as the adapter's would.
    assert [(u.verb, u.requests) for u in cluster.usage() if u.verb == "record"] == [("record", 2)]


def test_events_last_seen_an_hour_ago_are_deleted_as_new_ones_come() -> None:
    clock = VirtualClock(START)
    cluster = InMemoryCluster(clock)
    cluster.record(disruption_blocked("ip-1", "pod default/db-0 is annotated karpenter.sh/do-not-disrupt"), START)

    clock.advance(3_700)
    cluster.record(disruption_blocked("ip-2", "PodDisruptionBudget default/web allows no disruption now"), clock.now())

    assert [e.event.regarding.name for e in cluster.events()] == ["ip-2"]
    # The first node's series is gone with its Event: its next occurrence is a new Event.
    cluster.record(disruption_blocked("ip-1", "pod default/db-0 is annotated karpenter.sh/do-not-disrupt"), clock.now())
    assert [(e.event.regarding.name, e.first) for e in cluster.events(ObjectRef.node("ip-1"))] == [
        ("ip-1", START + 3_700)
    ]
