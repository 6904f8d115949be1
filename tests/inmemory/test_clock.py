import math

import pytest

from nodewright.inmemory.clock import VirtualClock
from nodewright.ports import Clock


def read(clock: Clock) -> float:
    return clock.now()


def test_the_clock_starts_where_it_is_told_and_serves_as_a_port_clock() -> None:
    assert read(VirtualClock(start=1_700_000_000.0)) == 1_700_000_000.0
    assert VirtualClock().now() == 0.0


def test_advance_moves_forward_and_returns_the_new_time() -> None:
    clock = VirtualClock(start=100.0)
    assert clock.advance(30) == 130.0
    assert clock.advance(0.5) == 130.5
    assert clock.now() == 130.5


def test_advancing_by_nothing_is_allowed() -> None:
    clock = VirtualClock(start=5.0)
    assert clock.advance(0) == 5.0


def test_advance_to_jumps_to_a_later_time_or_stays_put() -> None:
    clock = VirtualClock(start=10.0)
    assert clock.advance_to(70.0) == 70.0
    assert clock.advance_to(70.0) == 70.0


@pytest.mark.parametrize("step", [-1.0, -0.001, math.inf, math.nan], ids=["minus-one", "tiny", "inf", "nan"])
def test_the_clock_refuses_to_step_backwards_or_by_a_non_finite_amount(step: float) -> None:
    clock = VirtualClock(start=10.0)
    with pytest.raises(ValueError, match="forward"):
        clock.advance(step)
    assert clock.now() == 10.0


def test_the_clock_never_goes_back_in_time() -> None:
    clock = VirtualClock(start=10.0)
    with pytest.raises(ValueError, match="never goes backwards"):
        clock.advance_to(9.999)
    assert clock.now() == 10.0


@pytest.mark.parametrize("target", [math.inf, math.nan], ids=["inf", "nan"])
def test_the_clock_cannot_jump_to_a_non_finite_time(target: float) -> None:
    with pytest.raises(ValueError, match="cannot move"):
        VirtualClock().advance_to(target)


def test_a_clock_cannot_start_at_a_non_finite_time() -> None:
    with pytest.raises(ValueError, match="finite"):
        VirtualClock(start=math.nan)
