"""`nodewright catalog`: list the instance types Nodewright would choose from, with allocatable and price.

Reads the offline us-east-1 catalog shipped in the package (no AWS account needed). With
`--prices FILE` (CSV `instance_type,usd_per_hour`) on-demand prices come from that file and types
it does not list are not offered; otherwise prices are per-family estimates and are marked so.
Spot prices are always estimates offline (see `nodewright.adapters.offline_catalog`).

With `-f FILE` (NodeOverlays, and optionally NodePools: Karpenter manifests as for `plan`) each
row also shows the effective price, after the overlays as the provisioner applies them to the
NodePool named by `--nodepool` (default: the only NodePool in the files, else a NodePool
"default" with no labels), and which overlays set it. Without overlays the effective price is
the list price.
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
from nodewright.cli.plan import DEFAULT_NODEPOOL
from nodewright.config.documents import NODEOVERLAY, NODEPOOL, Loaded, combine
from nodewright.config.files import expand
from nodewright.config.stream import parse_yaml
from nodewright.engine.overlay import Overlaid, apply_overlays
from nodewright.engine.scheduling import PoolCapacity
from nodewright.model.instancetype import InstanceType
from nodewright.model.nodeoverlay import NodeOverlay
from nodewright.model.nodepool import NodePool
from nodewright.model.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS

_SUMMARY = (CPU, MEMORY, PODS)


class OutputFormat(StrEnum):
    """How `catalog` prints."""

    table = "table"
    json = "json"


def _cheapest(instance_type: InstanceType, capacity_type: str) -> float | None:
    prices = [o.price for o in instance_type.available_offerings() if o.capacity_type == capacity_type]
    return min(prices) if prices else None


def _row(instance_type: InstanceType, current: bool, effective: InstanceType, overlays: list[str]) -> dict[str, Any]:
    allocatable = effective.allocatable
    formatted = allocatable.format()
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
        "price": _cheapest(instance_type, "on-demand"),
        "spot_price": _cheapest(instance_type, "spot"),
        "effective_price": _cheapest(effective, "on-demand"),
        "effective_spot_price": _cheapest(effective, "spot"),
        "overlays": overlays,
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
    files: Annotated[
        list[Path] | None,
        typer.Option("-f", "--file", help="NodeOverlays (and NodePools) to price with: file or directory, repeatable."),
    ] = None,
    nodepool: Annotated[
        str | None, typer.Option("--nodepool", help="The NodePool (from -f) whose effective prices to show.")
    ] = None,
) -> None:
    """List instance types: vCPU, memory, arch, allocatable cpu/memory/pods, on-demand and spot
    price, and with -f the effective price after NodeOverlays.
    """
    zone_list = tuple(z.strip() for z in zones.split(",") if z.strip())
    try:
        price_map = read_prices_csv(prices) if prices is not None else None
        types = load_catalog(zone_list or DEFAULT_ZONES, price_map)
        pool, overlays = _overlay_input(files or [], nodepool)
    except (PricesFileError, ValueError) as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(code=2) from None
    overlaid = apply_overlays((PoolCapacity(pool, tuple(types)),), overlays)
    for name, why in sorted(overlaid.conflicts.items()):
        typer.secho(f"NodeOverlay/{name}: not applied: {why}", err=True, fg=typer.colors.YELLOW)
    current = {spec.name: spec.current_generation for spec in load_snapshot().specs}
    effective = overlaid.pools[0].instance_types
    applied = _applied(overlaid)
    rows = [
        _row(t, current.get(t.name, False), e, applied.get(t.name, [])) for t, e in zip(types, effective, strict=True)
    ]
    if output is OutputFormat.json:
        typer.echo(json.dumps(rows, indent=1))
        return
    table = Table(title=f"{len(rows)} instance types in {', '.join(zone_list)}")
    columns = ["name", "vCPU", "memory", "arch", "alloc cpu", "alloc memory", "pods", "on-demand $/h", "spot $/h"]
    if overlays:
        columns += ["effective on-demand", "effective spot", "overlays"]
    for column in columns:
        table.add_column(column, justify="left" if column in ("name", "arch", "overlays") else "right")
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
            *(
                (
                    _price(row["effective_price"], row["price_estimated"]),
                    _price(row["effective_spot_price"], True),
                    ",".join(row["overlays"]),
                )
                if overlays
                else ()
            ),
        )
    Console(width=190 if overlays else 140).print(table)


def _applied(overlaid: Overlaid) -> dict[str, list[str]]:
    """Instance type -> the overlays that set its prices or added capacity (the one pool's)."""
    names: dict[str, set[str]] = {}
    for change in overlaid.prices:
        names.setdefault(change.instance_type, set()).add(change.overlay)
    for (_, type_name), overlays in overlaid.capacity.items():
        names.setdefault(type_name, set()).update(overlays)
    return {type_name: sorted(found) for type_name, found in names.items()}


def _overlay_input(files: list[Path], nodepool: str | None) -> tuple[NodePool, list[NodeOverlay]]:
    """The NodePool to price for and the NodeOverlays, from -f files; ValueError names what is wrong."""
    paths, missing = expand(files)
    parts: list[Loaded] = []
    for path in paths:
        try:
            parts.append(parse_yaml(path.read_text(encoding="utf-8"), str(path)))
        except (OSError, UnicodeDecodeError) as error:
            raise ValueError(f"{path}: cannot read: {error}") from None
    loaded = combine(parts)
    problems = [*missing, *loaded.problems]
    if problems:
        raise ValueError("; ".join(str(p) for p in problems))
    pools = {d.name: d.model for d in loaded.of_kind(NODEPOOL) if isinstance(d.model, NodePool)}
    overlays = [d.model for d in loaded.of_kind(NODEOVERLAY) if isinstance(d.model, NodeOverlay)]
    if nodepool is not None:
        if nodepool not in pools:
            raise ValueError(
                f"--nodepool: NodePool {nodepool!r} is not in the files ({', '.join(sorted(pools)) or 'none'})"
            )
        return pools[nodepool], overlays
    if len(pools) > 1:
        raise ValueError(f"the files hold {len(pools)} NodePools: choose one with --nodepool")
    return next(iter(pools.values()), DEFAULT_NODEPOOL), overlays
