"""Generated days with Nodewright's own capabilities drawn in (`--features`): standby, DRA, zone
balance, a late DaemonSet.

Real: the generator and its feature draws, the scenario loader every scenario goes through, the
`nodewright` command line and the suite's argument parsing; for one quarter-scale short day with
every feature, the whole simulator (the Lambda handlers, moto, the in-memory cluster) and
`bench.harness.feature_checks` watching it. Observed: the documents drawn, what the loader makes of
them, the errors bad input gets, and, for the day run, the summary and each feature's figures.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from typer.testing import CliRunner

from bench import consolidation_suite
from bench.harness.feature_checks import FeatureWatch, shortfalls
from nodewright.cli import app
from nodewright.cli import commands as _commands  # noqa: F401  (registers the commands)
from nodewright.model import labels as wk
from nodewright.model.nodepool import NodePool
from nodewright.model.standby import STANDBY_CAPACITY
from nodewright.simulator.runner import run_scenario
from nodewright.simulator.scenario.generate import generate, load
from nodewright.simulator.scenario.generate_features import FEATURES, GPU_POOL, parse_features

SEEDS = range(24)
runner = CliRunner()


def _kinds(document: dict[str, Any], key: str) -> list[str]:
    return [d["kind"] for d in document.get(key, ())]


def _values(pool: NodePool, key: str) -> set[str]:
    requirement = pool.requirements.get(key)
    return set(requirement.values) if requirement is not None else set()


def _without_features(document: dict[str, Any], plain: dict[str, Any]) -> dict[str, Any]:
    """`document` with what the features add taken out again: annotations, the GPU pool, the
    buffer's documents, the device objects, the GPU and late workloads."""
    out = copy.deepcopy(document)
    out["description"] = plain["description"]
    out.pop("devices", None)
    out["nodepools"] = [p for p in out["nodepools"] if p["kind"] == "NodePool" and p["metadata"]["name"] != GPU_POOL]
    for pool in out["nodepools"]:
        pool["metadata"].pop("annotations", None)
    out["workloads"] = [
        w for w in out["workloads"] if "at" not in w and w["manifest"]["metadata"].get("namespace") != "inference"
    ]
    return out


def test_without_features_the_day_is_unchanged_and_with_them_it_is_the_same_day_plus_the_features() -> None:
    for seed in SEEDS:
        plain = generate(seed, hours=1)
        assert generate(seed, hours=1, features=()) == plain
        drawn = generate(seed, hours=1, features=FEATURES)
        assert drawn == generate(seed, hours=1, features=FEATURES)  # deterministic per seed
        stripped = _without_features(drawn, plain)
        # Standby may widen a spot-only day's last NodePool to on-demand (standby is on-demand only).
        for ours, theirs in zip(stripped["nodepools"], plain["nodepools"], strict=True):
            for mine, other in zip(
                ours["spec"]["template"]["spec"]["requirements"],
                theirs["spec"]["template"]["spec"]["requirements"],
                strict=True,
            ):
                if mine != other:
                    assert mine["key"] == wk.CAPACITY_TYPE
                    assert other["values"] == ["spot"]
                    mine["values"] = other["values"]
        assert stripped == plain
        assert drawn["description"] == plain["description"] + ", features: " + ", ".join(FEATURES)


def test_each_feature_is_drawn_from_its_own_source_whatever_the_others() -> None:
    for seed in range(8):
        alone = generate(seed, hours=1, features=("late-daemonset",))
        together = generate(seed, hours=1, features=FEATURES)
        late = [w for w in alone["workloads"] if "at" in w]
        assert late
        assert late == [w for w in together["workloads"] if "at" in w]
        assert generate(seed, hours=1, features=("dra",))["devices"] == together["devices"]


