"""Pathological scheduling inputs: one pass's time and peak memory on shapes that were quadratic.

Role: the solver groups identical pods into classes; inputs where every pod is a class of its own
and brings its own constraint are its worst case. Each case builds one `SchedulingInput` (the
scheduling benchmark's 400 types, one NodePool, `bench.scheduling`) and times one cold `solve()`:

* `anti-affinity`: N pods, each with its own label and a required hostname anti-affinity term
  on it (10,000 took 78 s before the topology groups were indexed: quadratic);
* `tolerations`: N pods, each with 500 tolerations of its own (each pod's tolerations hashed at
  every memo look-up before they were numbered: 2.6 s of CPU at 1,000);
* `plan-tolerations`: the `tolerations` pods as a YAML file of Pod manifests (1,000 pods: 32 MB),
  planned end to end by `nodewright plan -f FILE --default-nodepool` in a child process: its CPU
  seconds and peak RSS, reading the file included (`--keep DIR` keeps the file, to run `plan` on
  it by hand);
* `provisioner`: N `anti-affinity` pods of one tenant and a 300-replica Deployment of another,
  through the real provisioner (in-memory cluster, cloud and store; `ProvisionerOptions`'s solve
  budget): each pass's wall and CPU time, what it launched and deferred, and whether the other
  tenant's pods all had capacity after the first pass. Passes run until every pod has a claim.

Run: `python -m bench.pathological [--case anti-affinity:10000] [--case tolerations:1000]
[--case plan-tolerations:1000 [--keep DIR]] [--case provisioner:10000]`.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.harness.instance_types import benchmark_types, default_pool, scheduling_input
from nodewright.config.documents import dump_yaml
from nodewright.controllers.assembly import build_provisioner
from nodewright.controllers.observe import RecordingObserver
from nodewright.controllers.provisionoptions import ProvisionerOptions, StaticConfiguration
from nodewright.engine.scheduling import solve
from nodewright.inmemory.catalog import FixedCatalog
from nodewright.inmemory.clock import VirtualClock
from nodewright.inmemory.cloud import FakeCloudProvider
from nodewright.inmemory.cluster import InMemoryCluster
from nodewright.inmemory.state import InMemoryStateStore
from nodewright.model import labels as wk
from nodewright.model.instancetype import InstanceType
from nodewright.model.pod import AffinityTerm, Pod
from nodewright.model.resources import Resources
from nodewright.model.selectors import LabelSelector
from nodewright.model.taints import Toleration

CASES = (
    "anti-affinity:2500",
    "anti-affinity:5000",
    "anti-affinity:10000",
    "tolerations:1000",
    "plan-tolerations:1000",
    "provisioner:10000",
)
OTHER_TENANT = 300
START = 1_800_000_000.0
# What a pod the kube-scheduler could not place looks like (the provisioner's input).
PENDING: dict[str, Any] = {"owner_kind": "ReplicaSet", "unschedulable": True, "phase": "Pending"}


def pods(shape: str, count: int, namespace: str = "default") -> list[Pod]:
    """`count` pods of the named shape (see the module docstring), pending."""
    requests = Resources.of(cpu="100m", memory="128Mi", pods=1)
    out = []
    for i in range(count):
        if shape == "anti-affinity":
            term = AffinityTerm(LabelSelector((("app", f"a{i}"),)), wk.HOSTNAME, frozenset({namespace}))
            labels = {"app": f"a{i}"}
            out.append(Pod(namespace, f"p{i}", labels=labels, requests=requests, anti_affinity=(term,), **PENDING))
        elif shape == "tolerations":
            tolerations = tuple(Toleration(f"k{i}-{j}", "Equal", "v", "NoSchedule") for j in range(500))
            out.append(Pod(namespace, f"p{i}", requests=requests, tolerations=tolerations, **PENDING))
        elif shape == "deployment":
            out.append(Pod(namespace, f"web-{i}", labels={"app": "web"}, requests=requests, **PENDING))
        else:
            raise ValueError(f"unknown shape {shape!r}")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Time each case; print seconds (wall, and CPU: what a shared machine does not blur), claims,
    unschedulable pods and the peak RSS so far.
    """
    parser = argparse.ArgumentParser(prog="python -m bench.pathological", description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", action="append", metavar="SHAPE:PODS", help=f"default: {', '.join(CASES)}")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="write the plan- cases' files here and keep them")
    args = parser.parse_args(argv)
    types = benchmark_types()
    for case in args.case or CASES:
        shape, _, count = case.partition(":")
        if shape == "provisioner":
            provisioner_passes(int(count), types)
            continue
        if shape.startswith("plan-"):
            plan_file(shape.removeprefix("plan-"), int(count), args.keep)
            continue
        inp = scheduling_input(pods(shape, int(count)), types, default_pool())
        started, cpu = time.perf_counter(), time.process_time()
        result = solve(inp)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"{shape} {int(count):,}: {seconds:.2f} s ({cpu:.2f} s CPU), {len(result.claims)} claims, "
            f"{len(result.unschedulable)} unschedulable, peak RSS {peak:.0f} MB"
        )
    return 0


