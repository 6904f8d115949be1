"""The CPU-charged clock, and Lambda's reserved concurrency of 1 with its retries of throttled
events, on the simulator's event loop and Lambda runtime (real threads, real handoff).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from nodewright.inmemory.clock import VirtualClock
from nodewright.simulator.scenario import FunctionSettings, Scenario
from nodewright.simulator.standins.cpuclock import CpuChargedClock
from nodewright.simulator.standins.lambdas import EventLoop, Lambdas
from nodewright.simulator.world.invocations import SingleFlight

START = 1_800_000_000.0


def _spin(seconds: float) -> None:
    started = time.thread_time()
    while time.thread_time() - started < seconds:
        pass


def test_a_handler_s_cpu_time_moves_the_clock_and_the_world_s_does_not() -> None:
    clock = CpuChargedClock(START, scale=2.0)
    loop = EventLoop(clock)
    lambdas = Lambdas(loop, charged=clock)
    seen: dict[str, float] = {}

    def handler(event: dict[str, Any], context: Any) -> None:
        seen["start"] = clock.now()
        _spin(0.05)
        seen["after"] = clock.now()
        lambdas.sleep(10.0)
        seen["woken"] = clock.now()

    _spin(0.05)  # the world's own work (this thread) is never charged
    assert clock.now() == START
    lambdas.invoke("provisioner", handler, {}, timeout=60)
    loop.run_until(START + 30)
    assert seen["after"] - seen["start"] >= 0.1  # 0.05 CPU seconds, twice
    assert seen["woken"] - seen["after"] == pytest.approx(10.0, abs=0.05)
    assert clock.charged >= 0.1
    assert clock.now() == START + 30
    assert clock.advance_to(START) == START + 30  # never backwards: stays where it is


def test_only_threads_charging_are_charged() -> None:
    clock = CpuChargedClock(START)
    readings: list[float] = []

    def other() -> None:
        _spin(0.03)
        readings.append(clock.now())

    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    assert readings == [START]
    with clock.charging():
        _spin(0.03)
        assert clock.now() >= START + 0.03
    with pytest.raises(ValueError, match="finite number >= 0"):
        CpuChargedClock(START, scale=-1)


def _world(rate: float = 60.0) -> tuple[VirtualClock, EventLoop, Lambdas, SingleFlight]:
    clock = VirtualClock(START)
    loop = EventLoop(clock)
    lambdas = Lambdas(loop)
    scenario = Scenario(
        name="single-flight",
        source="",
        duration=600.0,
        provisioner=FunctionSettings(rate=rate, timeout=100.0, single_flight=True),
    )
    return clock, loop, lambdas, SingleFlight(scenario=scenario, clock=clock, loop=loop, lambdas=lambdas)


def test_a_tick_that_finds_an_invocation_running_is_retried_1_2_4_8_16_s_later_then_runs() -> None:
    clock, loop, lambdas, flight = _world()
    starts: list[float] = []

    def runs_for(seconds: float) -> Any:
        def handler(event: dict[str, Any], context: Any) -> None:
            starts.append(clock.now() - START)
            lambdas.sleep(seconds)

        return handler

    def tick(seconds: float) -> None:
        flight.admit("provisioner", lambda: lambdas.invoke("provisioner", runs_for(seconds), {}, timeout=100))

    # Tick 0 runs until 80 s; tick 1 (60 s) is retried at 61, 63, 67, 75 (still running) and 91 s.
    loop.at(START, lambda: tick(80.0))
    loop.at(START + 60, lambda: tick(80.0))
    # That one runs until 171 s: tick 2 (120 s) is retried until its event is a minute old and
    # dropped (121, 123, 127, 135, 151 s; the next retry would be 63 s old); tick 3 runs on time.
    loop.at(START + 120, lambda: tick(10.0))
    loop.at(START + 180, lambda: tick(10.0))
    loop.run_until(START + 300)
    assert starts == [0.0, 91.0, 180.0]
    assert flight.throttled == {"provisioner": 11}  # tick 1: 5 attempts before 91 s; tick 2: 6
    assert flight.dropped == {"provisioner": 1}


def test_functions_without_single_flight_start_every_event_at_once() -> None:
    clock, loop, lambdas, _ = _world()
    free = SingleFlight(
        scenario=Scenario(name="free", source="", duration=600.0), clock=clock, loop=loop, lambdas=lambdas
    )
    started: list[float] = []

    def handler(event: dict[str, Any], context: Any) -> None:
        started.append(clock.now() - START)
        lambdas.sleep(100.0)

    for t in (0.0, 10.0):
        loop.at(START + t, lambda: free.admit("provisioner", lambda: lambdas.invoke("provisioner", handler, {}, 120)))
    loop.run_until(START + 50)
    assert started == [0.0, 10.0]
    assert not free.limited
