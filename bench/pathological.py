"""Pathological scheduling inputs: one pass's time and peak memory on shapes that were quadratic.

Role: the solver groups identical pods into classes; inputs where every pod is a class of its own
and brings its own constraint are its worst case. Each case builds one `SchedulingInput` (the
scheduling benchmark's 400 types, one NodePool, `bench.scheduling`) and times one cold `solve()`:

* `anti-affinity`: N pods, each with its own label and a required hostname anti-affinity term
  on it (10,000 took 78 s before the topology groups were indexed: quadratic);
* `tolerations`: N pods, each with 500 tolerations of its own.

Run: `python -m bench.pathological [--case anti-affinity:10000] [--case tolerations:1000]`.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from collections.abc import Sequence

from bench.harness.instance_types import benchmark_types, default_pool, scheduling_input
from nodewright.engine.scheduling import solve
from nodewright.model import labels as wk
from nodewright.model.pod import AffinityTerm, Pod
from nodewright.model.resources import Resources
from nodewright.model.selectors import LabelSelector
from nodewright.model.taints import Toleration

CASES = ("anti-affinity:2500", "anti-affinity:5000", "anti-affinity:10000", "tolerations:1000")


def pods(shape: str, count: int) -> list[Pod]:
    """`count` pods of the named shape (see the module docstring)."""
    requests = Resources.of(cpu="100m", memory="128Mi", pods=1)
    out = []
    for i in range(count):
        if shape == "anti-affinity":
            term = AffinityTerm(LabelSelector((("app", f"a{i}"),)), wk.HOSTNAME, frozenset({"default"}))
            out.append(Pod("default", f"p{i}", labels={"app": f"a{i}"}, requests=requests, anti_affinity=(term,)))
        elif shape == "tolerations":
            tolerations = tuple(Toleration(f"k{i}-{j}", "Equal", "v", "NoSchedule") for j in range(500))
            out.append(Pod("default", f"p{i}", requests=requests, tolerations=tolerations))
        else:
            raise ValueError(f"unknown shape {shape!r}")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Time each case; print seconds, claims, unschedulable pods and the peak RSS so far."""
    parser = argparse.ArgumentParser(prog="python -m bench.pathological", description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", action="append", metavar="SHAPE:PODS", help=f"default: {', '.join(CASES)}")
    args = parser.parse_args(argv)
    types = benchmark_types()
    for case in args.case or CASES:
        shape, _, count = case.partition(":")
        inp = scheduling_input(pods(shape, int(count)), types, default_pool())
        started = time.perf_counter()
        result = solve(inp)
        seconds = time.perf_counter() - started
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"{shape} {int(count):,}: {seconds:.2f} s, {len(result.claims)} claims, "
            f"{len(result.unschedulable)} unschedulable, peak RSS {peak:.0f} MB"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
