"""A workload's replicas over time: the expansion of a scenario's `workloads[].replicas` schedule.

A `Workload` is one Deployment, ReplicaSet or StatefulSet of the scenario: its pod template and a
schedule of `Segment`s, each holding a fixed count or a `Diurnal` curve until the next. Two questions
turn it into pod arrivals: `change_times` (when the wanted count may change; the world schedules a
scale event at each) and `replicas_at` (the count then; `kube.Deployments` creates or deletes pods
to reach it). Pure: the same schedule always gives the same times and counts.

The reader of the YAML that produces these is `workloads.py`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from nodewright.model.pod import Pod


@dataclass(frozen=True, slots=True)
class Diurnal:
    """A daily curve between `minimum` and `maximum` replicas, highest `peak` seconds after the
    scenario starts (and every `period` after that), re-evaluated every `every` seconds.
    """

    minimum: int
    maximum: int
    period: float = 86400.0
    peak: float = 43200.0
    every: float = 60.0

    def replicas(self, t: float) -> int:
        """The replica count `t` seconds after the start."""
        wave = (1 + math.cos(2 * math.pi * (t - self.peak) / self.period)) / 2
        return round(self.minimum + (self.maximum - self.minimum) * wave)


@dataclass(frozen=True, slots=True)
class Segment:
    """From `at` until the next segment: a fixed replica count, or a diurnal curve."""

    at: float
    replicas: int | None = None
    diurnal: Diurnal | None = None


@dataclass(frozen=True, slots=True)
class Workload:
    """A Deployment, ReplicaSet or StatefulSet: its pod template and its replicas over time."""

    kind: str
    namespace: str
    name: str
    template: Pod
    replicas: int
    schedule: tuple[Segment, ...] = ()

    @property
    def key(self) -> str:
        """`namespace/name`."""
        return f"{self.namespace}/{self.name}"

    def replicas_at(self, t: float) -> int:
        """How many replicas the workload wants `t` seconds after the start."""
        current: Segment | None = None
        for segment in self.schedule:
            if segment.at <= t:
                current = segment
        if current is None:
            return self.replicas
        if current.diurnal is not None:
            return current.diurnal.replicas(t)
        return current.replicas if current.replicas is not None else self.replicas

    def change_times(self, duration: float) -> list[float]:
        """When the wanted count may change: each segment's start, and each `every` of a curve."""
        times: list[float] = []
        for index, segment in enumerate(self.schedule):
            end = self.schedule[index + 1].at if index + 1 < len(self.schedule) else duration
            times.append(segment.at)
            if segment.diurnal is not None:
                t = segment.at + segment.diurnal.every
                while t < end:
                    times.append(t)
                    t += segment.diurnal.every
        return [t for t in times if 0 <= t <= duration]
