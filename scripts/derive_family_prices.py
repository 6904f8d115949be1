"""Derive per-family on-demand price estimates (`nodewright/data/family-prices.csv`).

Usage:
    python scripts/derive_family_prices.py [--prices /work/shared/data/ec2_ondemand_us_east_1.csv]

Input: a real us-east-1 on-demand price list (`instance_type,usd_per_hour`, shared-tenancy Linux)
and the offline instance type snapshot (`nodewright/data/us-east-1-instance-types.json.gz`, built
by `scripts/build_catalog.py`) for each type's vCPUs, memory and accelerators. Only this script
reads the price list; the runtime reads the CSV it writes, which is committed.

Model: within one family EC2 prices are linear in what the size buys, so for each family we fit

    usd_per_hour = usd_per_vcpu_hour x vCPUs + usd_per_gib_hour x GiB + usd_per_accelerator_hour x devices

by non-negative least squares over the family's priced sizes (devices = GPUs or Neuron devices;
that term is dropped for families without them), on relative error; sizes more than 5% off the
first fit (some metal sizes are priced apart from their family) are dropped and the fit redone.
In families whose sizes keep a fixed GiB/vCPU ratio (most of them) the split between
the vCPU and GiB rates is arbitrary but the estimate for any size of the family is exact;
burstable families (t3: priced per GiB) and GPU families (g5: priced per GPU plus per vCPU) need
the extra terms. A family with no priced size borrows the
rates of the nearest older generation with the same category and suffix (r9gd <- r8gd) or, failing
that, of the same category's latest priced family (t8i <- t4g); the `basis` column records that.

Output columns: family, usd_per_vcpu_hour, usd_per_gib_hour, usd_per_accelerator_hour, samples,
max_error_pct (the worst relative error of the fit over the sizes it kept), basis
("fit" or "borrowed:<family>").
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import math
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import nnls

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PRICES = Path("/work/shared/data/ec2_ondemand_us_east_1.csv")
SNAPSHOT = ROOT / "nodewright" / "data" / "us-east-1-instance-types.json.gz"
OUTPUT = ROOT / "nodewright" / "data" / "family-prices.csv"
OUTLIER_PCT = 5.0
_FAMILY = re.compile(r"^([a-z]+)(-[0-9]+tb)?([0-9]+)(.*)$")


def devices(record: dict[str, Any]) -> int:
    """GPUs or Neuron devices of a snapshot record."""
    return int(record.get("gpu_count", 0)) + int(record.get("accelerator_count", 0))


def features(record: dict[str, Any], with_devices: bool) -> list[float]:
    """The model's inputs for one type: vCPUs, GiB and (optionally) devices."""
    row = [float(record["vcpus"]), record["memory_mib"] / 1024]
    return [*row, float(devices(record))] if with_devices else row


def fit_family(rows: list[tuple[dict[str, Any], float]]) -> tuple[list[float], float, int]:
    """(vcpu, gib, device) hourly rates, the worst relative error in percent, and outliers dropped.

    Fitted by NNLS on relative error; sizes then more than OUTLIER_PCT off (some metal sizes are
    priced apart from the rest of their family) are dropped and the fit is redone once.
    """
    with_devices = any(devices(r) for r, _ in rows)
    a = np.array([features(r, with_devices) for r, _ in rows])
    b = np.array([price for _, price in rows])
    # Weight each equation by 1/price so small sizes matter as much as large ones (relative error).
    coefficients, _ = nnls(a / b[:, None], np.ones(len(b)))
    error = np.abs(a @ coefficients - b) / b
    keep = error <= OUTLIER_PCT / 100
    if 2 <= keep.sum() < len(b):
        coefficients, _ = nnls(a[keep] / b[keep, None], np.ones(int(keep.sum())))
        error = np.abs(a[keep] @ coefficients - b[keep]) / b[keep]
    else:
        keep = np.ones(len(b), dtype=bool)
    rates = [*coefficients.tolist(), 0.0] if not with_devices else coefficients.tolist()
    return rates, float(np.max(error) * 100), int(len(b) - keep.sum())


def borrow(family: str, fitted: dict[str, list[float]]) -> str | None:
    """The priced family whose rates an unpriced one borrows (see the module docstring)."""
    match = _FAMILY.match(family)
    if match is None:
        return None
    category, generation, suffix = match[1], int(match[3]), match[4]
    same_shape = [
        (int(m[3]), f)
        for f in fitted
        if (m := _FAMILY.match(f)) and m[1] == category and m[4] == suffix and int(m[3]) < generation
    ]
    if same_shape:
        return max(same_shape)[1]
    same_category = [(int(m[3]), f) for f in fitted if (m := _FAMILY.match(f)) and m[1] == category]
    return max(same_category)[1] if same_category else None


def derive(prices_path: Path) -> list[dict[str, Any]]:
    """The rows of family-prices.csv."""
    snapshot = json.loads(gzip.decompress(SNAPSHOT.read_bytes()))
    specs = {r["name"]: r for r in snapshot["instance_types"]}
    by_family: dict[str, list[tuple[dict[str, Any], float]]] = defaultdict(list)
    with prices_path.open(newline="") as handle:
        for row in csv.DictReader(handle):
            spec = specs.get(row["instance_type"])
            if spec is not None and float(row["usd_per_hour"]) > 0:
                by_family[row["instance_type"].split(".")[0]].append((spec, float(row["usd_per_hour"])))
    out: dict[str, dict[str, Any]] = {}
    fitted: dict[str, list[float]] = {}
    for family in sorted(by_family):
        rates, worst, dropped = fit_family(by_family[family])
        fitted[family] = rates
        out[family] = _row(family, rates, len(by_family[family]) - dropped, worst, "fit")
    for family in sorted({name.split(".")[0] for name in specs} - set(fitted)):
        source = borrow(family, fitted)
        if source is not None:
            out[family] = _row(family, fitted[source], 0, float("nan"), f"borrowed:{source}")
    return [out[f] for f in sorted(out)]


def _row(family: str, rates: list[float], samples: int, worst: float, basis: str) -> dict[str, Any]:
    return {
        "family": family,
        "usd_per_vcpu_hour": f"{rates[0]:.8f}",
        "usd_per_gib_hour": f"{rates[1]:.8f}",
        "usd_per_accelerator_hour": f"{rates[2]:.8f}",
        "samples": samples,
        "max_error_pct": "" if math.isnan(worst) else f"{worst:.2f}",
        "basis": basis,
    }


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prices", type=Path, default=DEFAULT_PRICES)
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    rows = derive(args.prices)
    with args.output.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    errors = sorted(float(r["max_error_pct"]) for r in rows if r["max_error_pct"])
    borrowed = [r["family"] for r in rows if r["basis"] != "fit"]
    print(
        f"{args.output}: {len(rows)} families; fit error median {errors[len(errors) // 2]:.2f}%, "
        f"90th pct {errors[int(len(errors) * 0.9)]:.2f}%, max {errors[-1]:.2f}%; borrowed: {', '.join(borrowed)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