@pytest.mark.parametrize("hours", [None, 1.0, 0.25])
def test_every_day_with_every_feature_passes_the_real_loader_with_what_each_feature_adds(hours: float | None) -> None:
    policies: set[str] = set()
    balances: set[str] = set()
    gpus: set[str] = set()
    for seed in SEEDS:
        document = generate(seed, hours=hours, scale=0.25 if hours == 0.25 else 1.0, features=FEATURES)
        scenario = load(document, f"<generated seed {seed}>")
        (buffer,) = scenario.capacitybuffers
        assert buffer.provisioning_strategy == STANDBY_CAPACITY
        assert buffer.replicas is not None
        assert buffer.replicas >= 1
        assert [t.name for t in scenario.podtemplates] == [buffer.pod_template_ref]
        pools = {p.name: p for p in scenario.nodepools}
        # Standby needs a NodePool that may launch on-demand.
        assert any("on-demand" in _values(p, wk.CAPACITY_TYPE) for p in pools.values())
        gpu = pools[GPU_POOL]
        assert _values(gpu, wk.INSTANCE_GPU_MANUFACTURER) == {"nvidia"}
        assert [t.key for t in gpu.taints] == ["nvidia.com/gpu"]
        assert sorted(_kinds(document, "devices")) == ["DeviceClass", "ResourceClaimTemplate"]
        (llm,) = [w for w in scenario.workloads if w.template.namespace == "inference"]
        assert llm.template.device_claims
        assert any(p.zone_balance is not None for p in pools.values())
        balances.update(f"{p.zone_balance.by}:{p.zone_balance.max_skew:g}" for p in pools.values() if p.zone_balance)
        ((at, daemonset),) = scenario.late_daemonsets
        assert 0.3 * scenario.duration - 1 <= at <= 0.7 * scenario.duration + 1
        assert daemonset.template.requests.get("cpu") >= 500
        policies.update(p.daemon_overflow for p in pools.values())
        gpus.add(
            document["devices"][1]["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"][0]["cel"][
                "expression"
            ]
        )
    assert policies == {"Replace", "Report", "Ignore"}
    assert balances == {"nodes:1", "nodes:2", "cpu:32", "cpu:64"}
    assert len(gpus) > 4  # product names, architectures and memory sizes


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("standby,gpus", "'gpus': not a feature; choose from standby, dra, zone-balance, late-daemonset"),
        ("all,dra", "'all' stands alone"),
    ],
    ids=["unknown", "all-and-more"],
)
def test_bad_feature_names_are_refused_naming_them_and_the_choices(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_features(text)
    with pytest.raises(ValueError, match="not a feature"):
        generate(1, features=("gpus",))
    result = runner.invoke(app, ["simulate", "--generate", "1", "--features", text, "--write", "x.yaml"])
    assert result.exit_code == 2
    assert f"--features: {message}" in result.output
    with pytest.raises(SystemExit) as exited:
        consolidation_suite.main(["--seeds", "1", "--no-shipped", "--features", text])
    assert exited.value.code == 2


def test_feature_names_parse_in_a_fixed_order_and_all_means_every_one() -> None:
    assert parse_features("all") == FEATURES
    assert parse_features("late-daemonset, dra,dra") == ("dra", "late-daemonset")
    assert parse_features("") == ()
    stray = runner.invoke(app, ["simulate", "x.yaml", "--features", "dra"])
    assert stray.exit_code == 2
    assert "--features" in stray.output


def test_a_generated_day_with_every_feature_loses_nothing_and_each_feature_acts() -> None:
    # Seed SEED's day, a quarter of its replicas, compressed to half an hour: every feature acts
    # on it (a standby node is started, device pods run, the late DaemonSet overflows nodes).
    scenario = load(generate(SEED, hours=0.5, scale=0.25, features=FEATURES))
    watch = FeatureWatch(scenario)

    result = run_scenario(scenario, None, plots=False, on_built=watch.attach)

    summary = result.summary
    assert summary["pods_lost"] == 0
    assert summary["pdb_violations"] == 0
    assert summary["do_not_disrupt_violations"] == 0
    assert summary["limit_violations"] == 0
    assert summary["handler_errors"] == 0
    figures = watch.figures(result.world, summary)
    assert shortfalls(figures) == []
    assert figures["standby"]["started"] > 0
    assert figures["dra"]["device_pods"] > 0
    assert figures["dra"]["misplaced"] == {}
    for zone in figures["zone_balance"].values():
        assert zone["skew_mean"] <= float(zone["bound"].partition(":")[2])
    late = figures["late_daemonset"]
    assert any(p["waiting_peak"] for p in late.values())
    for pool in late.values():
        if pool["policy"] == "Ignore":
            assert pool["events"] == pool["replaced"] == 0


SEED = 1
