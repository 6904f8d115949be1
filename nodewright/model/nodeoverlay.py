"""NodeOverlays (`karpenter.sh/v1alpha1`): corrections to the instance type facts the scheduler uses. Pure.

An overlay names the instance types and offerings it applies to by requirements (empty: all of
them) and sets an offering's price outright (`price`), or moves it by an amount or a percentage
(`priceAdjustment`), and may add extended resources to the capacity of matching types
(`capacity`). Where several overlays match, the higher `weight` wins for the price and for each
capacity resource; two of equal weight on the same offering conflict, and the one whose name
sorts first alphabetically is refused. Parsing lives in `nodewright.config.nodeoverlay`; applying
overlays to the NodePools' instance types in `nodewright.engine.overlay`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from nodewright.model.errors import InvalidValue
from nodewright.model.requirements import Requirements
from nodewright.model.resources import Resources

# Karpenter's CRD patterns: a price is a plain non-negative decimal; an adjustment is a signed
# amount, a +percentage, or a -percentage of at most 100%.
PRICE = re.compile(r"^\d+(\.\d+)?$")
_ADJUSTMENT = re.compile(r"^(?:([+-])(\d*\.?\d+)|\+(\d*\.?\d+)%|-(\d{1,2}(?:\.\d+)?)%|-(100)%)$")


@dataclass(frozen=True, slots=True)
class PriceAdjustment:
    """A signed change of price: `amount` in price units, or in percent of the price when `percent`."""

    amount: float
    percent: bool
    text: str

    @classmethod
    def parse(cls, text: str) -> PriceAdjustment:
        """Build from "+0.5", "-0.25", "+10%" or "-10%" (down to "-100%"); raise InvalidValue otherwise."""
        found = _ADJUSTMENT.match(text)
        if found is None:
            raise InvalidValue(
                f"{text!r} is not a price adjustment: a signed amount (+0.5, -0.25), a +percentage (+10%) "
                "or a -percentage of at most 100% (-10%)"
            )
        sign, amount, up, down, everything = found.groups()
        if amount is not None:
            return cls(float(amount) * (-1 if sign == "-" else 1), False, text)
        if up is not None:
            return cls(float(up), True, text)
        return cls(-float(down if down is not None else everything), True, text)

    def apply(self, price: float) -> float:
        """The adjusted price, never below zero (an absolute cut larger than the price leaves it free)."""
        moved = price * (1 + self.amount / 100) if self.percent else price + self.amount
        return max(moved, 0.0)

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True, slots=True)
class NodeOverlay:
    """A NodeOverlay: at most one of `price` and `price_adjustment` is set; `weight` 0 when unset."""

    name: str
    requirements: Requirements = field(default_factory=Requirements)
    price: str | None = None
    price_adjustment: PriceAdjustment | None = None
    capacity: Resources | None = None
    weight: int = 0
    api_version: str = "karpenter.sh/v1alpha1"
    resource_version: str = ""

    def priced(self, price: float) -> float:
        """An offering's price with this overlay applied (unchanged when it sets no price)."""
        if self.price is not None:
            return float(self.price)
        if self.price_adjustment is not None:
            return self.price_adjustment.apply(price)
        return price

    @property
    def sets_price(self) -> bool:
        """Whether the overlay changes prices at all (it may only add capacity)."""
        return self.price is not None or self.price_adjustment is not None
