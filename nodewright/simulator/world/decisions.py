"""What the functions decided, read from their observers after every step into the recorder:
launches (and the pods they were for), capacity errors, consolidation replacements (audited).
"""

from __future__ import annotations

from collections.abc import Mapping

from nodewright.controllers.observe import RecordingObserver
from nodewright.ports import Clock
from nodewright.simulator.report.metrics import Recorder
from nodewright.simulator.world.audits import Audits


class Decisions:
    """Reads each function's new decisions once (module docstring)."""

    def __init__(
        self, observers: Mapping[str, RecordingObserver], clock: Clock, recorder: Recorder, audits: Audits
    ) -> None:
        self._observers = observers
        self._clock = clock
        self._recorder = recorder
        self._audits = audits
        self._read: dict[str, int] = dict.fromkeys(observers, 0)  # decisions of each observer already read

    def read(self) -> None:
        """Account for the decisions made since the last read."""
        for name, observer in self._observers.items():
            decisions = observer.decisions
            start = self._read[name]
            if start == len(decisions):
                continue
            for decision in decisions[start:]:
                kind = decision.get("decision")
                if kind == "launch":
                    pods = decision.get("pods")
                    keys = [str(p) for p in pods] if isinstance(pods, list) else []
                    at = decision.get("at")
                    self._recorder.launched_for(keys, at if isinstance(at, float) else self._clock.now())
                    if name == "provisioner" and keys and all(self._audits.on_consolidated_node(k) for k in keys):
                        self._recorder.double_launches += 1
                elif kind == "capacity-error":
                    self._recorder.capacity_errors.append((self._clock.now(), str(decision.get("offerings"))))
                elif kind == "disruption-launched":
                    self._audits.audit_replace(decision)
            self._read[name] = len(decisions)
