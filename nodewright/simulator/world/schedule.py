"""The world's event loop: the scenario's events put on the virtual clock, and the run.

`_schedule` puts every event the scenario fixes in advance on the `EventLoop`: each workload's
scale events (at the times its replica schedule may change, `workload.py`), the spot
interruptions, the orphan audit 15 minutes after the last fault window, and EventBridge's
schedules of the provisioner and the consolidator. Everything else is scheduled as it happens
(instances booting, interruption signals, asynchronous invokes, due SQS messages). `run` advances
the clock one sample interval at a time to the end, then closes the books (the last audits and
the consistency checks of the mirrors against moto).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from nodewright.simulator.standins.account import launched_roles
from nodewright.simulator.standins.faults import ORPHAN_GRACE_SECONDS
from nodewright.simulator.world.blocks import CapacityBlocks
from nodewright.simulator.world.wiring import Wiring


class Clockwork(Wiring, CapacityBlocks):
    """The schedule and the run (module docstring)."""

    def _schedule(self) -> None:
        """Put the scenario's events on the virtual clock: each workload's scale events, the spot
        interruptions, the orphan audit after the last fault window and the functions' schedules.
        """
        scenario = self.scenario
        for workload in scenario.workloads:
            for t in sorted({0.0, *workload.change_times(scenario.duration)}):
                self.loop.at(scenario.start + t, partial(self._scale, workload.key, t))
        for index, interruption in enumerate(scenario.interruptions):
            self.loop.at(scenario.start + interruption.at, partial(self._interrupt, interruption, index))
        for index, failure in enumerate(scenario.node_failures):
            self.loop.at(scenario.start + failure.at, partial(self._break, failure, index))
        self._schedule_capacity_blocks()
        if scenario.faults_end is not None and scenario.faults_end + ORPHAN_GRACE_SECONDS <= scenario.duration:
            self.loop.at(scenario.start + scenario.faults_end + ORPHAN_GRACE_SECONDS, self._audit_claims)
        for name in ("provisioner", "consolidator"):
            settings = getattr(scenario, name)
            if name in self.handlers and settings.rate > 0:
                t = settings.offset
                while t < scenario.duration:
                    self.loop.at(scenario.start + t, partial(self._scheduled, name))
                    t += settings.rate

    def run(self, progress: Callable[[float], None] | None = None) -> None:
        """Run the scenario to its end; `progress` gets the virtual seconds done at each sample."""
        step = self.scenario.sampling
        t = self.scenario.start
        while t < self.end:
            t = min(self.end, t + step)
            self.loop.run_until(t)
            self._sample()
            if progress is not None:
                progress(t - self.scenario.start)
        self.lambdas.shutdown()
        self._after_step()
        if not self.faults.audit:
            late = self.scenario.faults_end is not None
            self._audit_claims(f"run ended less than {ORPHAN_GRACE_SECONDS:g} s after the last fault" if late else "")
        for name, seconds in self.lambdas.wall.items():
            self.recorder.wall[name] += seconds
        if self.store is not None:
            for problem in self.store.verify():
                self.recorder.warnings.append(f"state mirror differs from DynamoDB: {problem}")
        if self.scenario.node_roles is not None:
            self.recorder.node_roles = launched_roles(self.ec2.instance_profiles, self.account.iam)
        registry = {i.instance_id for i in self._live_instances()}
        described = {i.instance_id for i in self.cloud.described()}
        if registry != described:
            self.recorder.warnings.append(
                f"instance registry differs from DescribeInstances: {sorted(registry ^ described)[:10]}"
            )
