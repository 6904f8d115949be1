"""A fixed instance-type catalog: the provisioner's `Catalog` for tests, benchmarks and the simulator.

Role: offer the same instance types (with their offerings and prices) for every EC2NodeClass,
instead of the live catalog's DescribeInstanceTypes and price look-ups. Pure; observes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from nodewright.model.instancetype import InstanceType
from nodewright.model.nodeclass import EC2NodeClass


@dataclass(frozen=True, slots=True)
class FixedCatalog:
    """Always the same instance types, whatever the NodeClass."""

    types: tuple[InstanceType, ...]

    def instance_types(self, nodeclass: EC2NodeClass | None) -> Sequence[InstanceType]:
        """The fixed types (`nodeclass` is ignored)."""
        return self.types
