"""The soak, small: a warm container's caches stay bounded under configuration and pod churn.

Faked: EC2 (the bundled snapshot's specs and fixed prices feed the real `LiveCatalog`) and the
cluster (pods and nodes built in memory, new pod objects every round). Observed: how many
configurations the catalog keeps, how many pod versions the solver cache remembers, and the
process's peak RSS against the soak's bound (`python -m bench.soak` runs the full size).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench import soak
from nodewright.inmemory.clock import VirtualClock
from nodewright.model.nodeclass import EC2NodeClass, KubeletConfiguration


def test_the_live_catalog_keeps_the_most_recently_used_configurations_only() -> None:
    catalog = soak.live_catalog(VirtualClock(1_800_000_000), max_configurations=3)
    classes = [EC2NodeClass(f"class-{i}", kubelet=KubeletConfiguration(max_pods=10 + i)) for i in range(5)]
    first = catalog.instance_types(classes[0])
    for nodeclass in classes[1:]:
        catalog.instance_types(nodeclass)
        assert catalog.instance_types(classes[0]) is first  # in use every pass: kept
    assert len(catalog._built) == 3
    # The least recently used was let go: asked again, it is built again, with its own kubelet.
    again = catalog.instance_types(classes[1])
    assert again is not catalog.instance_types(classes[4])
    assert {t.allocatable["pods"] for t in again} == {11_000}


def _fresh(call: str) -> list[float]:
    """`call` (a bench.soak expression) run in a process of its own: the peak RSS is the process's
    lifetime peak, which in a test worker would count every test that ran before.
    """
    code = f"import json; from bench import soak; print(json.dumps(list({call})))"
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True, timeout=300
    )
    return [float(x) for x in json.loads(done.stdout.strip().splitlines()[-1])]


def test_pod_churn_remembers_two_passes_of_pod_versions_at_most() -> None:
    peak, slowest, remembered = _fresh("soak.pod_churn(rounds=6, pods=1_000)")
    assert remembered == 2 * 1_000  # this pass's and the last pass's versions, not six passes'
    assert peak <= soak.BOUND_MB
    assert slowest < 5.0


def test_a_small_soak_holds_its_bound() -> None:
    (holds,) = _fresh("[soak.soak(configurations_=6, rounds=3, pods=500, keep=3).holds]")
    assert holds
