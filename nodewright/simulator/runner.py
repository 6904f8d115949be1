"""Run one scenario: moto in-process, the virtual clock patched in, the world built and run, the
report written. The entry point of `nodewright simulate` and of the simulator's tests.
"""

from __future__ import annotations

import cProfile
import os
import pstats
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nodewright.simulator.report.bill import bill
from nodewright.simulator.report.metrics import percentiles
from nodewright.simulator.report.selfcost import AwsCalls, Invocation, self_cost
from nodewright.simulator.scenario import Scenario
from nodewright.simulator.standins.cpuclock import CpuChargedClock
from nodewright.simulator.standins.lambdas import REGION
from nodewright.simulator.standins.motofast import moto_faster
from nodewright.simulator.standins.timewarp import moto_follows
from nodewright.simulator.world import HANDLERS, World, functions_importable

# Environment of the simulated functions: fake credentials for moto, and Powertools quiet (the
# decisions are recorded by the simulator's observers; EMF lines would only fill the terminal).
ENVIRONMENT = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SECURITY_TOKEN": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": REGION,
    "AWS_REGION": REGION,
    "POWERTOOLS_METRICS_DISABLED": "true",
    "POWERTOOLS_LOG_LEVEL": "WARNING",
    "POWERTOOLS_DEV": "false",
}


@dataclass
class RunResult:
    """What a run produced: the summary figures, the report's files and the world (for tests)."""

    summary: dict[str, Any]
    report_dir: Path | None
    files: list[Path] = field(default_factory=list)
    world: World | None = None


@contextmanager
def _environment(values: Mapping[str, str]) -> Iterator[None]:
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def run_scenario(
    scenario: Scenario,
    report_dir: Path | None = None,
    *,
    progress: Callable[[float], None] | None = None,
    plots: bool = True,
    profile: Path | None = None,
    on_built: Callable[[World], None] | None = None,
) -> RunResult:
    """Simulate `scenario` and, with `report_dir`, write its report there (see nodewright.simulator.report).

    `on_built(world)`, when given, is called once the world is built, before the clock runs
    (`simulate --serve` starts serving the cluster there).

    With `profile`, the run (the world and every invocation's thread) is profiled with cProfile and
    the merged statistics are written to that file (read them with `python -m pstats FILE`).
    """
    from nodewright.simulator.report import write_report  # before the run: a report needs its own version

    started = time.perf_counter()
    cpu_started = time.process_time()
    with _environment(ENVIRONMENT), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*No application metrics to publish.*")
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        import boto3
        from moto import mock_aws
        from moto.moto_api._internal import mock_random

        # The handlers are imported first, outside moto's mock, as Lambda imports them at a cold start.
        if not functions_importable():
            raise RuntimeError("the `functions` package (the Lambda handlers) is not importable")
        for module in HANDLERS.values():
            try:
                __import__(module)
            except ModuleNotFoundError:
                continue
        with mock_aws():
            mock_random.seed(scenario.seed)
            session = boto3.session.Session(region_name=REGION)
            calls = AwsCalls()
            calls.register(session.events)
            world = World(scenario, session)
            main = cProfile.Profile() if profile is not None else None
            world.lambdas.profiling = main is not None
            with moto_follows(world.clock), moto_faster():
                if main is not None:
                    main.enable()
                try:
                    build_started = time.perf_counter()
                    world.build()
                    world.recorder.wall["setup"] += time.perf_counter() - build_started
                    if on_built is not None:
                        on_built(world)
                    world.run(progress)
                finally:
                    world.lambdas.shutdown()
                    world.release()
                    if main is not None:
                        main.disable()
            if main is not None and profile is not None:
                stats = pstats.Stats(main)
                for part in world.lambdas.profiles:
                    stats.add(part)
                stats.dump_stats(str(profile))
            wall = time.perf_counter() - started
            summary = world.recorder.summary(world.end, wall)
            summary["cpu_seconds"] = round(time.process_time() - cpu_started, 2)
            summary["self_cost"] = _self_cost(world, calls)
            summary["bill"] = bill(
                scenario.consolidation,
                world.recorder.instances.values(),
                world.end,
                scenario.duration / 3600,
                on_demand_price=lambda name, zone: world.catalog.price(name, zone, "on-demand", None),
                self_cost=summary["self_cost"],
            )
            summary["invocation_cpu_seconds"] = _invocation_cpu(world)
            summary["faults"] = world.faults.summary()
            if scenario.faults:
                summary["faults"]["spot_interruptions"] = _interruptions_hit(scenario, world)
            summary["kube_events"] = world.cluster.memory.event_summary()
            if world.http is not None:
                summary["kube_api"] = world.http.usage(scenario.duration)
            if scenario.cpu_charge > 0 or world.single_flight.limited:
                summary["pending_to_capacity"] = _pending_to_capacity(world)
            summary = {
                "scenario": scenario.name,
                "description": scenario.description,
                "virtual_seconds": scenario.duration,
                "seed": scenario.seed,
                "consolidation": scenario.consolidation,
                **summary,
                "warnings": list(world.recorder.warnings),
            }
    result = RunResult(summary=summary, report_dir=report_dir, world=world)
    if report_dir is not None:
        result.files = write_report(world, summary, report_dir, plots=plots)
    return result


