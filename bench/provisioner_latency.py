"""Provisioner latency: from a pod becoming pending to its CreateFleet call (`python -m bench.provisioner_latency`).

A thin driver over the simulator's world (`nodewright.simulator`): for each arrival pattern it
builds a scenario and runs it with `run_scenario`, then prints per pattern the median, p99 and
max wait and the CPU seconds per invocation. Goal (issue 4): median <= 3 s, p99 <= 12 s.

The model is the simulator's, and what is real is what `nodewright simulate` runs:

* Functions: the real provisioner handler and controller with its deployed `ProvisionerOptions`
  (unless `--option name=value` overrides one), over the moto account (DynamoDB state table,
  EC2 CreateFleet) and the in-memory cluster; consolidation is off.
* Time: the simulator's CPU-charged clock (`nodewright/simulator/standins/cpuclock.py`, scenario
  key `cpu_charge`): the virtual clock also advances by the CPU seconds the handler's thread
  spends (times `--cpu-scale`; 1.0 = this machine, ~1.7 = a 1,024 MB Lambda), so a slow solve
  delays the pods behind it. The world's own work (creating pods, registering nodes, binding) is
  not charged; the handler's calls into moto are (they stand in for the calls' latency).
* Schedule: an EventBridge tick every `--rate` s (60), the function's timeout `--timeout` s
  (68), the loop stopping `deadline_margin` (10 s) before it; reserved concurrency 1 with
  Lambda's throttle-and-retry (scenario `single_flight`, `world.invocations.SingleFlight`): a
  tick that finds the previous invocation still running is retried 1, 2, 4, 8, ... s later
  until the event is older than one tick, then dropped.
* Pods: the pattern's arrivals are the scenario's workloads (`scenario/arrivals.py`: one
  Deployment per pod shape, scaled up at the arrival times); the simulator's kube-scheduler binds
  a new pod to a node with room (`bound`, not measured) or marks it unschedulable.
* Nodes: a launched instance registers as a Ready node `--boot-seconds` (40) after CreateFleet.
* Instance types: the benchmarks' 400 (`bench/harness/instance_types.py`), as the NodePool's
  allowed instance types, from the simulator's catalog; spot and on-demand.

A pod's wait is the simulator's `pending_to_capacity` measure (`world/waits.py`): it ends at the
CreateFleet call for a claim holding it, its nomination onto a node launched but not registered,
or its binding, whichever comes first; `phant` counts nominations onto claims whose node had
registered, and pods with no commitment by the end are `unserved`.

Patterns (times from the first invocation's start; every pattern is deterministic):
  single        one pod needing its own node (3 cpu) every 97.31 s, 30 times (phases vary)
  burst-100     100 pods at once, 8 times, 137.43 s apart
  burst-1000    1,000 pods at once, 4 times, 211.57 s apart
  ramp-1000     a Deployment scaled to 1,000 replicas, created at 50 pods/s for 20 s
  poisson-1     a Poisson stream of 1 pod/s for 10 minutes
  poisson-5     a Poisson stream of 5 pods/s for 10 minutes
  stream-0.3s   one pod every 0.3 s for 10 minutes (never a 1 s idle gap)
  mid-burst     bursts of 100 in the middle of an invocation (30 s), during the pass that handles
                them (30.3 s), late (55 s), just before the loop stops (79.5 s) and between
                invocations (85 s)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.harness.instance_types import benchmark_types, machine
from nodewright.controllers.provisionoptions import ProvisionerOptions
from nodewright.inmemory.timeline import Waits
from nodewright.simulator.runner import run_scenario
from nodewright.simulator.scenario import FunctionSettings, Scenario, parse_scenario
from nodewright.simulator.scenario.arrivals import arrival_workloads

GOAL_MEDIAN = 3.0
GOAL_P99 = 12.0
SHAPES = (("250m", "512Mi"), ("500m", "1Gi"), ("1", "2Gi"), ("2", "4Gi"), ("500m", "4Gi"), ("1", "1Gi"))
DRAIN_SECONDS = 200.0


# --- arrival patterns ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Pattern:
    """Arrivals: (seconds after the first invocation starts, pods arriving then), and the shapes."""

    name: str
    arrivals: tuple[tuple[float, int], ...]
    shapes: tuple[tuple[str, str], ...] = SHAPES

    @property
    def pods(self) -> int:
        return sum(count for _, count in self.arrivals)


def _poisson(rate: float, seconds: float, seed: int, start: float = 5.0) -> tuple[tuple[float, int], ...]:
    rng = random.Random(seed)
    out: list[tuple[float, int]] = []
    t = start + rng.expovariate(rate)
    while t < start + seconds:
        out.append((round(t, 3), 1))
        t += rng.expovariate(rate)
    return tuple(out)


def patterns(quick: bool = False) -> dict[str, Pattern]:
    """Every pattern by name (`quick`: fewer repetitions and a 2-minute stream, for smoke tests)."""
    reps = 2 if quick else 0
    minutes = 2.0 if quick else 10.0
    found = [
        # Repetitions at odd intervals, so they meet the polls and the schedule at varied phases.
        Pattern("single", tuple((10.0 + 97.31 * i, 1) for i in range(reps * 2 or 30)), (("3", "6Gi"),)),
        Pattern("burst-100", tuple((10.0 + 137.43 * i, 100) for i in range(reps or 8))),
        Pattern("burst-1000", tuple((10.0 + 211.57 * i, 1000) for i in range(reps or 4))),
        Pattern("ramp-1000", tuple((10.0 + i / 50.0, 1) for i in range(1000))),
        Pattern("poisson-1", _poisson(1.0, 60 * minutes, seed=1)),
        Pattern("poisson-5", _poisson(5.0, 60 * minutes, seed=5)),
        Pattern("stream-0.3s", tuple((5.0 + 0.3 * i, 1) for i in range(int(60 * minutes / 0.3)))),
        Pattern("mid-burst", ((30.0, 100), (30.3, 100), (55.0, 100), (79.5, 100), (85.0, 100))),
    ]
    return {p.name: p for p in found}


# --- the scenario of one pattern ------------------------------------------------------------------


@dataclass
class Settings:
    """How the world and the schedule behave (see the module docstring)."""

    rate: float = 60.0
    timeout: float = 68.0
    boot_seconds: float = 40.0
    cpu_scale: float = 1.0
    options: dict[str, float] = field(default_factory=dict)


def _config(types: Sequence[str]) -> str:
    """The NodePool (the benchmark's instance types, spot and on-demand) and its EC2NodeClass."""
    names = ", ".join(types)
    return f"""
nodepools:
  - apiVersion: karpenter.sh/v1
    kind: NodePool
    metadata: {{name: default}}
    spec:
      template:
        spec:
          nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}
          requirements:
            - {{key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}}
            - {{key: node.kubernetes.io/instance-type, operator: In, values: [{names}]}}
nodeclasses:
  - apiVersion: karpenter.k8s.aws/v1
    kind: EC2NodeClass
    metadata: {{name: default}}
    spec:
      amiSelectorTerms: [{{alias: al2023@latest}}]
      role: KarpenterNodeRole-latency
      subnetSelectorTerms: [{{tags: {{karpenter.sh/discovery: latency}}}}]
      securityGroupSelectorTerms: [{{tags: {{karpenter.sh/discovery: latency}}}}]
"""


def scenario_for(pattern: Pattern, types: Sequence[str], settings: Settings) -> Scenario:
    """The simulator's scenario of one pattern: its arrivals as workloads, the provisioner alone
    on its schedule with reserved concurrency 1, the CPU-charged clock.
    """
    duration = max(at for at, _ in pattern.arrivals) + DRAIN_SECONDS
    text = f"name: latency-{pattern.name}\nduration: {duration:.3f}s\nconsolidation: off\n" + _config(types)
    base = parse_scenario(text, Path("latency.yaml"))
    return dataclasses.replace(
        base,
        description=f"provisioner latency, pattern {pattern.name}",
        boot_delay=settings.boot_seconds,
        workloads=arrival_workloads(pattern.name, pattern.arrivals, pattern.shapes),
        provisioner=FunctionSettings(
            rate=settings.rate, timeout=settings.timeout, memory_mb=base.provisioner.memory_mb, single_flight=True
        ),
        cpu_charge=settings.cpu_scale,
        provisioner_options=tuple(sorted(settings.options.items())),
    )


# --- one pattern ----------------------------------------------------------------------------------


@dataclass
class Result:
    """What one pattern measured."""

    pattern: str
    pods: int
    waits: Waits
    bound: int
    unserved: int
    phantom: int
    invocations: int
    throttled: int
    passes: int
    fleets: int
    hourly_cost: float
    cpu_per_invocation: float
    cpu_max: float
    charged_seconds: float
    coverage: float
    wall_seconds: float

    def as_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["waits"] = dataclasses.asdict(self.waits)
        return out


def run_pattern(pattern: Pattern, types: Sequence[str], settings: Settings) -> Result:
    """Run the pattern's scenario in the simulator's world; read its `pending_to_capacity` block."""
    wall = time.perf_counter()
    run = run_scenario(scenario_for(pattern, types, settings), plots=False)
    world = run.world
    assert world is not None
    block = run.summary["pending_to_capacity"]
    observer = world.observers["provisioner"]
    invocations = [i for i in (*world.lambdas.finished, *world.lambdas.running) if i.function == "provisioner"]
    busy = sum(max(0.0, (i.ended or world.end) - i.started) for i in invocations)
    cpu = [i.cpu for i in invocations]
    return Result(
        pattern=pattern.name,
        pods=block["pods"],
        waits=Waits(block["waited"], block["p50"], block["p99"], block["max"]),
        bound=block["bound_at_once"],
        unserved=block["unserved"],
        phantom=block["phantom"],
        invocations=len(invocations),
        throttled=block["throttled"].get("provisioner", 0),
        passes=sum(1 for m in observer.metrics if m[0] == "PendingPods"),
        fleets=len(observer.of("launch")),
        hourly_cost=round(sum(r.price for r in world.recorder.instances.values()), 4),
        cpu_per_invocation=statistics.median(cpu) if cpu else 0.0,
        cpu_max=max(cpu, default=0.0),
        charged_seconds=block["charged_seconds"],
        coverage=busy / max(1.0, world.scenario.duration),
        wall_seconds=time.perf_counter() - wall,
    )


# --- the command ----------------------------------------------------------------------------------


def _option(text: str) -> tuple[str, float]:
    name, sep, value = text.partition("=")
    known = {f.name for f in dataclasses.fields(ProvisionerOptions)}
    if not sep or name not in known:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE with NAME one of {', '.join(sorted(known))}")
    return name, float(value)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench provisioner_latency", description=__doc__.split("\n")[0])
    p.add_argument("--pattern", action="append", help="run only this pattern (repeatable)")
    p.add_argument("--quick", action="store_true", help="fewer repetitions and 2-minute streams")
    p.add_argument("--rate", type=float, default=60.0, help="schedule period, seconds (infra: 1 minute)")
    p.add_argument("--timeout", type=float, default=68.0, help="Lambda timeout, seconds (infra: 68)")
    p.add_argument("--boot-seconds", type=float, default=40.0, help="CreateFleet to Ready node")
    p.add_argument("--cpu-scale", type=float, default=1.0, help="virtual seconds per CPU second (0: free)")
    p.add_argument("--option", type=_option, action="append", default=[], help="ProvisionerOptions NAME=VALUE")
    p.add_argument("--json", help="also write the results to this file")
    return p


def _row(r: Result) -> str:
    w = r.waits
    ok = w.count and w.median <= GOAL_MEDIAN and w.p99 <= GOAL_P99 and not r.unserved
    return (
        f"{r.pattern:12s} {r.pods:6d} {w.count:6d} {r.bound:5d} {r.unserved:5d} {r.phantom:5d} "
        f"{w.median:7.2f} {w.p99:7.2f} {w.max:7.2f}  {r.invocations:5d} {r.throttled:5d} {r.passes:6d} "
        f"{r.fleets:6d} {r.hourly_cost:8.2f} {r.cpu_per_invocation:7.3f} {r.cpu_max:7.3f} {r.coverage:6.0%}  "
        f"{'ok' if ok else 'MISSED'}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    settings = Settings(
        rate=args.rate,
        timeout=args.timeout,
        boot_seconds=args.boot_seconds,
        cpu_scale=args.cpu_scale,
        options=dict(args.option),
    )
    chosen = patterns(args.quick)
    names = args.pattern or list(chosen)
    unknown = [n for n in names if n not in chosen]
    if unknown:
        print(f"unknown pattern(s) {', '.join(unknown)}; known: {', '.join(chosen)}", file=sys.stderr)
        return 2
    info = machine()
    types = [t.name for t in benchmark_types()]
    options = ProvisionerOptions(**settings.options)  # type: ignore[arg-type]
    print(f"machine: {info['cpu']}, {info['cores']} cores, Python {info['python']} ({info['platform']})")
    print(
        f"schedule every {settings.rate:g} s, timeout {settings.timeout:g} s, margin {options.deadline_margin:g} s; "
        f"poll {options.poll:g} s, batch idle {options.batch_idle:g} s / max {options.batch_max:g} s"
        + "".join(f", {k}={v:g}" for k, v in settings.options.items())
    )
    print(
        f"{len(types)} instance types; node ready {settings.boot_seconds:g} s after CreateFleet; "
        f"CPU charged x{settings.cpu_scale:g}; the simulator's world (moto, the in-memory cluster)"
    )
    print(f"goal: median <= {GOAL_MEDIAN:g} s, p99 <= {GOAL_P99:g} s from pending to CreateFleet")
    print()
    print(
        f"{'pattern':12s} {'pods':>6s} {'waited':>6s} {'bound':>5s} {'unsrv':>5s} {'phant':>5s} "
        f"{'median':>7s} {'p99':>7s} {'max':>7s}  {'invoc':>5s} {'thrtl':>5s} {'passes':>6s} {'fleets':>6s} "
        f"{'$/h':>8s} {'cpu/inv':>7s} {'cpu max':>7s} {'cover':>6s}"
    )
    results = []
    for name in names:
        result = run_pattern(chosen[name], types, settings)
        results.append(result)
        print(_row(result), flush=True)
    print()
    print(
        "waited: pods that were pending (bound: placed on a node with room at once, not measured); "
        "median/p99/max: seconds from pending to CreateFleet (or nomination onto a launched node, or "
        "binding); unsrv: never served; phant: pods nominated onto a claim whose node had registered; "
        "invoc: provisioner invocations; thrtl: scheduled events throttled (retried or dropped); "
        "passes: provisioning passes; fleets: CreateFleet calls; $/h: price of the instances launched; "
        "cpu/inv: CPU seconds of one invocation (median, max); cover: share of time an invocation was running."
    )
    if args.json:
        document = {
            "machine": info,
            "settings": dataclasses.asdict(settings),
            "goal": {"median": GOAL_MEDIAN, "p99": GOAL_P99},
            "results": [r.as_dict() for r in results],
        }
        Path(args.json).write_text(json.dumps(document, indent=2) + "\n")
    missed = [r for r in results if r.waits.median > GOAL_MEDIAN or r.waits.p99 > GOAL_P99 or r.unserved]
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
