"""Resource lists (cpu, memory, pods, extended resources) as immutable maps of milli-units.

Role: the arithmetic the scheduler and the limits checks need (add, subtract, fit, max), with
missing keys read as zero. Pure.
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterable, Iterator, Mapping
from typing import Any

from nodewright.model.errors import InvalidValue
from nodewright.model.quantity import format_quantity, to_amount, to_milli

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
EPHEMERAL_STORAGE = "ephemeral-storage"
NVIDIA_GPU = "nvidia.com/gpu"
AMD_GPU = "amd.com/gpu"
AWS_NEURON = "aws.amazon.com/neuron"
HABANA_GAUDI = "habana.ai/gaudi"
ACCELERATORS = (NVIDIA_GPU, AMD_GPU, AWS_NEURON, HABANA_GAUDI)


class Resources(Mapping[str, int]):
    """An immutable resource list in milli-units; absent resources count as zero."""

    __slots__ = ("_hash", "_values")

    def __init__(self, values: Mapping[str, int] | Iterable[tuple[str, int]] = ()) -> None:
        items = values.items() if isinstance(values, Mapping) else values
        # Explicit zeros are kept (a NodePool limit of `cpu: 0` means "launch nothing"), but
        # equality and hashing ignore them: {cpu: 0} and {} hold the same resources.
        self._values: dict[str, int] = dict(items)
        self._hash: int | None = None

    @classmethod
    def parse(cls, manifest: Mapping[str, Any] | None, *, where: str = "resources") -> Resources:
        """Build from a Kubernetes resource list such as {"cpu": "500m", "memory": "1Gi"}; raise
        InvalidValue naming `where` and the resource for a malformed, negative or absurd amount.
        """
        if not manifest:
            return EMPTY
        values: dict[str, int] = {}
        for name, raw in manifest.items():
            try:
                values[str(name)] = to_amount(raw)
            except InvalidValue as error:
                raise InvalidValue(f"{where}.{name}: {error}") from None
        return cls(values)

    @classmethod
    def of(cls, **quantities: str | int | float) -> Resources:
        """Shorthand for tests and code: Resources.of(cpu="1", memory="2Gi", pods=3)."""
        return cls({_name(k): to_milli(v) for k, v in quantities.items()})

    def __getitem__(self, key: str) -> int:
        return self._values.get(key, 0)

    # Mapping's generic get() and items() go through __getitem__ and a view object; these are on
    # the solver's hot path. Same answers: since __getitem__ never raises KeyError, Mapping.get
    # always returned self[key], 0 for an absent name whatever the default.
    def get(self, key: str, default: object = None) -> int:
        """The amount of `key`; 0 when absent."""
        return self._values.get(key, 0)

    def items(self) -> ItemsView[str, int]:
        """(name, milli-units) pairs, explicit zeros included."""
        return self._values.items()

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def __hash__(self) -> int:
        if self._hash is None:
            values = self._values
            # Explicit zeros hash as absent (see __eq__); without any, the pairs are built in C.
            if 0 in values.values():
                self._hash = hash(frozenset((k, v) for k, v in values.items() if v))
            else:
                self._hash = hash(frozenset(values.items()))
        return self._hash

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Resources):
            # Equal dicts are equal resources (the usual case: pods of one workload); otherwise
            # explicit zeros may be all that differs.
            return self._values == other._values or _nonzero(self._values) == _nonzero(other._values)
        return NotImplemented

    def __repr__(self) -> str:
        return f"Resources({self.format()})"

    def __add__(self, other: Mapping[str, int]) -> Resources:
        merged = dict(self._values)
        for key, value in other.items():
            merged[key] = merged.get(key, 0) + value
        return Resources(merged)

    def __sub__(self, other: Mapping[str, int]) -> Resources:
        merged = dict(self._values)
        for key, value in other.items():
            merged[key] = merged.get(key, 0) - value
        return Resources(merged)

    def scaled(self, factor: int) -> Resources:
        """This list times a whole number (the requests of `factor` identical pods)."""
        return Resources({k: v * factor for k, v in self._values.items()})

    def fits_in(self, capacity: Mapping[str, int]) -> bool:
        """True when every resource here is at most what `capacity` has of it."""
        return all(value <= capacity.get(key, 0) for key, value in self._values.items())

    def exceeded_in(self, capacity: Mapping[str, int]) -> list[str]:
        """Names of the resources here that `capacity` cannot hold, for error messages."""
        return [k for k, v in self._values.items() if v > capacity.get(k, 0)]

    def maximum(self, other: Mapping[str, int]) -> Resources:
        """The per-resource maximum of two lists."""
        merged = dict(self._values)
        for key, value in other.items():
            if value > merged.get(key, 0):
                merged[key] = value
        return Resources(merged)

    def clamped(self) -> Resources:
        """Negative values (over-subscribed leftovers) raised to zero."""
        return Resources({k: v for k, v in self._values.items() if v > 0})

    def format(self) -> dict[str, str | int]:
        """Human form: {"cpu": "1930m", "memory": "6903Mi", "pods": 29}."""
        out: dict[str, str | int] = {}
        for key in sorted(self._values):
            value = self._values[key]
            out[key] = value // 1000 if key == PODS and value % 1000 == 0 else format_quantity(key, value)
        return out


def _nonzero(values: dict[str, int]) -> dict[str, int]:
    return {k: v for k, v in values.items() if v}


def _name(keyword: str) -> str:
    # Keyword arguments cannot hold "/" or "-": ephemeral_storage, nvidia_gpu, aws_neuron.
    return {
        "ephemeral_storage": EPHEMERAL_STORAGE,
        "nvidia_gpu": NVIDIA_GPU,
        "aws_neuron": AWS_NEURON,
        "amd_gpu": AMD_GPU,
    }.get(keyword, keyword)


EMPTY = Resources()
