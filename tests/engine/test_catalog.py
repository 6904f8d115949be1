"""Capacity maths and labels of `nodewright.engine.catalog`, as decision tables plus invariants.

Expected figures follow Karpenter's AWS formulas (reference/karpenter-facts.md), worked by hand in
the ids' comments so a reader can check them.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nodewright.engine.catalog import (
    DEFAULT_EPHEMERAL_STORAGE,
    InstanceSpec,
    KubeletConfiguration,
    build_instance_type,
    ephemeral_storage,
    kube_reserved_cpu_milli,
    region_of,
)
from nodewright.model import labels as wk
from nodewright.model.instancetype import Offering
from nodewright.model.nodeclass import EBS, BlockDeviceMapping, EC2NodeClass
from nodewright.model.requirements import Requirements
from nodewright.model.resources import Resources

ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
M5_LARGE = InstanceSpec(
    "m5.large", vcpus=2, memory_mib=8192, max_enis=3, ipv4_per_eni=10, cpu_manufacturer="Intel",
    network_bandwidth_mbps=750, ebs_bandwidth_mbps=4750,
)  # fmt: skip
M7G_LARGE = InstanceSpec("m7g.large", vcpus=2, memory_mib=8192, arch="arm64", max_enis=3, ipv4_per_eni=10)
G5_XLARGE = InstanceSpec(
    "g5.xlarge", vcpus=4, memory_mib=16384, max_enis=4, ipv4_per_eni=15, gpu_name="A10G",
    gpu_manufacturer="NVIDIA", gpu_count=1, gpu_memory_mib=22888, local_nvme_gb=250,
)  # fmt: skip
INF2_XLARGE = InstanceSpec(
    "inf2.xlarge", vcpus=4, memory_mib=16384, max_enis=4, ipv4_per_eni=15, accelerator_name="Inferentia2",
    accelerator_manufacturer="AWS", accelerator_count=1, accelerator_core_count=2,
)  # fmt: skip
DL1 = InstanceSpec(
    "dl1.24xlarge", vcpus=96, memory_mib=786432, max_enis=15, ipv4_per_eni=50, gpu_name="Gaudi HL-205",
    gpu_manufacturer="Habana", gpu_count=8, gpu_memory_mib=32768,
)  # fmt: skip
M5_24XL = InstanceSpec("m5.24xlarge", vcpus=96, memory_mib=393216, max_enis=15, ipv4_per_eni=50)


def offerings(zones: tuple[str, ...] = ZONES, price: float = 0.1) -> list[Offering]:
    return [Offering(z, ct, price) for z in zones for ct in ("on-demand", "spot")]


def alloc(spec: InstanceSpec, kubelet: KubeletConfiguration | None, eni_limited: bool) -> dict[str, str | int]:
    return build_instance_type(spec, offerings(), kubelet, eni_limited=eni_limited).allocatable.format()


@pytest.mark.parametrize(
    ("spec", "kubelet", "eni_limited", "cpu", "memory", "pods"),
    [
        # 8192 - ceil(614.4)=7577 MiB; - (11*29+255)=574 - 100 eviction = 6903; cpu 2000-60-10
        pytest.param(M5_LARGE, None, True, "1930m", "6903Mi", 29, id="m5.large-karpenter-figures"),
        # arm64 loses a further 64 MiB: 7513 - 574 - 100
        pytest.param(M7G_LARGE, None, True, "1930m", "6839Mi", 29, id="m7g.large-arm64"),
        # 4 ENIs x 14 + 2 = 58 pods; 16384-1229=15155 - (11*58+255=893) - 100; cpu 4000-60-10-10
        pytest.param(G5_XLARGE, None, True, "3920m", "14162Mi", 58, id="g5.xlarge-gpu"),
        # not ENI-limited: 110 pods; 7577 - (11*110+255=1465) - 100
        pytest.param(M5_LARGE, None, False, "1930m", "6012Mi", 110, id="m5.large-not-eni-limited"),
        # 96 vCPU: 60+10+10+92*2.5=230 -> 310m; 15 ENIs x 49 + 2 = 737 pods;
        # 393216-ceil(29491.2)=363724 - (11*737+255=8362) - 100
        pytest.param(M5_24XL, None, True, "95690m", "355262Mi", 737, id="m5.24xlarge-many-enis"),
        # 7577 - (11*20+255=475) - 100
        pytest.param(
            M5_LARGE, KubeletConfiguration(max_pods=20), True, "1930m", "7002Mi", 20, id="maxPods-overrides-eni"
        ),
        pytest.param(M5_LARGE, KubeletConfiguration(max_pods=110), False, "1930m", "6012Mi", 110, id="maxPods-110"),
        # podsPerCore 4 x 2 vCPU = 8 < 29; 7577 - (88+255) - 100
        pytest.param(
            M5_LARGE, KubeletConfiguration(pods_per_core=4), True, "1930m", "7134Mi", 8, id="podsPerCore-caps"
        ),
        # podsPerCore 50 x 2 = 100 > 29: the ENI limit stays
        pytest.param(
            M5_LARGE, KubeletConfiguration(pods_per_core=50), True, "1930m", "6903Mi", 29, id="podsPerCore-loose"
        ),
        pytest.param(
            M5_LARGE,
            KubeletConfiguration(max_pods=50, pods_per_core=10),
            True,
            "1930m",
            "7002Mi",
            20,
            id="podsPerCore-caps-maxPods",
        ),
        pytest.param(
            M5_LARGE,
            KubeletConfiguration(kube_reserved=Resources.of(cpu="500m")),
            True,
            "1500m",
            "6903Mi",
            29,
            id="kubeReserved-cpu-only-replaces-cpu",
        ),
        pytest.param(
            M5_LARGE,
            KubeletConfiguration(kube_reserved=Resources.of(memory="1Gi"), system_reserved=Resources.of(cpu="100m")),
            True,
            "1830m",
            "6453Mi",
            29,
            id="kubeReserved-memory-and-systemReserved",
        ),
        # 5% of 7577 MiB = 378.85 MiB instead of 100Mi
        pytest.param(
            M5_LARGE,
            KubeletConfiguration(eviction_hard={"memory.available": "5%"}),
            True,
            "1930m",
            "6624Mi",
            29,
            id="evictionHard-percentage",
        ),
        # the larger of hard (100Mi) and soft (500Mi) is kept free
        pytest.param(
            M5_LARGE,
            KubeletConfiguration(eviction_soft={"memory.available": "500Mi"}),
            True,
            "1930m",
            "6503Mi",
            29,
            id="evictionSoft-larger-than-hard",
        ),
    ],
)
def test_allocatable(
    spec: InstanceSpec, kubelet: KubeletConfiguration | None, eni_limited: bool, cpu: str, memory: str, pods: int
) -> None:
    got = alloc(spec, kubelet, eni_limited=eni_limited)
    assert (got["cpu"], got["memory"], got["pods"]) == (cpu, memory, pods)


def test_m5_large_capacity_and_ephemeral_storage() -> None:
    it = build_instance_type(M5_LARGE, offerings())
    assert it.capacity.format() == {"cpu": "2", "memory": "7577Mi", "pods": 29, "ephemeral-storage": "20Gi"}
    # 20Gi - 1Gi kube-reserved - 10% (2Gi) nodefs eviction
    assert it.allocatable.format()["ephemeral-storage"] == "17Gi"


@pytest.mark.parametrize(
    ("vcpus", "reserved"),
    [(1, 60), (2, 70), (3, 75), (4, 80), (8, 90), (96, 310)],
    ids=str,
)
def test_kube_reserved_cpu_tiers(vcpus: int, reserved: int) -> None:
    assert kube_reserved_cpu_milli(vcpus) == reserved


@pytest.mark.parametrize(
    ("spec", "resource", "count"),
    [
        pytest.param(G5_XLARGE, "nvidia.com/gpu", 1, id="nvidia"),
        pytest.param(replace(G5_XLARGE, name="g4ad.xlarge", gpu_manufacturer="AMD"), "amd.com/gpu", 1, id="amd"),
        pytest.param(DL1, "habana.ai/gaudi", 8, id="habana"),
        pytest.param(INF2_XLARGE, "aws.amazon.com/neuron", 1, id="neuron-devices"),
        pytest.param(INF2_XLARGE, "aws.amazon.com/neuroncore", 2, id="neuron-cores"),
    ],
)
def test_accelerators_are_extended_resources(spec: InstanceSpec, resource: str, count: int) -> None:
    it = build_instance_type(spec, offerings())
    assert it.capacity[resource] == count * 1000
    assert it.allocatable[resource] == count * 1000


def test_labels_of_a_gpu_type() -> None:
    it = build_instance_type(G5_XLARGE, offerings(("us-east-1a", "us-east-1b")))
    assert it.requirements.labels() | {} == {
        wk.INSTANCE_TYPE: "g5.xlarge",
        wk.ARCH: "amd64",
        wk.OS: "linux",
        wk.REGION: "us-east-1",
        wk.INSTANCE_CATEGORY: "g",
        wk.INSTANCE_FAMILY: "g5",
        wk.INSTANCE_GENERATION: "5",
        wk.INSTANCE_SIZE: "xlarge",
        wk.INSTANCE_CPU: "4",
        wk.INSTANCE_MEMORY: "16384",
        wk.INSTANCE_HYPERVISOR: "nitro",
        wk.INSTANCE_ENCRYPTION_IN_TRANSIT: "false",
        wk.INSTANCE_GPU_NAME: "a10g",
        wk.INSTANCE_GPU_MANUFACTURER: "nvidia",
        wk.INSTANCE_GPU_COUNT: "1",
        wk.INSTANCE_GPU_MEMORY: "22888",
        wk.INSTANCE_LOCAL_NVME: "250",
        wk.INSTANCE_CAPABILITY_FLEX: "false",
        wk.INSTANCE_TENANCY: "default",
    }
    assert it.requirements[wk.ZONE].values == {"us-east-1a", "us-east-1b"}
    assert it.requirements[wk.CAPACITY_TYPE].values == {"on-demand", "spot"}


def test_flex_tenancy_and_sustained_clock_labels() -> None:
    flex = build_instance_type(replace(M5_LARGE, name="c7i-flex.large", sustained_clock_mhz=3200), offerings())
    labels = flex.requirements.labels()
    assert labels[wk.INSTANCE_CAPABILITY_FLEX] == "true"
    assert labels[wk.INSTANCE_TENANCY] == "default"
    assert labels[wk.INSTANCE_CPU_SUSTAINED_CLOCK_SPEED_MHZ] == "3200"
    # Unknown clock speed: the label is absent, so a pod asking for it never lands there.
    assert build_instance_type(M5_LARGE, offerings()).requirements[wk.INSTANCE_CPU_SUSTAINED_CLOCK_SPEED_MHZ].is_empty()


def test_labels_of_a_general_purpose_type() -> None:
    it = build_instance_type(M5_LARGE, offerings())
    labels = it.requirements.labels()
    assert labels[wk.INSTANCE_CPU_MANUFACTURER] == "intel"
    assert labels[wk.INSTANCE_NETWORK_BANDWIDTH] == "750"
    assert labels[wk.INSTANCE_EBS_BANDWIDTH] == "4750"
    assert it.arch == "amd64"


def test_accelerator_labels() -> None:
    labels = build_instance_type(INF2_XLARGE, offerings()).requirements.labels()
    assert labels[wk.INSTANCE_ACCELERATOR_NAME] == "inferentia2"
    assert labels[wk.INSTANCE_ACCELERATOR_MANUFACTURER] == "aws"
    assert labels[wk.INSTANCE_ACCELERATOR_COUNT] == "1"
    assert labels[wk.INSTANCE_CATEGORY] == "inf"
    assert labels[wk.INSTANCE_GENERATION] == "2"


@pytest.mark.parametrize(
    ("name", "category", "generation", "family", "size"),
    [
        ("m5.large", "m", "5", "m5", "large"),
        ("m7gd.metal", "m", "7", "m7gd", "metal"),
        ("u-6tb1.metal", "u", "1", "u-6tb1", "metal"),
        ("inf2.48xlarge", "inf", "2", "inf2", "48xlarge"),
        ("r8i.metal-48xl", "r", "8", "r8i", "metal-48xl"),
    ],
    ids=str,
)
def test_category_generation_family_size_from_the_name(
    name: str, category: str, generation: str, family: str, size: str
) -> None:
    labels = build_instance_type(replace(M5_LARGE, name=name), offerings()).requirements.labels()
    assert (
        labels[wk.INSTANCE_CATEGORY],
        labels[wk.INSTANCE_GENERATION],
        labels[wk.INSTANCE_FAMILY],
        labels[wk.INSTANCE_SIZE],
    ) == (category, generation, family, size)


def test_a_pod_asking_for_a_gpu_label_does_not_match_a_type_without_gpus() -> None:
    wants_gpu = Requirements.parse([{"key": wk.INSTANCE_GPU_COUNT, "operator": "Exists"}])
    assert not build_instance_type(M5_LARGE, offerings()).requirements.compatible(wants_gpu)
    assert build_instance_type(G5_XLARGE, offerings()).requirements.compatible(wants_gpu)


def test_zones_and_capacity_types_come_from_available_offerings_only() -> None:
    offers = [
        Offering("us-east-1a", "on-demand", 0.1),
        Offering("us-east-1b", "spot", 0.03, available=False),
    ]
    reqs = build_instance_type(M5_LARGE, offers).requirements
    assert reqs[wk.ZONE].values == {"us-east-1a"}
    assert reqs[wk.CAPACITY_TYPE].values == {"on-demand"}


@pytest.mark.parametrize(
    ("zone", "region"),
    [("us-east-1a", "us-east-1"), ("us-east-1-bos-1a", "us-east-1"), ("ap-southeast-2c", "ap-southeast-2")],
    ids=str,
)
def test_region_of_zone(zone: str, region: str) -> None:
    assert region_of(zone) == region


@pytest.mark.parametrize(
    ("node_class", "expected"),
    [
        pytest.param(None, DEFAULT_EPHEMERAL_STORAGE, id="no-nodeclass-20Gi"),
        pytest.param(EC2NodeClass("d"), DEFAULT_EPHEMERAL_STORAGE, id="no-mappings-20Gi"),
        pytest.param(
            EC2NodeClass(
                "d", block_device_mappings=(BlockDeviceMapping("/dev/xvda", EBS(100 * 2**30), root_volume=True),)
            ),
            100 * 2**30,
            id="root-volume",
        ),
        pytest.param(
            EC2NodeClass(
                "d", ami_family="AL2023", block_device_mappings=(BlockDeviceMapping("/dev/xvda", EBS(50 * 2**30)),)
            ),
            50 * 2**30,
            id="al2023-xvda",
        ),
        pytest.param(
            EC2NodeClass(
                "d",
                ami_family="Bottlerocket",
                block_device_mappings=(
                    BlockDeviceMapping("/dev/xvda", EBS(4 * 2**30)),
                    BlockDeviceMapping("/dev/xvdb", EBS(80 * 2**30)),
                ),
            ),
            80 * 2**30,
            id="bottlerocket-data-volume",
        ),
        pytest.param(EC2NodeClass("d", instance_store_policy="RAID0"), 250 * 10**9, id="raid0-local-nvme"),
    ],
)
def test_ephemeral_storage_from_the_nodeclass(node_class: EC2NodeClass | None, expected: int) -> None:
    assert ephemeral_storage(G5_XLARGE, node_class) == expected


def test_records_round_trip() -> None:
    for spec in (M5_LARGE, M7G_LARGE, G5_XLARGE, INF2_XLARGE, DL1):
        assert InstanceSpec.from_record(spec.to_record()) == spec
    assert M5_LARGE.to_record()["name"] == "m5.large"
    assert "gpu_count" not in M5_LARGE.to_record()


specs = st.builds(
    InstanceSpec,
    name=st.sampled_from(["m5.large", "c7g.xlarge", "t3.nano", "x2iedn.metal"]),
    vcpus=st.integers(1, 448),
    memory_mib=st.integers(256, 24 * 2**20),
    arch=st.sampled_from(["amd64", "arm64"]),
    max_enis=st.integers(0, 100),
    ipv4_per_eni=st.integers(0, 50),
    gpu_manufacturer=st.sampled_from(["", "NVIDIA", "AMD"]),
    gpu_count=st.integers(0, 16),
)
kubelets = st.builds(
    KubeletConfiguration,
    max_pods=st.none() | st.integers(0, 1000),
    pods_per_core=st.none() | st.integers(0, 100),
    kube_reserved=st.none() | st.builds(Resources.of, cpu=st.sampled_from(["100m", "2", "900"])),
    system_reserved=st.none() | st.builds(Resources.of, memory=st.sampled_from(["100Mi", "64Gi", "100Ti"])),
    eviction_hard=st.dictionaries(
        st.sampled_from(["memory.available", "nodefs.available", "nodefs.inodesFree"]),
        st.sampled_from(["0%", "10%", "100%", "100Mi", "5Gi"]),
    ),
)


@given(spec=specs, kubelet=st.none() | kubelets, eni_limited=st.booleans())
def test_allocatable_never_exceeds_capacity_and_is_never_negative(
    spec: InstanceSpec, kubelet: KubeletConfiguration | None, eni_limited: bool
) -> None:
    it = build_instance_type(spec, offerings(), kubelet, eni_limited=eni_limited)
    assert it.allocatable.fits_in(it.capacity)
    assert all(value >= 0 for value in it.allocatable.values())
    assert all(value >= 0 for value in it.capacity.values())
