"""The crash harness of bench/crash_points.py, a sample of it in CI (the exhaustive run is the
benchmark, figures in the README).

Real: the interruption controller and the provisioner over the in-memory cluster, cloud and state
store, the queue's redelivery at the deployed visibility timeout. Observed: each run's outcome
(pods lost, PDB violation seconds, duplicates, orphans, pending pods, dead letters).
"""

from __future__ import annotations

from bench.crash_points import KILL, LOST, START, VISIBILITY, CrashWorld, pairs, provisioner_run, run, singles


def test_without_a_crash_the_warning_drains_the_node_in_time_and_every_write_is_counted() -> None:
    world = CrashWorld({})
    outcome = world.run()
    assert outcome.converged, outcome
    assert outcome.crashes == 0
    # The intent comes first: the drain record and the chain's next continuation, then the rest.
    assert world.points.names[:2] == ["store.save_drain", "continuations.send"]
    assert {"cluster.cordon", "cluster.evict", "cloud.terminate", "provisioner.request"} <= set(world.points.names)


def test_a_crash_at_any_single_write_loses_no_pod_and_leaves_nothing_behind() -> None:
    writes = run({}).writes
    for case in singles(writes):
        outcome = run({p.ordinal: p.mode for p in case})
        assert outcome.crashes >= 1, case
        assert outcome.converged, (case, outcome)


def test_a_sample_of_crash_pairs_converges() -> None:
    # The first crash at each of the first eight writes (the intent, the cordon, the first
    # evictions), the second at every seventeenth write after it (the benchmark runs them all).
    sample = [(first, second) for first, second in pairs(8) if first.ordinal <= 8 and second.ordinal % 17 == 0]
    assert len(sample) > 50
    for first, second in sample:
        outcome = run({first.ordinal: first.mode, second.ordinal: second.mode})
        assert outcome.crashes >= 1, (first, second)
        assert outcome.lost == 0, (first, second, outcome)
        assert outcome.converged, (first, second, outcome)


def test_a_crash_before_the_intent_is_recovered_by_redelivery_after_the_visibility_timeout() -> None:
    for mode in (KILL, LOST):
        world = CrashWorld({1: mode})
        outcome = world.run()
        assert outcome.converged, outcome
        cordoned = world.cluster.changes_of("node_cordoned")
        assert [c.at - START for c in cordoned] == [VISIBILITY], mode


def test_the_provisioner_killed_at_any_write_or_pair_of_writes_launches_everything_once() -> None:
    writes = provisioner_run({}).writes
    assert writes >= 4  # two claims recorded, launched, and their launches recorded
    cases = [*singles(writes), *(pair for pair in pairs(writes, provisioner_run) if pair[1].ordinal % 6 == 0)]
    for case in cases:
        outcome = provisioner_run({p.ordinal: p.mode for p in case})
        assert outcome.crashes >= 1, case
        assert outcome.converged, (case, outcome)
