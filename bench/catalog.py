"""Time building the full offline us-east-1 catalog (`python -m bench.catalog`).

Measures, over several runs: a cold build (snapshot and family rates read and parsed, as a fresh
process or Lambda cold start does) and warm builds (data cached, InstanceTypes rebuilt, as every
NodePool/kubelet combination does). The target is <= 1 s for the full catalog.
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
import time

from nodewright.adapters.offline_catalog import DEFAULT_ZONES, load_catalog, load_family_rates, load_snapshot

RUNS = 7
TARGET_SECONDS = 1.0


def _cold() -> tuple[float, int]:
    load_snapshot.cache_clear()
    load_family_rates.cache_clear()
    start = time.perf_counter()
    types = load_catalog(DEFAULT_ZONES)
    return time.perf_counter() - start, len(types)


def _warm() -> float:
    start = time.perf_counter()
    load_catalog(DEFAULT_ZONES)
    return time.perf_counter() - start


def main() -> int:
    cold = [_cold() for _ in range(RUNS)]
    warm = [_warm() for _ in range(RUNS)]
    count = cold[0][1]
    cold_times = [c for c, _ in cold]
    print(
        f"machine: {platform.machine()} {platform.processor() or ''} {os.cpu_count()} cpus, "
        f"{platform.system()} {platform.release()}, Python {platform.python_version()}"
    )
    print(f"catalog: {count} instance types in {', '.join(DEFAULT_ZONES)}")
    for label, times in (("cold (parse + build)", cold_times), ("warm (build only)", warm)):
        print(
            f"{label:22s} median {statistics.median(times) * 1000:7.1f} ms  "
            f"min {min(times) * 1000:7.1f} ms  max {max(times) * 1000:7.1f} ms  over {RUNS} runs"
        )
    worst = max(cold_times)
    print(
        f"target <= {TARGET_SECONDS:.1f} s: {'met' if worst <= TARGET_SECONDS else 'MISSED'} (worst cold {worst:.3f} s)"
    )
    return 0 if worst <= TARGET_SECONDS else 1


if __name__ == "__main__":
    sys.exit(main())
