"""`nodewright catalog` and the offline catalog it reads (nodewright.adapters.offline_catalog).

The CLI runs in-process through click's runner on the app's command group; the catalog is the
one shipped in the package, so these figures are what a user sees.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner, Result

import nodewright.cli.catalog  # noqa: F401  (registers the command)
from nodewright.adapters.offline_catalog import (
    SPOT_FRACTION,
    PricesFileError,
    load_catalog,
    load_snapshot,
    read_prices_csv,
)
from nodewright.cli import app
from nodewright.model import labels as wk


def as_group() -> typer.Typer:
    # A Typer app with one command runs it without its name; `nodewright` gains a group as soon
    # as a second command (or a callback) registers. Mirror that here so `catalog` is addressed
    # by name, as users type it.
    group = typer.Typer()

    @group.callback()
    def root() -> None:
        """nodewright"""

    group.registered_commands.extend(app.registered_commands)
    return group


def run(*args: str) -> Result:
    return CliRunner().invoke(as_group(), ["catalog", *args])


def run_json(*args: str) -> list[dict[str, Any]]:
    result = run("--output", "json", *args)
    assert result.exit_code == 0, result.output
    rows: list[dict[str, Any]] = json.loads(result.output)
    return rows


@pytest.fixture(scope="module")
def default_rows() -> dict[str, dict[str, Any]]:
    return {row["name"]: row for row in run_json()}


def test_json_reports_m5_large_with_karpenters_allocatable(default_rows: dict[str, dict[str, Any]]) -> None:
    m5 = default_rows["m5.large"]
    assert m5["allocatable"] == {"cpu": "1930m", "memory": "6903Mi", "pods": 29}
    assert (m5["vcpu"], m5["memory_mib"], m5["arch"]) == (2, 8192, "amd64")
    assert m5["price"] == pytest.approx(0.096, rel=0.01)
    assert m5["price_estimated"] is True
    assert m5["spot_price"] == pytest.approx(m5["price"] * SPOT_FRACTION, rel=1e-3)
    assert m5["zones"] == ["us-east-1a", "us-east-1b", "us-east-1c"]


def test_json_lists_over_a_thousand_current_generation_types(default_rows: dict[str, dict[str, Any]]) -> None:
    current = [row for row in default_rows.values() if row["current_generation"]]
    assert len(current) >= 1000
    assert all(row["price"] is not None and row["price"] > 0 for row in default_rows.values())


def test_json_reports_accelerators_as_extended_resources(default_rows: dict[str, dict[str, Any]]) -> None:
    assert default_rows["g5.xlarge"]["extended_resources"] == {"nvidia.com/gpu": 1}
    assert default_rows["inf2.xlarge"]["extended_resources"]["aws.amazon.com/neuron"] == 1
    assert default_rows["m7g.large"]["arch"] == "arm64"


def test_prices_file_sets_prices_and_drops_unlisted_types(tmp_path: Path) -> None:
    prices = tmp_path / "prices.csv"
    prices.write_text("instance_type,usd_per_hour\nm5.large,0.08\nm7g.large, 0.07 \n\ng5.xlarge,0.9\n")
    rows = {row["name"]: row for row in run_json("--prices", str(prices), "--zones", "us-east-1a,us-east-1b")}
    assert set(rows) == {"m5.large", "m7g.large", "g5.xlarge"}
    assert rows["m5.large"]["price"] == 0.08
    assert rows["m5.large"]["price_estimated"] is False
    assert rows["m7g.large"]["zones"] == ["us-east-1a", "us-east-1b"]


def test_table_output_marks_estimated_prices() -> None:
    result = run("--zones", "us-east-1a")
    assert result.exit_code == 0, result.output
    assert "m5.large" in result.output
    assert "1930m" in result.output
    assert "6903Mi" in result.output
    assert "(est.)" in result.output


def test_an_unknown_zone_is_a_clear_error() -> None:
    result = run("--zones", "eu-west-1a")
    assert result.exit_code == 2
    assert "eu-west-1a" in result.output
    assert "us-east-1" in result.output


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param(
            "type,price\nm5.large,1\n", ":1: header must name instance_type and usd_per_hour", id="bad-header"
        ),
        pytest.param(
            "instance_type,usd_per_hour\nm5.large,cheap\n", ":2: usd_per_hour 'cheap' is not a number", id="nan"
        ),
        pytest.param("instance_type,usd_per_hour\nm5.large,0.1\nc5.large,-1\n", ":3: usd_per_hour '-1'", id="negative"),
        pytest.param("instance_type,usd_per_hour\n,0.1\n", ":2: instance_type is empty", id="empty-type"),
        pytest.param(
            "instance_type,usd_per_hour\nm5.large,0.1\nm5.large,0.2\n",
            ":3: instance_type 'm5.large' is listed twice",
            id="dup",
        ),
        pytest.param("instance_type,usd_per_hour\nm5.large,nan\n", ":2: usd_per_hour 'nan' must be", id="nan-literal"),
    ],
)
def test_bad_prices_files_name_the_file_line_and_field(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "prices.csv"
    path.write_text(content)
    with pytest.raises(PricesFileError) as caught:
        read_prices_csv(path)
    assert str(caught.value).startswith(str(path))
    assert message in str(caught.value)
    result = run("--prices", str(path))
    assert result.exit_code == 2
    assert message in result.output


def test_a_missing_prices_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(PricesFileError, match="cannot read prices file"):
        read_prices_csv(tmp_path / "absent.csv")


def test_offline_catalog_offers_on_demand_and_spot_in_each_requested_zone_that_has_the_type() -> None:
    snapshot = load_snapshot()
    zones = ("us-east-1a", "us-east-1e")
    types = {t.name: t for t in load_catalog(zones)}
    for name in ("m5.large", "c7g.xlarge"):
        offered_in = sorted(set(zones) & snapshot.zones[name])
        offers = types[name].offerings
        assert sorted({o.zone for o in offers}) == offered_in
        assert {o.capacity_type for o in offers} == {"on-demand", "spot"}
        assert types[name].requirements[wk.ZONE].values == set(offered_in)
        assert types[name].label(wk.REGION) == "us-east-1"


def test_offline_catalog_without_spot() -> None:
    types = load_catalog(("us-east-1a",), spot_fraction=None)
    assert all(o.capacity_type == "on-demand" for t in types for o in t.offerings)


def test_family_estimates_track_real_prices_for_common_types() -> None:
    # Real us-east-1 on-demand prices; the fitted per-family rates reproduce them closely.
    real = {"m5.large": 0.096, "c6i.2xlarge": 0.34, "r7g.xlarge": 0.2142, "t3.medium": 0.0416, "g5.xlarge": 1.006}
    estimated = {t.name: t.cheapest_offering() for t in load_catalog(("us-east-1a",), spot_fraction=None)}
    for name, price in real.items():
        offering = estimated[name]
        assert offering is not None
        assert offering.price == pytest.approx(price, rel=0.02), name