def pod_manifests(shape: str, count: int) -> str:
    """The `tolerations` pods as Pod manifests, one YAML document each (what `kubectl get pods -o yaml` holds)."""
    if shape != "tolerations":
        raise ValueError(f"no file for shape {shape!r}")
    manifests = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"p{i}", "namespace": "default"},
            "spec": {
                "containers": [
                    {"name": "app", "image": "app:1", "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}
                ],
                "tolerations": [
                    {"key": f"k{i}-{j}", "operator": "Equal", "value": "v", "effect": "NoSchedule"} for j in range(500)
                ],
            },
        }
        for i in range(count)
    ]
    return dump_yaml(manifests)


def plan_file(shape: str, count: int, keep: Path | None) -> None:
    """A `plan-` case: the pods written to a file, then `nodewright plan` of it in a child process, timed."""
    with tempfile.TemporaryDirectory() as scratch:
        folder = keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{shape}-{count}.yaml"
        path.write_text(pod_manifests(shape, count), encoding="utf-8")
        command = [sys.executable, "-c", "import sys; from nodewright.cli import main; sys.exit(main())"]
        started, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run(
            [*command, "plan", "-f", str(path), "--default-nodepool", "-o", "json"],
            capture_output=True,
            text=True,
            check=False,
        )
        seconds, after = time.perf_counter() - started, resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        size = path.stat().st_size / 1e6
        outcome = "planned" if done.returncode == 0 else f"exit {done.returncode}: {done.stderr.strip()[-300:]}"
        print(
            f"plan {shape} {count:,} ({size:.0f} MB of YAML{f', kept at {path}' if keep else ''}): {seconds:.2f} s "
            f"({cpu:.2f} s CPU), {outcome}, peak RSS of plan {after.ru_maxrss / 1024:.0f} MB"
        )


def provisioner_passes(count: int, types: Sequence[InstanceType]) -> None:
    """The `provisioner` case: passes until every pod has a claim (at most ten), each timed."""
    clock = VirtualClock(START)
    cluster = InMemoryCluster(clock)
    store = InMemoryStateStore()
    hard, web = pods("anti-affinity", count, "tenant-a"), pods("deployment", OTHER_TENANT, "tenant-b")
    cluster.add_pods([replace(p, created_at=clock.now()) for p in hard + web])
    provisioner = build_provisioner(
        cluster=cluster,
        cloud=FakeCloudProvider(clock),
        store=store,
        clock=clock,
        config=StaticConfiguration((default_pool(),)),
        catalog=FixedCatalog(tuple(types)),
        observer=RecordingObserver(),
        options=ProvisionerOptions(),
        sleep=lambda seconds: None,
    )
    wanted = {p.key for p in hard + web}
    for number in range(1, 11):
        started, cpu = time.perf_counter(), time.process_time()
        report = provisioner.provision(cluster.snapshot())
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        placed = {p for c in store.claims() for p in c.pods}
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"provisioner {count:,} + {OTHER_TENANT}, pass {number}: {seconds:.2f} s ({cpu:.2f} s CPU; "
            f"solve {report.solve_seconds:.2f} s), {len(report.launched)} launched, {len(report.deferred)} deferred, "
            f"{len(report.unschedulable)} unschedulable, other tenant all placed: "
            f"{all(p.key in placed for p in web)}, peak RSS {peak:.0f} MB"
        )
        if wanted <= placed or report.unschedulable:
            break
        clock.advance(1.0)


if __name__ == "__main__":
    sys.exit(main())
