from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nodewright.model.errors import InvalidValue
from nodewright.model.quantity import MAX_AMOUNT_MILLI, format_bytes, format_cpu, parse_quantity, to_amount, to_milli
from nodewright.model.resources import Resources


@pytest.mark.parametrize(
    ("text", "exact"),
    [
        ("1", Fraction(1)),
        ("100m", Fraction(1, 10)),
        ("1.5", Fraction(3, 2)),
        (".5", Fraction(1, 2)),
        ("2k", Fraction(2000)),
        ("1M", Fraction(10**6)),
        ("3G", Fraction(3 * 10**9)),
        ("1T", Fraction(10**12)),
        ("1Ki", Fraction(1024)),
        ("128Mi", Fraction(128 * 2**20)),
        ("8Gi", Fraction(8 * 2**30)),
        ("1Ti", Fraction(2**40)),
        ("1e3", Fraction(1000)),
        ("1.5E-3", Fraction(3, 2000)),
        ("+2", Fraction(2)),
        ("-1", Fraction(-1)),
        ("250n", Fraction(250, 10**9)),
    ],
    ids=str,
)
def test_quantities_parse_exactly(text: str, exact: Fraction) -> None:
    assert parse_quantity(text) == exact


@pytest.mark.parametrize("garbage", ["", "abc", "1.2.3", "5Qi", "1ee3", "Gi", "1 Gi", "0x10"])
def test_garbage_is_a_clear_error_naming_the_value(garbage: str) -> None:
    with pytest.raises(InvalidValue, match="is not a quantity"):
        parse_quantity(garbage)


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("-1", "is negative"),
        (-2, "is negative"),
        ("-100m", "is negative"),
        ("1e25", "larger than"),
        ("9000Ei", "larger than"),
    ],
)
def test_an_amount_is_never_negative_nor_beyond_a_kubernetes_quantity(value: str | int, words: str) -> None:
    with pytest.raises(InvalidValue, match=words):
        to_amount(value)


def test_amounts_up_to_the_kubernetes_bound_are_fine() -> None:
    assert to_amount("0") == 0
    assert to_amount("7Ei") == 7 * 2**60 * 1000
    assert to_amount(2**63 - 1) == MAX_AMOUNT_MILLI


def test_a_resource_list_refuses_a_negative_amount_naming_where_and_which() -> None:
    with pytest.raises(InvalidValue, match=r"^spec.containers\[0\].resources.requests.cpu: '-1' is negative"):
        Resources.parse({"cpu": "-1", "memory": "1Gi"}, where="spec.containers[0].resources.requests")


def test_milli_units_round_up_like_kubernetes() -> None:
    assert to_milli("1") == 1000
    assert to_milli("1930m") == 1930
    assert to_milli("0.0001") == 1
    assert to_milli(2) == 2000


def test_formatting_reads_like_kubectl() -> None:
    assert format_cpu(1930) == "1930m"
    assert format_cpu(2000) == "2"
    assert format_bytes(to_milli("6903Mi")) == "6903Mi"
    assert format_bytes(to_milli("8Gi")) == "8Gi"


@given(st.integers(min_value=0, max_value=10**9), st.sampled_from(["", "m", "k", "Ki", "Mi", "Gi"]))
def test_any_integer_with_a_suffix_round_trips_through_millis(number: int, suffix: str) -> None:
    multiplier = {"": 1, "m": Fraction(1, 1000), "k": 1000, "Ki": 1024, "Mi": 2**20, "Gi": 2**30}[suffix]
    assert to_milli(f"{number}{suffix}") == number * multiplier * 1000
