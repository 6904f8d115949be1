"""Pods arriving at given times, as a scenario's workloads. Pure.

An arrival pattern is a list of (seconds after the start, pods arriving then) and the pod shapes
(CPU, memory requests) the pods cycle through: the i-th pod of the pattern has shape i modulo
their number. `arrival_workloads` turns it into one Deployment per shape, whose replica schedule
steps up by that shape's share of each arrival (`workload.Segment`), so the world's Deployments
create exactly those pods at those times. What the latency benchmark drives the world with
(`bench.provisioner_latency`); a scenario file says the same with `replicas` schedules.
"""

from __future__ import annotations

from collections.abc import Sequence

from nodewright.model.pod import Pod
from nodewright.model.resources import Resources
from nodewright.simulator.scenario.workload import Segment, Workload


def arrival_workloads(
    name: str, arrivals: Sequence[tuple[float, int]], shapes: Sequence[tuple[str, str]], namespace: str = "default"
) -> tuple[Workload, ...]:
    """One Deployment per shape (`name-0`, `name-1`, ...), each scaled up at the arrival times.

    Raises ValueError for no shapes, a negative time or count, or times out of order.
    """
    if not shapes:
        raise ValueError(f"arrival pattern {name!r}: at least one pod shape is needed")
    last = 0.0
    for at, count in arrivals:
        if at < last or count < 0:
            raise ValueError(f"arrival pattern {name!r}: ({at}, {count}) is out of order or negative")
        last = at
    counts = [0] * len(shapes)
    steps: list[list[Segment]] = [[Segment(0.0, 0)] for _ in shapes]
    first = 0
    for at, count in arrivals:
        changed = set()
        for i in range(first, first + count):
            counts[i % len(shapes)] += 1
            changed.add(i % len(shapes))
        first += count
        for shape in sorted(changed):
            schedule = steps[shape]
            if schedule[-1].at == at:
                schedule[-1] = Segment(at, counts[shape])
            else:
                schedule.append(Segment(at, counts[shape]))
    workloads = []
    for index, (cpu, memory) in enumerate(shapes):
        owner = f"{name}-{index}"
        template = Pod(
            namespace=namespace,
            name=f"{owner}-template",
            labels={"app": name},
            requests=Resources.of(cpu=cpu, memory=memory, pods=1),
            owner_kind="ReplicaSet",
            owner_name=owner,
        )
        workloads.append(Workload("Deployment", namespace, owner, template, 0, tuple(steps[index])))
    return tuple(workloads)
