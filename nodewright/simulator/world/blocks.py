"""Capacity blocks ending, as EC2 ends them: 40 minutes before a block's end EC2 puts its
"Capacity Block Reservation Expiration Warning" on EventBridge (the stack's rule routes it to the
interruption queue), and 30 minutes before the end it terminates whatever still runs in the block
(pods still on those nodes are lost). The counts and launches are `reservations.py`'s.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from functools import partial

from nodewright.engine.interruption.rules import CAPACITY_BLOCK_EXPIRATION_WARNING, SOURCE_EC2
from nodewright.engine.reservations import EXPIRY_LEAD_SECONDS, reclaim_time
from nodewright.simulator.scenario.model import CapacityReservationSpec
from nodewright.simulator.standins.lambdas import ACCOUNT, REGION
from nodewright.simulator.world.state import WorldState

BLOCK_RECLAIMED = "capacity-block-reclaimed"


class CapacityBlocks(WorldState):
    """The end of each capacity block of the scenario (module docstring)."""

    def _schedule_capacity_blocks(self) -> None:
        """Put each block's expiration warning and EC2's reclaim on the virtual clock."""
        for spec in self.scenario.capacity_reservations:
            if spec.reservation_type != "capacity-block" or spec.end is None:
                continue
            end = self.scenario.start + spec.end
            self.loop.at(max(self.scenario.start, end - EXPIRY_LEAD_SECONDS), partial(self._block_warning, spec, end))
            self.loop.at(reclaim_time(end), partial(self._block_reclaim, spec))

    def _block_warning(self, spec: CapacityReservationSpec, end: float) -> None:
        owner = spec.owner_id or ACCOUNT
        self.account.events.put_events(
            Entries=[
                {
                    "Time": datetime.fromtimestamp(self.clock.now(), UTC),
                    "Source": SOURCE_EC2,
                    "DetailType": CAPACITY_BLOCK_EXPIRATION_WARNING,
                    "Detail": json.dumps(
                        {
                            "capacity-reservation-id": spec.id,
                            "end-date": datetime.fromtimestamp(end, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                        }
                    ),
                    "Resources": [f"arn:aws:ec2:{REGION}:{owner}:capacity-reservation/{spec.id}"],
                }
            ]
        )

    def _block_reclaim(self, spec: CapacityReservationSpec) -> None:
        if self.ec2.reservations is None:
            return
        left = self.ec2.reservations.instances(spec.id)
        if not left:
            return
        self.recorder.warnings.append(f"capacity block {spec.id}: EC2 reclaimed {len(left)} instance(s) still in it")
        self._reason = BLOCK_RECLAIMED
        try:
            self.ec2.terminate_instances(InstanceIds=left)
        finally:
            self._reason = ""
