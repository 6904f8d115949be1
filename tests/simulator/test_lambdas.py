"""The event loop and concurrent invocations on the virtual clock."""

from __future__ import annotations

from typing import Any

from nodewright.inmemory.clock import VirtualClock
from nodewright.simulator.standins.lambdas import EventLoop, Invocation, Lambdas

START = 1_800_000_000.0


def test_actions_run_in_time_order_and_the_clock_follows() -> None:
    loop = EventLoop(VirtualClock(START))
    seen: list[tuple[str, float]] = []
    loop.at(START + 5, lambda: seen.append(("b", loop.clock.now())))
    loop.at(START + 1, lambda: seen.append(("a", loop.clock.now())))
    loop.run_until(START + 10)
    assert seen == [("a", START + 1), ("b", START + 5)]
    assert loop.clock.now() == START + 10


def test_sleeping_invocations_overlap_as_concurrent_lambdas_do() -> None:
    loop = EventLoop(VirtualClock(START))
    lambdas = Lambdas(loop)
    log: list[tuple[str, float]] = []

    def poller(name: str, every: float, times: int) -> Any:
        def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
            for _ in range(times):
                log.append((name, loop.clock.now() - START))
                lambdas.sleep(every)
            return {"remaining_ms": context.get_remaining_time_in_millis()}

        return handler

    first = lambdas.invoke("a", poller("a", 2.0, 3), {}, timeout=60)
    loop.at(START + 1, lambda: lambdas.invoke("b", poller("b", 2.0, 2), {}, timeout=60) and None)
    loop.run_until(START + 20)
    assert log == [("a", 0.0), ("b", 1.0), ("a", 2.0), ("b", 3.0), ("a", 4.0)]
    assert first.done
    assert first.result == {"remaining_ms": 54_000}
    assert not lambdas.running


def test_an_invocation_that_sleeps_past_its_timeout_is_stopped_there() -> None:
    loop = EventLoop(VirtualClock(START))
    lambdas = Lambdas(loop)
    finished: list[Invocation] = []

    def forever(event: dict[str, Any], context: Any) -> None:
        while True:
            lambdas.sleep(10)

    lambdas.invoke("stuck", forever, {}, timeout=25, on_done=finished.append)
    loop.run_until(START + 100)
    (invocation,) = finished
    assert invocation.stopped == "timeout"
    assert invocation.ended == START + 25


def test_errors_are_kept_with_their_trace_and_shutdown_stops_the_rest() -> None:
    loop = EventLoop(VirtualClock(START))
    lambdas = Lambdas(loop)

    def broken(event: dict[str, Any], context: Any) -> None:
        raise RuntimeError("boom")

    def slow(event: dict[str, Any], context: Any) -> None:
        lambdas.sleep(1000)

    failed = lambdas.invoke("broken", broken, {}, timeout=60)
    waiting = lambdas.invoke("slow", slow, {}, timeout=900)
    assert isinstance(failed.error, RuntimeError)
    assert "boom" in failed.trace
    lambdas.shutdown()
    assert waiting.stopped == "shutdown"
    assert not lambdas.running
