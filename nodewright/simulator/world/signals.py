"""What EC2 itself puts on EventBridge in a simulation: instance signals (spot interruption
warnings, rebalance recommendations, state changes) and capacity block expiration warnings, at
the virtual time. The stack's rules route them to the interruption queue.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from nodewright.engine.interruption.rules import SOURCE_EC2
from nodewright.ports import Clock
from nodewright.simulator.standins.account import instance_arn


class Ec2Signals:
    """EC2's events on the simulated account's EventBridge (module docstring)."""

    def __init__(self, events: Any, clock: Clock) -> None:
        self._events = events  # moto's EventBridge client
        self._clock = clock

    def put(self, detail_type: str, instance_id: str, detail: Mapping[str, Any]) -> None:
        """An event about one instance (its ARN as the event's resource)."""
        self.put_event(detail_type, detail, instance_arn(instance_id))

    def put_event(self, detail_type: str, detail: Mapping[str, Any], resource: str) -> None:
        """An event of EC2's about `resource` (an ARN), stamped now."""
        self._events.put_events(
            Entries=[
                {
                    "Time": datetime.fromtimestamp(self._clock.now(), UTC),
                    "Source": SOURCE_EC2,
                    "DetailType": detail_type,
                    "Detail": json.dumps(dict(detail)),
                    "Resources": [resource],
                }
            ]
        )