def _pending_to_capacity(world: World) -> dict[str, Any]:
    """The `pending_to_capacity` block of a run whose handlers' CPU moves the clock, or whose
    functions run one invocation at a time (only then is it more than the batching windows):
    seconds from pending to the capacity committed to each pod (`world.waits`), the virtual
    seconds charged for the handlers' CPU, and the throttled and dropped events.
    """
    clock = world.clock
    return {
        **world.waits.summary(),
        "cpu_charge": world.scenario.cpu_charge,
        "charged_seconds": round(clock.charged, 3) if isinstance(clock, CpuChargedClock) else 0.0,
        "throttled": dict(world.single_flight.throttled),
        "dropped": dict(world.single_flight.dropped),
    }


def _invocation_cpu(world: World) -> dict[str, dict[str, float | int]]:
    """Per function, the CPU seconds of its invocations (percentiles): a consolidator pass's cost
    on this machine, whatever else the machine was running.
    """
    by_function: dict[str, list[float]] = {}
    for invocation in (*world.lambdas.finished, *world.lambdas.running):
        by_function.setdefault(invocation.function, []).append(invocation.cpu)
    return {name: percentiles(values) for name, values in sorted(by_function.items())}


def _self_cost(world: World, calls: AwsCalls) -> dict[str, Any]:
    """The run's `self_cost` block: its invocations, AWS calls, logs and metrics, priced per month."""
    lambdas = world.lambdas
    invocations = [
        Invocation(i.function, max(0.0, (i.ended or world.end) - i.started), lambdas.memory.get(i.function, 1024))
        for i in (*lambdas.finished, *lambdas.running)
    ]
    return self_cost(
        hours=world.scenario.duration / 3600,
        invocations=invocations,
        calls=calls,
        decisions={
            name: observer.decisions for name, observer in world.observers.items() if world.invocations.deployed(name)
        },
        metrics={
            name: observer.metrics for name, observer in world.observers.items() if world.invocations.deployed(name)
        },
        compute={name: (seconds, lambdas.memory.get(name, 1024)) for name, seconds in lambdas.wall.items()},
    )


def _interruptions_hit(scenario: Scenario, world: World) -> dict[str, int]:
    """Spot interruptions the scenario asked for (entries by count) and the nodes they hit: an
    entry finds fewer spot nodes running than it asks for, or none.
    """
    return {
        "asked": sum(entry.count or 0 for entry in scenario.interruptions),
        "hit": len(world.recorder.interruptions),
    }
