"""The consolidator's crash harness (bench/crash_consolidator.py), a sample of it in CI (the
exhaustive run is the benchmark, figures in the README).

Real: the consolidator (and the provisioner as its launcher and on its own minute) over the
in-memory cluster, cloud and state store, invoked on the deployed schedule; a killed invocation
does nothing more and its lease stays held. Observed: each run's outcome (pods lost, PDB violation
seconds, duplicates, orphans, pending pods, nodes left cordoned, command records left, the hourly
price the cluster ends at).
"""

from __future__ import annotations

import pytest

from bench.crash_consolidator import ConsolidatorCrashWorld, pairs, run
from bench.harness.crash import KILL, LOST, singles
from nodewright.controllers.consolidationoptions import ConsolidationReport
from nodewright.controllers.disruption import Consolidator
from nodewright.model.command import CommandRecord

STEPS = {
    "store.save_command",
    "store.create_claim",
    "cloud.launch",
    "cluster.cordon",
    "cluster.evict",
    "cloud.terminate",
    "cluster.delete_node",
    "store.delete_claim",
    "store.delete_command",
}


def test_without_a_crash_the_commands_replace_and_delete_and_every_step_is_an_effect_point() -> None:
    world = ConsolidatorCrashWorld({})
    outcome = world.run()
    assert outcome.crashes == 0
    assert outcome.converged(outcome.price), outcome
    # Consolidated: the empty m5.xlarge deleted, the m5.2xlarge replaced by an m5.large.
    assert outcome.price == pytest.approx(0.096)
    assert world.cluster.get_node("big") is None
    assert world.cluster.get_node("idle") is None
    assert set(outcome.names[: outcome.effects]) >= STEPS
    # The replacement's name is recorded before its claim, its claim before CreateFleet.
    steps = outcome.names[: outcome.effects]
    launch = steps.index("cloud.launch")
    assert steps[launch - 1] == "store.create_claim"
    assert "store.save_command" in steps[:launch]


def test_a_kill_at_any_step_of_a_command_converges() -> None:
    clean = run({})
    steps = [
        case
        for case in singles(clean.effects)
        if clean.names[case[0].ordinal - 1] != "cluster.record"  # the Events: every 3rd, below
        or case[0].ordinal % 3 == 0
    ]
    assert len(steps) > 60
    for case in steps:
        outcome = run({p.ordinal: p.mode for p in case})
        assert outcome.crashes >= 1, case
        assert outcome.converged(clean.price), (case, outcome)


def test_a_kill_in_the_delete_case_and_a_sample_of_pairs_converge() -> None:
    clean = run({}, "delete")
    assert clean.converged(clean.price), clean
    for case in singles(clean.effects)[::5]:
        outcome = run({p.ordinal: p.mode for p in case}, "delete")
        assert outcome.converged(clean.price), (case, outcome)
    replace = run({})
    # The first kill as the replacement's name is recorded, at CreateFleet, at the big node's
    # cordon; the second at every eleventh point after it (the benchmark runs them all).
    firsts = (3, replace.names.index("cloud.launch") + 1, replace.names.index("cluster.cordon", 20) + 1)
    sample = [pair for pair in pairs(replace.effects, firsts=firsts) if pair[1].ordinal % 11 == 0]
    assert len(sample) > 10
    for first, second in sample:
        outcome = run({first.ordinal: first.mode, second.ordinal: second.mode})
        assert outcome.crashes == 2, (first, second)
        assert outcome.converged(replace.price), (first, second, outcome)


def test_a_killed_invocation_keeps_its_lease_and_a_fresh_one_resumes_its_command() -> None:
    clean = run({})
    cordon = clean.names.index("cluster.cordon", clean.names.index("cloud.launch")) + 1  # the big node's
    for mode in (KILL, LOST):
        world = ConsolidatorCrashWorld({cordon: mode})
        outcome = world.run()
        assert outcome.crashes == 1
        # The dead invocation released nothing: the next one was refused the lease (it wrote
        # nothing more), a later one took it once it expired and finished the command.
        after = world.invocation.names[cordon : cordon + 2]
        assert after == ["store.acquire_lease", "store.acquire_lease"], after
        assert outcome.converged(clean.price), (mode, outcome)


def test_the_harness_sees_a_resume_that_skips_the_drain(monkeypatch: pytest.MonkeyPatch) -> None:
    # A checker that cannot fail checks nothing: a consolidator whose resumed drain jumps to the
    # termination loses the pods still on the node, and the harness says so.
    clean = run({})
    drain = clean.names.index("cluster.evict")
    advance = Consolidator._advance
    followed: set[int] = set()  # the consolidators that saw the command before its drain

    def skips_the_drain(self: Consolidator, record: CommandRecord, report: ConsolidationReport) -> float:
        if record.state != "draining":
            followed.add(id(self))
        elif id(self) not in followed and record.replacements:  # a fresh container resumes the drain
            self._terminate(record, report)
            return 0.0
        return advance(self, record, report)

    monkeypatch.setattr(Consolidator, "_advance", skips_the_drain)
    outcome = run({drain + 1: LOST})
    assert outcome.lost > 0
    assert not outcome.converged(clean.price)
