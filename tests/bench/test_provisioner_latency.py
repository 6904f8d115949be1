"""The provisioner latency benchmark: a thin driver over the simulator's world.

Runs the real driver (the provisioner handler in the simulator's world on the CPU-charged clock,
with reserved concurrency 1) on quick patterns, so a change that breaks the benchmark fails here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import provisioner_latency as latency
from tests.builders import instance_type

TYPES = ("m5.large", "m5.xlarge", "m5.4xlarge")


def test_every_pattern_is_deterministic_and_the_quick_ones_are_small() -> None:
    assert latency.patterns() == latency.patterns()
    quick = latency.patterns(quick=True)
    assert set(quick) == set(latency.patterns())
    assert all(p.pods <= 2000 for p in quick.values())


def test_a_pattern_is_a_scenario_of_workloads_on_the_charged_clock_with_one_invocation_at_a_time() -> None:
    pattern = latency.patterns(quick=True)["mid-burst"]
    scenario = latency.scenario_for(pattern, TYPES, latency.Settings(cpu_scale=1.7, options={"batch_idle": 2.0}))
    assert scenario.cpu_charge == 1.7
    assert scenario.provisioner.single_flight
    assert scenario.provisioner.rate == 60.0
    assert scenario.provisioner_options == (("batch_idle", 2.0),)
    assert scenario.consolidation == "off"
    assert scenario.duration == 85.0 + latency.DRAIN_SECONDS
    assert sum(w.replicas_at(scenario.duration) for w in scenario.workloads) == pattern.pods == 500


def test_a_quick_pattern_serves_every_pod() -> None:
    # (the single pattern runs in the next test, through main)
    result = latency.run_pattern(latency.patterns(quick=True)["mid-burst"], TYPES, latency.Settings())
    assert result.unserved == 0
    assert result.waits.count + result.bound == result.pods
    assert 0 < result.waits.median <= result.waits.p99 <= result.waits.max
    assert result.fleets > 0
    assert result.invocations >= 2
    assert result.charged_seconds > 0


def test_main_prints_the_table_and_writes_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(latency, "benchmark_types", lambda: [instance_type(name) for name in TYPES])
    out = tmp_path / "latency.json"

    latency.main(["--quick", "--pattern", "single", "--option", "batch_growth=0", "--json", str(out)])

    printed = capsys.readouterr().out
    assert "machine:" in printed
    assert "batch_growth=0" in printed
    assert "single" in printed
    document = json.loads(out.read_text())
    assert [r["pattern"] for r in document["results"]] == ["single"]
    assert document["settings"]["options"] == {"batch_growth": 0.0}
