"""Kubernetes resource quantities, parsed exactly.

Role: turn `"1930m"`, `"8Gi"`, `"1.5e3"`, `2` into exact numbers and back into the canonical
strings people read. Pure. Values travel through the rest of Nodewright as integers in
milli-units (`"1"` -> 1000, `"1Gi"` -> 1073741824000) so sums and comparisons are exact and fast;
a value finer than a milli-unit rounds up, as Kubernetes rounds requests.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from types import MappingProxyType

from nodewright.model.errors import InvalidValue, shown

_BINARY = MappingProxyType({"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60})
_DECIMAL = MappingProxyType(
    {
        "n": Fraction(1, 10**9),
        "u": Fraction(1, 10**6),
        "m": Fraction(1, 10**3),
        "": Fraction(1),
        "k": Fraction(10**3),
        "M": Fraction(10**6),
        "G": Fraction(10**9),
        "T": Fraction(10**12),
        "P": Fraction(10**15),
        "E": Fraction(10**18),
    }
)
_QUANTITY = re.compile(
    r"^(?P<number>[+-]?(?:\d+(?:\.\d*)?|\.\d+))"
    r"(?:(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])|[eE](?P<exponent>[+-]?\d+))?$"
)


def parse_quantity(value: str | int | float) -> Fraction:
    """Return the exact value of a Kubernetes quantity; raise InvalidValue naming it if malformed."""
    if isinstance(value, bool):
        raise InvalidValue(f"{shown(value)} is not a quantity")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):  # YAML's .inf and .nan
            raise InvalidValue(f"{shown(value)} is not a quantity")
        return Fraction(str(value))
    if not isinstance(value, str):
        raise InvalidValue(f"{shown(value)} is not a quantity")
    match = _QUANTITY.match(value.strip())
    if match is None:
        raise InvalidValue(
            f"{shown(value)} is not a quantity (expected a number with an optional suffix such as "
            "m, k, M, G, Ki, Mi, Gi or an exponent like 1e3)"
        )
    number = Fraction(match["number"])
    if match["exponent"] is not None:
        exponent = int(match["exponent"])
        if abs(exponent) > 30:
            raise InvalidValue(f"{shown(value)} has an exponent out of range")
        return number * Fraction(10) ** exponent
    suffix = match["suffix"] or ""
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    return number * _DECIMAL[suffix]


def to_milli(value: str | int | float) -> int:
    """Return the quantity in milli-units, rounded up (1 -> 1000, "100m" -> 100)."""
    exact = parse_quantity(value) * 1000
    return -((-exact.numerator) // exact.denominator)


# The largest amount a Kubernetes quantity holds (an int64 of units), in milli-units.
MAX_AMOUNT_MILLI = (2**63 - 1) * 1000


def to_amount(value: str | int | float) -> int:
    """An amount of a resource (a request, a limit, a capacity, a reservation, a size) in
    milli-units, as `to_milli`; raise InvalidValue when it is negative (no resource list holds a
    negative amount: the API server refuses one, and the solver would divide by it) or larger
    than a Kubernetes quantity can hold.
    """
    milli = to_milli(value)
    if milli < 0:
        raise InvalidValue(f"{shown(value)} is negative; an amount of a resource is 0 or more")
    if milli > MAX_AMOUNT_MILLI:
        raise InvalidValue(f"{shown(value)} is larger than a Kubernetes quantity can hold (2^63-1)")
    return milli


def format_cpu(milli: int) -> str:
    """Format milli-cores the way kubectl does: whole cores plainly, else millis ("1930m")."""
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def format_bytes(milli: int) -> str:
    """Format a byte quantity (in milli-units) with the largest binary suffix that is exact, or Mi.

    Memory figures are compared in MiB throughout Karpenter's docs, so anything that is not an
    exact Gi/Ti falls back to whole MiB (rounded down), e.g. 6903Mi.
    """
    value = milli // 1000
    for suffix, unit in (("Ti", 2**40), ("Gi", 2**30)):
        if value >= unit and value % unit == 0:
            return f"{value // unit}{suffix}"
    if value >= 2**20:
        return f"{value // 2**20}Mi"
    if value % 2**10 == 0 and value:
        return f"{value // 2**10}Ki"
    return str(value)


def format_count(milli: int) -> str:
    """Format a plain count (pods, GPUs): whole numbers plainly, fractions in milli-units."""
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def format_quantity(resource: str, milli: int) -> str:
    """Format a resource value by the resource's kind: cpu in cores, memory/storage in bytes."""
    if resource == "cpu":
        return format_cpu(milli)
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        return format_bytes(milli)
    return format_count(milli)
