"""`nodewright catalog`: list the instance types Nodewright would choose from, with allocatable and price.

Reads the offline us-east-1 catalog shipped in the package (no AWS account needed). With
`--prices FILE` (CSV `instance_type,usd_per_hour`) on-demand prices come from that file and types
it does not list are not offered; otherwise prices are per-family estimates and are marked so.
Spot prices are always estimates offline (see `nodewright.adapters.offline_catalog`).
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from nodewright.adapters.offline_catalog import (
    DEFAULT_ZONES,
    PricesFileError,
    load_catalog,
    load_snapshot,
    read_prices_csv,
)
from nodewright.cli import app
from nodewright.model.instancetype import InstanceType
from nodewright.model.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS

_SUMMARY = (CPU, MEMORY, PODS)


class OutputFormat(StrEnum):
    """How `catalog` prints."""

    table = "table"
    json = "json"


def _row(instance_type: InstanceType, current: bool) -> dict[str, Any]:
    allocatable = instance_type.allocatable
    formatted = allocatable.format()
    on_demand = [o.price for o in instance_type.available_offerings() if o.capacity_type == "on-demand"]
    spot = [o.price for o in instance_type.available_offerings() if o.capacity_type == "spot"]
    # Devices (GPUs, Neuron, EFA) are whole counts: print them as numbers, like pods.
    extended = {k: v // 1000 for k, v in sorted(allocatable.items()) if k not in (*_SUMMARY, EPHEMERAL_STORAGE)}
    return {
        "name": instance_type.name,
        "vcpu": int(instance_type.label("karpenter.k8s.aws/instance-cpu") or 0),
        "memory_mib": int(instance_type.label("karpenter.k8s.aws/instance-memory") or 0),
        "arch": instance_type.arch,
        "current_generation": current,
        "allocatable": {key: formatted.get(key, 0) for key in _SUMMARY},
        "extended_resources": extended,
        "price": min(on_demand) if on_demand else None,
        "spot_price": min(spot) if spot else None,
        "price_estimated": instance_type.price_estimated,
        "zones": sorted({o.zone for o in instance_type.offerings}),
    }


def _price(value: float | None, estimated: bool) -> str:
    if value is None:
        return "-"
    return f"${value:.4f}" + (" (est.)" if estimated else "")


@app.command("catalog")
def catalog(
    prices: Annotated[
        Path | None,
        typer.Option("--prices", help="CSV of instance_type,usd_per_hour (on-demand); unlisted types are not offered."),
    ] = None,
    zones: Annotated[str, typer.Option("--zones", help="Comma-separated availability zones to offer in.")] = ",".join(
        DEFAULT_ZONES
    ),
    output: Annotated[OutputFormat, typer.Option("--output", "-o", help="table or json.")] = OutputFormat.table,
) -> None:
    """List instance types: vCPU, memory, arch, allocatable cpu/memory/pods and on-demand price."""
    zone_list = tuple(z.strip() for z in zones.split(",") if z.strip())
    try:
        price_map = read_prices_csv(prices) if prices is not None else None
        types = load_catalog(zone_list or DEFAULT_ZONES, price_map)
    except (PricesFileError, ValueError) as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(code=2) from None
    current = {spec.name: spec.current_generation for spec in load_snapshot().specs}
    rows = [_row(t, current.get(t.name, False)) for t in types]
    if output is OutputFormat.json:
        typer.echo(json.dumps(rows, indent=1))
        return
    table = Table(title=f"{len(rows)} instance types in {', '.join(zone_list)}")
    for column in ("name", "vCPU", "memory", "arch", "alloc cpu", "alloc memory", "pods", "on-demand $/h", "spot $/h"):
        table.add_column(column, justify="left" if column in ("name", "arch") else "right")
    for row in rows:
        alloc = row["allocatable"]
        table.add_row(
            row["name"],
            str(row["vcpu"]),
            f"{row['memory_mib'] / 1024:g}Gi",
            row["arch"],
            str(alloc["cpu"]),
            str(alloc["memory"]),
            str(alloc["pods"]),
            _price(row["price"], row["price_estimated"]),
            _price(row["spot_price"], True),
        )
    Console(width=140).print(table)
