"""Which instance types of a catalog a NodePool's requirements allow, by label value. Pure.

Role: a NodePool may launch the types whose labels its requirements allow
(`Requirements.intersects`). Checking every type against every pool is 1,400 checks per pool:
seconds for a file of 2,000 NodePools. A catalog's labels take few values per key (100 families,
50 sizes), so `CatalogIndex` keeps, per key and value, the set of types carrying it (as a bit
mask over the catalog's positions); a pool's allowed types are then, key by key, the union of the
masks of the values its requirement allows, intersected over its keys: work in the number of
distinct label values, not of types.

Exact: a type whose requirement on a key is one plain `In` set intersects a pool's requirement
exactly when the pool allows one of its values, which is what the masks say; a type that names
no value for a key passes that key, as `intersects` ignores keys one side does not name; any
other shape (NotIn, Exists, DoesNotExist, Gt/Lt on the type's side) is checked with
`Requirements.intersects` itself.
"""

from __future__ import annotations

from collections.abc import Sequence

from nodewright.model.instancetype import InstanceType
from nodewright.model.requirements import Requirements


class CatalogIndex:
    """Label values to type masks for one catalog (a sequence of types, kept with the index)."""

    def __init__(self, catalog: Sequence[InstanceType]) -> None:
        self.catalog = catalog
        self._all = (1 << len(catalog)) - 1
        # key -> value -> mask of the types whose requirement on key is a plain In holding value
        self._by_value: dict[str, dict[str, int]] = {}
        # key -> mask of the types that name the key at all
        self._naming: dict[str, int] = {}
        # key -> mask of the types whose requirement on key is DoesNotExist (no label)
        self._absent: dict[str, int] = {}
        # key -> mask of the types with a requirement on key the masks cannot answer
        self._irregular: dict[str, int] = {}
        for position, it in enumerate(catalog):
            bit = 1 << position
            for key, req in it.requirements.items():
                self._naming[key] = self._naming.get(key, 0) | bit
                if req.greater_than is not None or req.less_than is not None or req.complement:
                    self._irregular[key] = self._irregular.get(key, 0) | bit
                elif not req.values:
                    self._absent[key] = self._absent.get(key, 0) | bit
                else:
                    values = self._by_value.setdefault(key, {})
                    for value in req.values:
                        values[value] = values.get(value, 0) | bit

    def allowed(self, requirements: Requirements) -> list[int]:
        """Positions (ascending) of the types `requirements` allow, as `it.requirements.intersects`."""
        mask = self._all
        check = 0
        for key, req in requirements.items():
            naming = self._naming.get(key)
            if naming is None:
                continue  # no type names the key: every type passes it
            allowed = self._all & ~naming  # types that do not name it pass
            for value, types in self._by_value.get(key, {}).items():
                if req.has(value):
                    allowed |= types
            if req.operator in _ABSENT_OK:
                # A type without the label meets a requirement a missing label meets.
                allowed |= self._absent.get(key, 0)
            irregular = self._irregular.get(key, 0)
            check |= irregular
            mask &= allowed | irregular
            if not mask:
                return []
        out: list[int] = []
        catalog = self.catalog
        position = 0
        while mask:
            if mask & 1 and (not (check >> position) & 1 or catalog[position].requirements.intersects(requirements)):
                out.append(position)
            mask >>= 1
            position += 1
        return out


# The operators both sides of `Requirements.intersects` may hold without a common value.
_ABSENT_OK = ("NotIn", "DoesNotExist")
