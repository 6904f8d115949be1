"""The provisioner's solve deadline in a simulation: a clock charged per reading, not the wall clock.

Role: what `Provisioner(solve_clock=...)` reads in `nodewright simulate`. In AWS a pass's solve
budget (`ProvisionerOptions.solve_budget`, 8 s) is real elapsed time, so a solve that would
overrun the invocation stops adding classes and defers the rest to the next pass. In a simulation
real elapsed time depends on the machine's load, not on the scenario: on a machine at a load of
about 24 the shipped `limits` scenario once deferred pods the same run at a load of 11 planned
at once, and launched 26 nodes where it launches 2. A simulation must plan the same whatever the
machine is doing.

Why a deterministic charge rather than a clock charged with the solver's CPU time: CPU time
depends far less on load than wall time, but it still varies from run to run (caches, frequency,
what shares the core), so a pass close to its budget could plan differently on two runs of one
seed, and `summary.json` must be the same byte for byte. Charging each reading a fixed amount
makes the budget a bound on the work the solver reports (it reads the clock once per class of
pods it places, `engine.scheduling.budget.FairTurns`, and a few times per pass), the same on
every machine.

The charge, 0.1 ms a reading, is well below what the solver spends between two readings (measured
on a shared 2-core machine: 1.9 ms on the shipped `limits` scenario, 5.2 ms on generated seed 3
at half an hour, 58 ms on `scale-up`), so a simulated pass reaches its budget only after more
classes than an 8 s solve places in AWS: the budget still cuts a pathological pass (80,000
readings), and leaves every ordinary one alone, as it does in production.

Production is unchanged: the functions' provisioner reads `time.monotonic`.
"""

from __future__ import annotations

import math

# Seconds of the solve budget one reading uses up (see the module docstring).
PER_READING = 1e-4


class SolveClock:
    """A clock for `SolveDeadline` that advances `per_reading` seconds each time it is read.

    Deterministic: its n-th reading is `n * per_reading`, whatever the machine does meanwhile.
    """

    __slots__ = ("_readings", "per_reading")

    def __init__(self, per_reading: float = PER_READING) -> None:
        if not math.isfinite(per_reading) or per_reading <= 0:
            raise ValueError(f"a reading must cost a positive, finite time, got {per_reading!r}")
        self.per_reading = per_reading
        self._readings = 0

    def __call__(self) -> float:
        """The time: `per_reading` seconds more than at the last reading."""
        self._readings += 1
        return self._readings * self.per_reading

    @property
    def readings(self) -> int:
        """How often it was read."""
        return self._readings
