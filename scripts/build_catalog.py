"""Build the offline instance type snapshot shipped in `nodewright/data/`.

Usage:
    python scripts/build_catalog.py                 # from moto's copy of AWS's us-east-1 data
    python scripts/build_catalog.py --live          # from your AWS account (default credentials)
    python scripts/build_catalog.py --region eu-west-1 --output /tmp/eu-west-1.json.gz --live

It calls DescribeInstanceTypes and DescribeInstanceTypeOfferings (every page) through
`nodewright.adapters.aws.instance_types`, keeps the types Nodewright can launch, and writes
`{"region", "source", "instance_types": [InstanceSpec record + "zones"]}` as gzip-compressed,
compact JSON. The gzip header carries no timestamp, so an unchanged catalog rebuilds to identical
bytes. moto ships the instance type descriptions and per-zone offerings AWS published for each
region, which is why the default needs no AWS account.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path
from typing import Any

import boto3

from nodewright.adapters.aws.instance_types import OfferedSpec, fetch_offered_specs

DEFAULT_OUTPUT = Path(__file__).resolve().parent.parent / "nodewright" / "data" / "us-east-1-instance-types.json.gz"


def snapshot(entries: list[OfferedSpec], region: str, source: str) -> dict[str, Any]:
    """The snapshot document for `entries`."""
    return {
        "region": region,
        "source": source,
        "instance_types": [{**e.spec.to_record(), "zones": list(e.zones)} for e in entries],
    }


def write(document: dict[str, Any], output: Path) -> int:
    """Write the document as deterministic gzip-compressed compact JSON; return the byte size."""
    raw = json.dumps(document, separators=(",", ":"), sort_keys=False).encode()
    data = gzip.compress(raw, compresslevel=9, mtime=0)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_bytes(data)
    return len(data)


def fetch(region: str, live: bool) -> list[OfferedSpec]:
    """The launchable instance types of `region`, from AWS (`live`) or from moto's data."""
    if live:
        return fetch_offered_specs(boto3.client("ec2", region_name=region))
    from moto import mock_aws

    with mock_aws():
        return fetch_offered_specs(boto3.client("ec2", region_name=region))


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--region", default="us-east-1")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument("--live", action="store_true", help="query AWS instead of moto's bundled data")
    args = parser.parse_args(argv)
    entries = fetch(args.region, args.live)
    source = "aws" if args.live else "moto (AWS-published instance type data)"
    size = write(snapshot(entries, args.region, source), args.output)
    current = sum(1 for e in entries if e.spec.current_generation)
    print(f"{args.output}: {len(entries)} instance types ({current} current generation), {size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
