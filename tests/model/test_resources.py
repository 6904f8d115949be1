"""Resource lists: arithmetic with missing keys as zero, fitting, and the forms people read."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nodewright.model.errors import InvalidValue
from nodewright.model.resources import EMPTY, NVIDIA_GPU, Resources

NODE = Resources.of(cpu="1930m", memory="6903Mi", pods=29)


def test_missing_resources_read_as_zero_and_explicit_zeros_are_kept_but_equal_to_absence() -> None:
    assert NODE["nvidia.com/gpu"] == 0
    assert "nvidia.com/gpu" not in NODE
    assert Resources({"cpu": 0, "memory": 5}) == Resources({"memory": 5})
    # A limit of `cpu: 0` must stay visible: it means "no cpu at all", not "no cpu limit".
    assert "cpu" in Resources.parse({"cpu": "0"})
    assert Resources({"cpu": 0}) == EMPTY
    assert hash(Resources({"cpu": 0})) == hash(EMPTY)


def test_parse_reads_a_kubernetes_resource_list_into_milli_units() -> None:
    parsed = Resources.parse({"cpu": "500m", "memory": "1Gi", "pods": "110", NVIDIA_GPU: 1})
    assert dict(parsed) == {"cpu": 500, "memory": 2**30 * 1000, "pods": 110_000, NVIDIA_GPU: 1000}
    assert Resources.parse(None) is EMPTY
    assert Resources.parse({}) is EMPTY


def test_a_bad_quantity_is_reported_with_where_it_was() -> None:
    with pytest.raises(InvalidValue, match=r"^status\.allocatable\.memory: 'lots'"):
        Resources.parse({"memory": "lots"}, where="status.allocatable")


def test_keyword_names_map_to_resource_names() -> None:
    assert set(Resources.of(ephemeral_storage="1Gi", nvidia_gpu=1, aws_neuron=2, amd_gpu=1)) == {
        "ephemeral-storage",
        "nvidia.com/gpu",
        "aws.amazon.com/neuron",
        "amd.com/gpu",
    }


def test_addition_and_subtraction_work_key_by_key() -> None:
    pod = Resources.of(cpu="500m", memory="1Gi", pods=1)
    gpu = Resources.of(nvidia_gpu=1)
    assert NODE + pod == Resources.of(cpu="2430m", memory="7927Mi", pods=30)
    assert NODE - pod == Resources.of(cpu="1430m", memory="5879Mi", pods=28)
    assert (NODE - gpu)[NVIDIA_GPU] == -1000
    assert NODE - NODE == EMPTY


def test_scaled_is_the_requests_of_identical_pods() -> None:
    assert Resources.of(cpu="250m", pods=1).scaled(4) == Resources.of(cpu="1", pods=4)
    assert Resources.of(cpu="250m").scaled(0) == EMPTY


@pytest.mark.parametrize(
    ("requests", "fits", "exceeded"),
    [
        (Resources.of(cpu="1930m", memory="6903Mi", pods=29), True, []),
        (Resources.of(cpu="1931m"), False, ["cpu"]),
        (Resources.of(cpu="500m", memory="7Gi"), False, ["memory"]),
        (Resources.of(nvidia_gpu=1), False, [NVIDIA_GPU]),
        (EMPTY, True, []),
        (Resources.of(cpu="2", pods=30), False, ["cpu", "pods"]),
    ],
    ids=["exactly-full", "one-milli-over", "memory-over", "resource-the-node-lacks", "nothing", "two-over"],
)
def test_fits_in_and_exceeded_in_agree(requests: Resources, fits: bool, exceeded: list[str]) -> None:
    assert requests.fits_in(NODE) is fits
    assert sorted(requests.exceeded_in(NODE)) == exceeded


def test_maximum_is_per_resource() -> None:
    a = Resources.of(cpu="2", memory="1Gi")
    b = Resources.of(cpu="1", memory="4Gi", nvidia_gpu=1)
    assert a.maximum(b) == Resources.of(cpu="2", memory="4Gi", nvidia_gpu=1)


def test_clamped_raises_oversubscribed_leftovers_to_zero() -> None:
    leftover = Resources.of(cpu="1") - Resources.of(cpu="2", memory="1Gi")
    assert leftover.clamped() == EMPTY
    assert (Resources.of(cpu="3", memory="1Gi") - Resources.of(cpu="1", memory="2Gi")).clamped() == Resources.of(
        cpu="2"
    )


def test_resources_are_hashable_values() -> None:
    assert hash(Resources.of(cpu="1")) == hash(Resources({"cpu": 1000}))
    assert {Resources.of(cpu="1"): "x"}[Resources({"cpu": 1000})] == "x"
    assert Resources.of(cpu="1") != {"cpu": 1000}


def test_format_reads_like_kubectl() -> None:
    assert NODE.format() == {"cpu": "1930m", "memory": "6903Mi", "pods": 29}
    assert Resources.of(cpu="4", memory="16Gi", ephemeral_storage="20Gi", nvidia_gpu=1).format() == {
        "cpu": "4",
        "ephemeral-storage": "20Gi",
        "memory": "16Gi",
        "nvidia.com/gpu": "1",
    }
    assert Resources.of(memory="512Ki").format() == {"memory": "512Ki"}
    assert repr(Resources.of(cpu="1")) == "Resources({'cpu': '1'})"


quantities = st.dictionaries(
    st.sampled_from(["cpu", "memory", "pods", NVIDIA_GPU]), st.integers(min_value=0, max_value=10**12), max_size=4
).map(Resources)


@given(quantities, quantities)
def test_subtraction_undoes_addition(a: Resources, b: Resources) -> None:
    assert (a + b) - b == a


@given(quantities, quantities)
def test_anything_fits_in_itself_plus_more(a: Resources, b: Resources) -> None:
    assert a.fits_in(a)
    assert a.fits_in(a + b)
    assert a.exceeded_in(a + b) == []


@given(quantities, quantities)
def test_fitting_means_nothing_is_left_negative(a: Resources, capacity: Resources) -> None:
    assert a.fits_in(capacity) == all(v >= 0 for v in (capacity - a).values())


@given(quantities, quantities)
def test_maximum_is_commutative_and_covers_both(a: Resources, b: Resources) -> None:
    assert a.maximum(b) == b.maximum(a)
    assert a.fits_in(a.maximum(b))
    assert b.fits_in(a.maximum(b))
