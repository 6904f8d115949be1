"""Behaviours of Karpenter's AWS instance-type suite (aws/karpenter-provider-aws,
pkg/providers/instancetype/suite_test.go) that hold with the bundled us-east-1 catalog: which
types a NodePool and a pod's requirements select, and the labels their nodes carry, as manifests
through `solve()` and `nodewright plan` (see `harness.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from nodewright.model import labels as wk
from tests.conformance.harness import Case, Expectation, Outcome, cases_of, check, nodepool, pod, req

POOL = nodepool()


def label_of(key: str, accept: Callable[[str], bool]) -> Expectation:
    def expect(o: Outcome) -> None:
        value = o.node_of("p").labels.get(key)
        assert value is not None, (key, o.pending)
        assert accept(value), (key, value)

    return expect


def pending(o: Outcome) -> None:
    assert "p" in o.pending, o.placed


CASES = [
    Case(
        "no-gpu-type-for-a-plain-pod",
        "exotic types: a plain pod never gets a GPU type",
        (POOL, pod("p")),
        lambda o: wk.INSTANCE_GPU_COUNT not in o.node_of("p").labels,
    ),
    Case(
        "no-metal-type-for-a-plain-pod",
        "exotic types: a plain pod never gets a metal type",
        (POOL, pod("p", cpu="8")),
        lambda o: o.node_of("p").labels[wk.INSTANCE_SIZE] != "metal",
    ),
    Case(
        "gpu-pod-gets-a-gpu-type",
        "GPU: a pod requesting nvidia.com/gpu gets an NVIDIA type",
        (POOL, pod("p", gpu=1)),
        label_of(wk.INSTANCE_GPU_MANUFACTURER, lambda v: v == "nvidia"),
    ),
    Case(
        "gpu-name-selectable",
        "GPU: instance-gpu-name selects the GPU model",
        (POOL, pod("p", gpu=1, node_selector={wk.INSTANCE_GPU_NAME: "t4"})),
        label_of(wk.INSTANCE_GPU_NAME, lambda v: v == "t4"),
    ),
    Case(
        "gpu-count-selectable",
        "GPU: instance-gpu-count Gt selects multi-GPU types",
        (POOL, pod("p", gpu=1, required=[[req(wk.INSTANCE_GPU_COUNT, "Gt", "3")]])),
        label_of(wk.INSTANCE_GPU_COUNT, lambda v: int(v) > 3),
    ),
    Case(
        "arm64-selectable",
        "architecture: a pod selecting arm64 gets a Graviton type when the NodePool allows it",
        (nodepool(requirements=[req(wk.ARCH, "In", "amd64", "arm64")]), pod("p", node_selector={wk.ARCH: "arm64"})),
        label_of(wk.INSTANCE_CPU_MANUFACTURER, lambda v: v == "aws"),
    ),
    Case(
        "arm64-refused-by-an-amd64-pool",
        "architecture: an amd64 NodePool does not provision for an arm64 pod",
        (POOL, pod("p", node_selector={wk.ARCH: "arm64"})),
        pending,
    ),
    Case(
        "cpu-manufacturer-selectable",
        "labels: instance-cpu-manufacturer selects AMD types",
        (POOL, pod("p", node_selector={wk.INSTANCE_CPU_MANUFACTURER: "amd"})),
        label_of(wk.INSTANCE_FAMILY, lambda v: "a" in v[2:]),
    ),
    Case(
        "local-nvme-selectable",
        "labels: instance-local-nvme Exists selects types with instance storage",
        (POOL, pod("p", required=[[req(wk.INSTANCE_LOCAL_NVME, "Exists")]])),
        label_of(wk.INSTANCE_LOCAL_NVME, lambda v: int(v) > 0),
    ),
    Case(
        "network-bandwidth-selectable",
        "labels: instance-network-bandwidth Gt selects fast types",
        (POOL, pod("p", required=[[req(wk.INSTANCE_NETWORK_BANDWIDTH, "Gt", "20000")]])),
        label_of(wk.INSTANCE_NETWORK_BANDWIDTH, lambda v: int(v) > 20000),
    ),
    Case(
        "ebs-bandwidth-selectable",
        "labels: instance-ebs-bandwidth Gt selects types with fast EBS",
        (POOL, pod("p", required=[[req(wk.INSTANCE_EBS_BANDWIDTH, "Gt", "10000")]])),
        label_of(wk.INSTANCE_EBS_BANDWIDTH, lambda v: int(v) > 10000),
    ),
    Case(
        "encryption-in-transit-selectable",
        "labels: instance-encryption-in-transit-supported selects types that support it",
        (POOL, pod("p", node_selector={wk.INSTANCE_ENCRYPTION_IN_TRANSIT: "true"})),
        label_of(wk.INSTANCE_ENCRYPTION_IN_TRANSIT, lambda v: v == "true"),
    ),
    Case(
        "flex-refused-by-selector",
        "labels: instance-capability-flex false keeps a pod off flex types",
        (POOL, pod("p", node_selector={wk.INSTANCE_CAPABILITY_FLEX: "false"})),
        label_of(wk.INSTANCE_FAMILY, lambda v: not v.endswith("-flex")),
    ),
    Case(
        "generation-gt",
        "NodePool requirements: instance-generation Gt 6 gives a 7th-generation or later type",
        (nodepool(requirements=[req(wk.INSTANCE_GENERATION, "Gt", "6")]), pod("p")),
        label_of(wk.INSTANCE_GENERATION, lambda v: int(v) > 6),
    ),
    Case(
        "category-in",
        "NodePool requirements: instance-category In [r] gives a memory-optimised type",
        (nodepool(requirements=[req(wk.INSTANCE_CATEGORY, "In", "r")]), pod("p")),
        label_of(wk.INSTANCE_CATEGORY, lambda v: v == "r"),
    ),
    Case(
        "family-not-in",
        "NodePool requirements: instance-family NotIn keeps those families out",
        (
            nodepool(
                requirements=[
                    req(wk.INSTANCE_CATEGORY, "In", "t", "m"),
                    req(wk.INSTANCE_FAMILY, "NotIn", "t3", "t3a", "t4g", "t2"),
                ]
            ),
            pod("p"),
        ),
        label_of(wk.INSTANCE_FAMILY, lambda v: v not in ("t3", "t3a", "t4g", "t2")),
    ),
    Case(
        "size-in",
        "NodePool requirements: instance-size In [2xlarge]",
        (nodepool(requirements=[req(wk.INSTANCE_SIZE, "In", "2xlarge")]), pod("p")),
        label_of(wk.INSTANCE_SIZE, lambda v: v == "2xlarge"),
    ),
    Case(
        "memory-request-sizes-the-type",
        "allocatable: a pod's memory request picks a type whose allocatable holds it (7.5% VM overhead)",
        (POOL, pod("p", memory="15Gi", cpu="100m")),
        label_of(wk.INSTANCE_MEMORY, lambda v: int(v) > 16384),
    ),
    Case(
        "sustained-clock-unknown-is-not-guessed",
        "labels: instance-cpu-sustained-clock-speed-mhz is only on types EC2 gives a clock for",
        (POOL, pod("p", required=[[req(wk.INSTANCE_CPU_SUSTAINED_CLOCK_SPEED_MHZ, "Gt", "3000")]])),
        pending,
        differs="the bundled offline catalog has no clock speeds; live catalogs (DescribeInstanceTypes) do",
    ),
    Case(
        "tenancy-default",
        "labels: instance-tenancy default is on every node Nodewright launches",
        (POOL, pod("p", node_selector={wk.INSTANCE_TENANCY: "default"})),
        label_of(wk.INSTANCE_TENANCY, lambda v: v == "default"),
    ),
]


@pytest.mark.parametrize("case", cases_of(CASES))
def test_instance_type_behaviour(case: Case, tmp_path: Path) -> None:
    check(case, tmp_path)
