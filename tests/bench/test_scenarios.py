"""The scenario generator, `nodewright simulate --generate` and the consolidation suite.

Real: the generator, the scenario loader every scenario goes through, the `nodewright` command
line, and the simulator (handlers, moto, the in-memory cluster) on the shortest generated days.
Observed: the documents drawn, what the loader makes of them, the files written and run, and the
suite's JSON.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from bench import consolidation_suite
from nodewright.cli import app
from nodewright.cli import commands as _commands  # noqa: F401  (registers the commands)
from nodewright.simulator.runner import run_scenario
from nodewright.simulator.scenario import load_scenario
from nodewright.simulator.scenario.generate import generate, load, to_yaml

SEEDS = range(40)
runner = CliRunner()


def _deployments(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [w for w in document["workloads"] if w["manifest"]["kind"] == "Deployment"]


def _services(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [w for w in _deployments(document) if w["manifest"]["metadata"]["namespace"] == "apps"]


def test_the_same_seed_draws_the_same_scenario_and_other_seeds_differ() -> None:
    assert generate(7) == generate(7)
    assert to_yaml(generate(7, hours=2)) == to_yaml(generate(7, hours=2))
    assert len({to_yaml(generate(seed)) for seed in range(10)}) == 10


@pytest.mark.parametrize("hours", [None, 0.25, 2.0], ids=["full", "quarter-hour", "two-hours"])
def test_every_drawn_scenario_passes_the_real_loader(hours: float | None) -> None:
    for seed in SEEDS:
        document = generate(seed, hours=hours)
        scenario = load(document, f"seed-{seed}.yaml")
        assert scenario.name == f"generated-{seed}"
        assert scenario.seed == seed
        assert 2 <= len([w for w in scenario.workloads if w.namespace == "apps"]) <= 6
        assert scenario.daemonsets
        assert scenario.nodepools


def test_drawn_days_last_12_to_24_hours_and_cover_every_kind_of_variety() -> None:
    documents = [generate(seed) for seed in SEEDS]
    scenarios = [load(d) for d in documents]
    assert {s.duration / 3600 for s in scenarios} <= set(range(12, 25))
    assert max(s.duration for s in scenarios) - min(s.duration for s in scenarios) >= 8 * 3600
    shapes = Counter(w["manifest"]["metadata"]["name"].rsplit("-", 1)[0] for d in documents for w in _services(d))
    assert set(shapes) == {"cpu-heavy", "memory-heavy", "tiny", "mixed"}
    assert {len(_services(d)) for d in documents} == {2, 3, 4, 5, 6}
    templates = [w["manifest"]["spec"]["template"] for d in documents for w in _services(d)]
    assert any("topologySpreadConstraints" in t["spec"] for t in templates)
    anti = [t["spec"]["affinity"]["podAntiAffinity"] for t in templates if "affinity" in t["spec"]]
    assert any("requiredDuringSchedulingIgnoredDuringExecution" in a for a in anti)
    assert any("preferredDuringSchedulingIgnoredDuringExecution" in a for a in anti)
    assert any("annotations" in t["metadata"] for t in templates)  # do-not-disrupt
    budgets = {key for d in documents for pdb in d.get("pdbs", ()) for key in pdb["spec"] if key != "selector"}
    assert budgets == {"maxUnavailable", "minAvailable"}
    curves = [s.diurnal for sc in scenarios for w in sc.workloads for s in w.schedule if s.diurnal is not None]
    assert len({(c.period, c.peak) for c in curves}) > 20
    bursts = [w for d in documents for w in _deployments(d) if w["manifest"]["metadata"]["namespace"] == "batch"]
    assert bursts
    assert all([s["replicas"] for s in b["replicas"]][0::2] == [0, 0] for b in bursts)
    pools = [p for sc in scenarios for p in sc.nodepools]
    assert any(p.limits for p in pools)
    assert any(not p.limits for p in pools)
    assert any(len(sc.nodepools) > 1 and len({p.weight for p in sc.nodepools}) == len(sc.nodepools) for sc in scenarios)
    requirements = [{r["key"]: tuple(r["values"]) for r in _requirements(p)} for d in documents for p in d["nodepools"]]
    assert {r["karpenter.sh/capacity-type"] for r in requirements} == {("spot",), ("on-demand",), ("spot", "on-demand")}
    assert {r["kubernetes.io/arch"] for r in requirements} == {("amd64",), ("arm64",), ("amd64", "arm64")}
    assert len({p.disruption.consolidate_after for p in pools}) >= 4
    storms = [i for sc in scenarios for i in sc.interruptions if (i.count or 0) >= 2 and i.within <= 180]
    assert storms
    assert any(i.nodepool is not None for i in storms)  # aimed at a PDB-protected service's pool
    assert any(sc.capacity_errors for sc in scenarios)


def _requirements(pool: dict[str, Any]) -> list[dict[str, Any]]:
    return list(pool["spec"]["template"]["spec"]["requirements"])


def test_hours_compresses_the_days_story_but_not_the_controllers_timings() -> None:
    for seed in range(10):
        full, short = load(generate(seed)), load(generate(seed, hours=2))
        factor = 2 * 3600 / full.duration
        assert short.duration == 2 * 3600
        for long_one, short_one in zip(full.interruptions, short.interruptions, strict=True):
            assert short_one.at == pytest.approx(long_one.at * factor, abs=1)
            assert short_one.count == long_one.count
        for long_w, short_w in zip(full.workloads, short.workloads, strict=True):
            for a, b in zip(long_w.schedule, short_w.schedule, strict=True):
                assert b.at == pytest.approx(a.at * factor, abs=1)
                if a.diurnal is not None and b.diurnal is not None:
                    assert (b.diurnal.minimum, b.diurnal.maximum) == (a.diurnal.minimum, a.diurnal.maximum)
                    assert b.diurnal.period == pytest.approx(a.diurnal.period * factor, abs=1)
        assert [p.disruption for p in short.nodepools] == [p.disruption for p in full.nodepools]


def test_scale_multiplies_the_replicas() -> None:
    full, half = load(generate(3)), load(generate(3, scale=0.5))
    for a, b in zip(full.workloads, half.workloads, strict=True):
        assert b.replicas == max(1, round(a.replicas * 0.5)) or a.replicas == 0


def test_faults_are_drawn_on_top_of_the_same_day_with_spot_interruptions_aimed_at_spot_nodes() -> None:
    for seed in range(10):
        plain, faulty = generate(seed, hours=1), generate(seed, hours=1, faults=True)
        assert 2 <= len(faulty.pop("faults")) <= 5
        spot_pools = {
            p["metadata"]["name"]
            for p in faulty["nodepools"]
            if any(
                r["key"] == "karpenter.sh/capacity-type" and "spot" in r["values"]
                for r in p["spec"]["template"]["spec"]["requirements"]
            )
        }
        added = [e for e in faulty.pop("interruptions", []) if e not in plain.get("interruptions", [])]
        plain.pop("interruptions", None)
        # One more interruption, on a NodePool that launches spot, when one does.
        assert len(added) == (1 if spot_pools else 0), seed
        assert all(e["nodepool"] in spot_pools and 2 <= e["count"] <= 3 for e in added)
        assert {k: v for k, v in faulty.items() if k != "description"} == {
            k: v for k, v in plain.items() if k != "description"
        }
        assert load(generate(seed, hours=1, faults=True)).faults


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"seed": -1}, "seed must be a non-negative integer"),
        ({"seed": 1, "hours": 0.1}, "hours must be at least 0.25"),
        ({"seed": 1, "scale": 0}, "scale must be positive"),
    ],
    ids=["negative-seed", "too-short", "no-scale"],
)
def test_bad_generator_input_is_refused_naming_the_argument(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        generate(**kwargs)


def test_the_shipped_mixed_day_is_the_issues_scenario() -> None:
    scenario = load_scenario(Path(__file__).parents[2] / "examples" / "scenarios" / "mixed-12h.yaml")
    assert scenario.duration == 12 * 3600
    (pool,) = scenario.nodepools
    assert pool.disruption.consolidate_after == 120
    shapes = {w.name: (str(w.template.requests)) for w in scenario.workloads}
    assert set(shapes) == {"compute", "cache", "sidecar", "batch"}
    (interruption,) = scenario.interruptions
    assert (interruption.at, interruption.count, interruption.within) == (3 * 3600, 3, 180)


def test_simulate_generate_writes_a_file_that_reproduces_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    written = tmp_path / "seed-11.yaml"
    result = runner.invoke(
        app, ["simulate", "--generate", "11", "--hours", "0.25", "--scale", "0.1", "--write", str(written)]
    )
    assert result.exit_code == 0, result.output
    assert f"wrote {written}" in result.output
    from_file = load_scenario(written)
    drawn = load(generate(11, hours=0.25, scale=0.1))
    assert replace(from_file, source="") == replace(drawn, source="")
    first = run_scenario(from_file, plots=False).summary
    # The seed run again, as `simulate --generate` runs it: the file's run is the same run.
    monkeypatch.chdir(tmp_path)
    report = tmp_path / "report"
    ran = runner.invoke(
        app, ["simulate", "--generate", "11", "--hours", "0.25", "--scale", "0.1", "--report", str(report)]
    )
    assert ran.exit_code == 0, ran.output
    again = json.loads((report / "summary.json").read_text())
    for key in ("cost_usd", "pods_created", "nodes_launched", "nodes_terminated", "pods_lost", "consolidation_moves"):
        assert first[key] == again[key], key


def test_simulate_wants_a_file_or_a_seed_and_generator_options_only_with_a_seed(tmp_path: Path) -> None:
    neither = runner.invoke(app, ["simulate"])
    assert neither.exit_code == 2
    assert "give either SCENARIO.yaml or --generate SEED" in neither.output
    both = runner.invoke(app, ["simulate", str(tmp_path / "x.yaml"), "--generate", "1"])
    assert both.exit_code == 2
    stray = runner.invoke(app, ["simulate", str(tmp_path / "x.yaml"), "--hours", "2"])
    assert stray.exit_code == 2
    assert "--hours, --scale, --faults, --features and --write go with --generate SEED" in stray.output


def test_the_suite_runs_each_mode_and_reports_ratios_shortfalls_and_totals(tmp_path: Path) -> None:
    out = tmp_path / "suite.json"
    status = consolidation_suite.main(
        ["--seeds", "1", "--first", "11", "--hours", "0.25", "--scale", "0.1", "--jobs", "1", "--no-shipped",
         "--json", str(out)]
    )  # fmt: skip
    assert status == 0
    result = json.loads(out.read_text())
    assert [(r["scenario"], r["mode"]) for r in result["rows"]] == [
        ("seed 11", "nodewright"),
        ("seed 11", "karpenter"),
        ("seed 11", "automode"),
    ]
    (per,) = result["scenarios"]
    rows = {r["mode"]: r for r in result["rows"]}
    for row in rows.values():  # the bill: compute + fee + the autoscaler's own cost
        assert row["total_usd"] == pytest.approx(row["compute_usd"] + row["fee_usd"] + row["autoscaler_usd"], abs=2e-4)
        assert row["compute_usd"] == row["cost_usd"]
    assert rows["automode"]["fee_usd"] > 0
    assert rows["automode"]["autoscaler_usd"] == 0
    assert rows["karpenter"]["fee_usd"] == 0
    assert rows["karpenter"]["autoscaler_usd"] > 0
    assert rows["nodewright"]["fee_usd"] == 0
    assert rows["nodewright"]["autoscaler_usd"] > 0
    totals_of = {m: r["total_usd"] for m, r in rows.items()}
    assert per["ratio"] == pytest.approx(totals_of["nodewright"] / totals_of["karpenter"], abs=1e-4)
    assert per["ratio_automode"] == pytest.approx(totals_of["nodewright"] / totals_of["automode"], abs=1e-4)
    totals = result["totals"]
    assert totals["scenarios"] == 1
    assert totals["ratio_median"] == per["ratio"]
    assert totals["pods_lost"] == sum(r["pods_lost"] for r in result["rows"])
    assert set(totals["bill_by_mode"]) == {"nodewright", "karpenter", "automode"}
    assert totals["bill_by_mode"]["automode"]["fee_usd"] == rows["automode"]["fee_usd"]
    nodewright = rows["nodewright"]
    assert nodewright["consolidator_ticks"] > 0
    assert nodewright["pass_cpu_p99"] > 0
    assert result["settings"]["hours"] == 0.25


def test_the_suite_takes_the_runs_an_earlier_json_holds_and_refuses_one_of_other_settings(tmp_path: Path) -> None:
    args = ["--seeds", "1", "--first", "11", "--hours", "0.25", "--scale", "0.1", "--jobs", "1", "--no-shipped"]
    # An earlier run's file, as --json writes it: the karpenter run of seed 11 at these settings.
    summary = {
        "cost_usd": 1.5, "bill": {"compute_usd": 1.5, "fee_usd": 0.0, "autoscaler_usd": 0.1, "total_usd": 1.6},
        "pods_lost": 0, "pdb_violations": 0, "do_not_disrupt_violations": 0, "limit_violations": 0,
        "displaced_pending_seconds": {"other": {"max": 40.0}, "interruption": {"max": 0.0}},
        "invocations": {"consolidator": 15}, "invocations_lease_busy": {}, "consolidation_moves": {"pods_moved": 4},
        "interruption": {"instances": 0, "drain_seconds_max": None, "reclaimed_with_pods": 0},
        "pods_pending_at_end": 0, "nodes_launched": 3, "handler_errors": 0, "wall_seconds": 9.0, "cpu_seconds": 8.0,
    }  # fmt: skip
    row = {
        "scenario": "seed 11", "mode": "karpenter", **consolidation_suite.figures(summary),
        "plans_checked": 0, "unbindable_pods": 0, "commit": "abc1234",
    }  # fmt: skip
    settings = {"seeds": [11], "hours": 0.25, "scale": 0.1, "faults": False, "features": [], "spot_to_spot": True}
    earlier = tmp_path / "earlier.json"
    earlier.write_text(json.dumps({"settings": settings, "rows": [row]}), encoding="utf-8")

    out = tmp_path / "again.json"
    # Everything it asks for is in the earlier file: nothing runs, the row is the earlier one.
    assert consolidation_suite.main([*args, "--modes", "karpenter", "--reuse", str(earlier), "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["rows"] == [{**row, "reused_from": str(earlier)}]
    assert result["commits"] == ["abc1234"]
    assert consolidation_suite.code_commit() != ""

    with pytest.raises(SystemExit):  # compressed to another length: not the same runs
        consolidation_suite.main([*args[:4], "--hours", "0.5", *args[6:], "--reuse", str(earlier)])
    (tmp_path / "broken.json").write_text("{}", encoding="utf-8")
    with pytest.raises(SystemExit):
        consolidation_suite.main([*args, "--reuse", str(tmp_path / "broken.json")])


def test_a_scenario_short_of_the_goals_says_which_and_by_how_much() -> None:
    row = {
        "cost_usd": 11.0,
        "pods_lost": 2,
        "pdb_violations": 0,
        "do_not_disrupt_violations": 0,
        "limit_violations": 0,
        "handler_errors": 0,
        "displaced_pending_max": 973.0,
        "warning_to_drained_max": 105.0,
        "pass_cpu_p99": 1.0,
        "cpu_seconds": 50.0,
    }
    karpenter = {**row, "cost_usd": 10.0, "pods_lost": 0, "displaced_pending_max": 36.0, "cpu_seconds": 20.0}
    short = consolidation_suite.shortfalls({"nodewright": row, "karpenter": karpenter})
    assert short == [
        "cost 1.100x karpenter",
        "nodewright: 2 pods lost",
        "displaced pod pending 973 s",
        "warning -> drained 105 s",
        "simulates 2.5x slower",
    ]


def test_simulate_generate_faults_writes_the_same_day_with_a_faults_list_and_its_interruption(tmp_path: Path) -> None:
    plain, faulty = tmp_path / "plain.yaml", tmp_path / "faulty.yaml"
    for path, extra in ((plain, []), (faulty, ["--faults"])):
        result = runner.invoke(app, ["simulate", "--generate", "5", "--hours", "1", *extra, "--write", str(path)])
        assert result.exit_code == 0, result.output
    with_faults, without = load_scenario(faulty), load_scenario(plain)
    assert with_faults.faults
    assert not without.faults
    # The same day, with the faults and the spot interruptions aimed at them.
    assert len(with_faults.interruptions) == len(without.interruptions) + 1
    assert replace(with_faults, faults=(), interruptions=(), description="", source="") == replace(
        without, interruptions=(), description="", source=""
    )
