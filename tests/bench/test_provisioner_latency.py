"""The provisioner latency benchmark: its schedule model, its clock, and a smoke run.

Runs the real harness (the provisioner on the virtual clock with the emulated cluster) on the
quick patterns, so a change that breaks the benchmark fails here in seconds.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from bench import provisioner_latency as latency
from tests.builders import instance_type

TYPES = (
    instance_type("m5.large", cpu="2", memory="8Gi", pods=29, price=0.096, spot_price=0.04),
    instance_type("m5.xlarge", cpu="4", memory="16Gi", pods=58, price=0.192, spot_price=0.08),
    instance_type("m5.4xlarge", cpu="16", memory="64Gi", pods=234, price=0.768, spot_price=0.32),
)


def test_a_tick_throttled_by_a_running_invocation_is_retried_then_dropped() -> None:
    # An invocation started by tick 0 runs until 80 s: tick 1 (60 s) is retried at 61, 63, 67,
    # 75 and 91 s, where it runs.
    assert latency.next_start(0, 80.0, 60.0) == (1, 91.0)
    # One started at 91 s runs until 171 s: tick 2 (120 s) is retried until its event is a
    # minute old and dropped; tick 3 runs on time.
    assert latency.next_start(1, 171.0, 60.0) == (3, 180.0)
    # An invocation over before the next tick leaves it on time.
    assert latency.next_start(0, 58.0, 60.0) == (1, 60.0)


def test_the_charged_clock_counts_cpu_time_but_not_the_worlds() -> None:
    clock = latency.ChargedClock(1000.0, scale=2.0)

    def spin() -> None:
        started = time.process_time()
        while time.process_time() - started < 0.05:
            pass

    before = clock.now()
    spin()
    charged = clock.now() - before
    assert charged >= 0.09  # 0.05 CPU seconds, twice
    quiet_start = clock.now()
    clock.quiet(spin)()
    assert clock.now() - quiet_start < 0.05
    assert clock.advance_to(0.0) >= quiet_start  # never backwards


def test_every_pattern_is_deterministic_and_the_quick_ones_are_small() -> None:
    assert latency.patterns() == latency.patterns()
    quick = latency.patterns(quick=True)
    assert set(quick) == set(latency.patterns())
    assert all(p.pods <= 2000 for p in quick.values())


@pytest.mark.parametrize("name", ["single", "mid-burst", "poisson-1"])
def test_a_quick_pattern_serves_every_pod(name: str) -> None:
    result = latency.run_pattern(latency.patterns(quick=True)[name], TYPES, latency.Settings())
    assert result.unserved == 0
    assert result.waits.count + result.bound == result.pods
    assert 0 < result.waits.median <= result.waits.p99 <= result.waits.max
    assert result.fleets > 0
    assert result.invocations >= 2


def test_main_prints_the_table_and_writes_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(latency, "benchmark_types", lambda: list(TYPES))
    out = tmp_path / "latency.json"

    latency.main(["--quick", "--pattern", "single", "--option", "batch_growth=0", "--json", str(out)])

    printed = capsys.readouterr().out
    assert "machine:" in printed
    assert "batch_growth=0" in printed
    assert "single" in printed
    document = json.loads(out.read_text())
    assert [r["pattern"] for r in document["results"]] == ["single"]
    assert document["settings"]["options"] == {"batch_growth": 0.0}
