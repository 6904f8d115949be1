"""Capacity blocks ending, as EC2 ends them: 40 minutes before a block's end EC2 puts its
"Capacity Block Reservation Expiration Warning" on EventBridge (the stack's rule routes it to the
interruption queue), and 30 minutes before the end it terminates whatever still runs in the block
(pods still on those nodes are lost). The counts and launches are `standins/reservations.py`'s.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import partial

from nodewright.engine.interruption.rules import CAPACITY_BLOCK_EXPIRATION_WARNING
from nodewright.engine.reservations import EXPIRY_LEAD_SECONDS, reclaim_time
from nodewright.simulator.report.metrics import Recorder
from nodewright.simulator.scenario import Scenario
from nodewright.simulator.scenario.model import CapacityReservationSpec
from nodewright.simulator.standins.ec2 import SimulatedEc2
from nodewright.simulator.standins.lambdas import ACCOUNT, REGION, EventLoop
from nodewright.simulator.world.signals import Ec2Signals

BLOCK_RECLAIMED = "capacity-block-reclaimed"


class CapacityBlocks:
    """The end of each capacity block of the scenario (module docstring)."""

    def __init__(
        self, scenario: Scenario, loop: EventLoop, ec2: SimulatedEc2, signals: Ec2Signals, recorder: Recorder
    ) -> None:
        self._scenario = scenario
        self._loop = loop
        self._ec2 = ec2
        self._signals = signals
        self._recorder = recorder

    def schedule(self) -> None:
        """Put each block's expiration warning and EC2's reclaim on the virtual clock."""
        for spec in self._scenario.capacity_reservations:
            if spec.reservation_type != "capacity-block" or spec.end is None:
                continue
            end = self._scenario.start + spec.end
            self._loop.at(max(self._scenario.start, end - EXPIRY_LEAD_SECONDS), partial(self._warning, spec, end))
            self._loop.at(reclaim_time(end), partial(self._reclaim, spec))

    def _warning(self, spec: CapacityReservationSpec, end: float) -> None:
        owner = spec.owner_id or ACCOUNT
        self._signals.put_event(
            CAPACITY_BLOCK_EXPIRATION_WARNING,
            {
                "capacity-reservation-id": spec.id,
                "end-date": datetime.fromtimestamp(end, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            },
            f"arn:aws:ec2:{REGION}:{owner}:capacity-reservation/{spec.id}",
        )

    def _reclaim(self, spec: CapacityReservationSpec) -> None:
        if self._ec2.reservations is None:
            return
        left = self._ec2.reservations.instances(spec.id)
        if not left:
            return
        self._recorder.warnings.append(f"capacity block {spec.id}: EC2 reclaimed {len(left)} instance(s) still in it")
        self._ec2.reclaim(left, BLOCK_RECLAIMED)
