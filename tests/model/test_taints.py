"""Taints and tolerations: Kubernetes' matching rules as a decision table, and parsing errors."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nodewright.model.errors import InvalidValue
from nodewright.model.taints import EFFECTS, Taint, Toleration, tolerates_all, untolerated

GPU = Taint("nvidia.com/gpu", "NoSchedule", "true")
GPU_NO_VALUE = Taint("nvidia.com/gpu", "NoSchedule")
SPOT_EXECUTE = Taint("spot", "NoExecute", "yes")
SOFT = Taint("dedicated", "PreferNoSchedule", "ml")


@pytest.mark.parametrize(
    ("toleration", "taint", "tolerated"),
    [
        ({"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}, GPU, True),
        ({"key": "nvidia.com/gpu", "operator": "Equal", "value": "false", "effect": "NoSchedule"}, GPU, False),
        ({"key": "nvidia.com/gpu", "value": "true"}, GPU, True),
        ({"key": "nvidia.com/gpu", "value": "true", "effect": "NoExecute"}, GPU, False),
        ({"key": "nvidia.com/gpu", "operator": "Exists"}, GPU, True),
        ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}, GPU, True),
        ({"key": "amd.com/gpu", "operator": "Exists"}, GPU, False),
        ({"key": "nvidia.com/gpu"}, GPU_NO_VALUE, True),
        ({"key": "nvidia.com/gpu"}, GPU, False),
        ({"operator": "Exists"}, GPU, True),
        ({"operator": "Exists"}, SPOT_EXECUTE, True),
        ({"operator": "Exists", "effect": "NoSchedule"}, SPOT_EXECUTE, False),
        ({"operator": "Exists", "effect": "NoExecute"}, SPOT_EXECUTE, True),
        (
            {"key": "spot", "operator": "Equal", "value": "yes", "effect": "NoExecute", "tolerationSeconds": 30},
            SPOT_EXECUTE,
            True,
        ),
        ({"key": "dedicated", "value": "ml", "effect": "PreferNoSchedule"}, SOFT, True),
        ({"key": "dedicated", "value": "ml", "effect": "NoSchedule"}, SOFT, False),
    ],
    ids=[
        "equal-key-value-effect",
        "equal-wrong-value",
        "equal-empty-effect-matches-any-effect",
        "equal-wrong-effect",
        "exists-key",
        "exists-key-and-effect",
        "exists-other-key",
        "equal-empty-value-vs-valueless-taint",
        "equal-empty-value-vs-valued-taint",
        "exists-empty-key-tolerates-noschedule",
        "exists-empty-key-tolerates-noexecute",
        "exists-empty-key-wrong-effect",
        "exists-empty-key-right-effect",
        "noexecute-with-seconds",
        "prefer-no-schedule-exact",
        "prefer-no-schedule-wrong-effect",
    ],
)
def test_a_toleration_tolerates_a_taint_by_kubernetes_rules(
    toleration: dict[str, Any], taint: Taint, tolerated: bool
) -> None:
    assert Toleration.parse(toleration).tolerates(taint) is tolerated


def test_prefer_no_schedule_taints_never_block_placement() -> None:
    assert untolerated([], [SOFT]) == []
    assert tolerates_all([], [SOFT])


def test_untolerated_lists_the_blocking_taints_nothing_tolerates() -> None:
    tolerations = [Toleration.parse({"key": "nvidia.com/gpu", "operator": "Exists"})]
    assert untolerated(tolerations, [GPU, SPOT_EXECUTE, SOFT]) == [SPOT_EXECUTE]
    assert not tolerates_all(tolerations, [GPU, SPOT_EXECUTE])
    assert tolerates_all(tolerations, [GPU])
    assert tolerates_all([], [])


def test_a_toleration_parses_every_field() -> None:
    parsed = Toleration.parse(
        {"key": "spot", "operator": "Equal", "value": "yes", "effect": "NoExecute", "tolerationSeconds": 120}
    )
    assert parsed == Toleration("spot", "Equal", "yes", "NoExecute", 120)
    assert Toleration.parse({"operator": "Exists"}) == Toleration("", "Exists")


def test_a_taint_round_trips_through_its_manifest_and_prints_like_kubectl() -> None:
    assert Taint.parse(GPU.to_manifest()) == GPU
    assert Taint.parse({"key": "spot", "effect": "NoExecute"}).to_manifest() == {"key": "spot", "effect": "NoExecute"}
    assert str(GPU) == "nvidia.com/gpu=true:NoSchedule"
    assert str(Taint("spot", "NoExecute")) == "spot:NoExecute"


@pytest.mark.parametrize(
    ("manifest", "field"),
    [
        ({"effect": "NoSchedule"}, "key"),
        ({"key": "", "effect": "NoSchedule"}, "key"),
        ({"key": "gpu"}, "effect"),
        ({"key": "gpu", "effect": "NoSchedulez"}, "effect"),
    ],
    ids=["missing-key", "empty-key", "missing-effect", "misspelt-effect"],
)
def test_invalid_taints_name_the_field(manifest: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidValue, match=f"^{field}:"):
        Taint.parse(manifest)


@pytest.mark.parametrize(
    ("manifest", "field"),
    [
        ({"key": "gpu", "operator": "Equals"}, "operator"),
        ({"key": "gpu", "operator": "Exists", "effect": "Sometimes"}, "effect"),
        ({"operator": "Equal", "value": "x"}, "key"),
        ({}, "key"),
    ],
    ids=["bad-operator", "bad-effect", "empty-key-with-equal", "empty-toleration"],
)
def test_invalid_tolerations_name_the_field(manifest: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidValue, match=f"^{field}:"):
        Toleration.parse(manifest)


taints = st.builds(
    Taint,
    key=st.text(min_size=1, max_size=20),
    effect=st.sampled_from(EFFECTS),
    value=st.text(max_size=20),
)


@given(taints)
def test_exists_with_an_empty_key_tolerates_every_taint(taint: Taint) -> None:
    assert Toleration.parse({"operator": "Exists"}).tolerates(taint)


@given(taints, st.sampled_from(EFFECTS))
def test_exists_with_an_empty_key_and_an_effect_tolerates_exactly_that_effect(taint: Taint, effect: str) -> None:
    assert Toleration.parse({"operator": "Exists", "effect": effect}).tolerates(taint) == (taint.effect == effect)


@given(taints)
def test_a_toleration_copied_from_a_taint_tolerates_it(taint: Taint) -> None:
    toleration = Toleration.parse({"key": taint.key, "value": taint.value, "effect": taint.effect})
    assert toleration.tolerates(taint)
