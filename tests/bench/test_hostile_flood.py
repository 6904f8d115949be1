"""The flood, CI-sized: 300 forged, stale and duplicate messages with three real events among them,
through the real interruption handler over moto (EC2, DynamoDB, SQS, EventBridge) and the API
emulator, in both layouts (`python -m bench.hostile_flood` delivers the issue's 10,000).

Observed: every message accounted for by kind (foreign, dropped, rejected, repeat), no record
handed back, the targeted node untouched, each real event acted on; with one queue a real event
waits for the whole flood ahead of it, with the priority queue it waits for nothing but its own
invocation, however deep the flood on the main queue is.
"""

from __future__ import annotations

import pytest

from bench import hostile_flood

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")


def _accounted_for(result: hostile_flood.Result) -> None:
    assert result.problems == []
    assert result.failed == 0
    assert result.expected == {"foreign": 119, "dropped": 88, "rejected": 30, "repeats": 60}
    assert result.counts["ForeignInstanceMessages"] == 119
    assert result.counts["MessagesDropped"] == 88
    assert result.counts["ContinuationsRejected"] == 30
    # 300 sent, 3 of them real: the 60 repeats and the 30 continuations are not received as events.
    assert result.counts["InterruptionsReceived"] == 300 - 60 - 30
    assert len(result.real) == 3
    assert "OK: nothing lost" in hostile_flood.report(result)


def test_with_one_queue_a_real_event_waits_for_the_flood_ahead_of_it() -> None:
    result = hostile_flood.run(300, layout=hostile_flood.ONE_QUEUE)

    _accounted_for(result)
    assert [r.ahead for r in result.real] == [75, 150, 225]  # messages ahead of each in the one queue
    assert [r.batch for r in result.real] == [7, 15, 22]  # so it waits for that many invocations first
    one, ten = result.waits(1), result.waits(10)
    assert one == sorted(one)  # the deeper, the longer
    assert all(t < o for t, o in zip(ten, one, strict=True))


def test_with_the_priority_queue_real_events_wait_for_nothing_whatever_the_flood_depth() -> None:
    result = hostile_flood.run(300, layout=hostile_flood.PRIORITY)

    _accounted_for(result)
    assert {r.queue for r in result.real} == {hostile_flood.PRIORITY_QUEUE}
    # They arrived while the main queue still held three different depths of forged messages ...
    depths = [r.flood_queued for r in result.real]
    assert depths == sorted(depths, reverse=True)
    assert depths[-1] > 0
    # ... and each was received at once, in its own invocation, nothing ahead of it: its wait is
    # that invocation's time.
    assert [r.ahead for r in result.real] == [0, 0, 0]
    assert [r.batch for r in result.real] == [0, 1, 2]
    for real in result.real:
        assert real.waited == pytest.approx(real.invocation_seconds)


def test_parallel_consumers_take_batches_in_queue_order() -> None:
    assert hostile_flood.fifo_finish_times([1.0, 1.0, 1.0, 1.0], 1) == [1.0, 2.0, 3.0, 4.0]
    assert hostile_flood.fifo_finish_times([1.0, 3.0, 1.0, 1.0], 2) == [1.0, 3.0, 2.0, 3.0]
