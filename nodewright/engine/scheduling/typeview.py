"""The catalog as NodePools with the same effective inputs see it, shared between them. Pure.

Role: preparing an instance type for a NodePool (`prepare.PreparedPool`: requirements, offerings,
daemonset overhead) is about 150 us, so a file of 2,000 NodePools over an 800-type catalog took
minutes to prepare before the first pod was placed. Most of those pools see the catalog alike:
what a type looks like to a pool depends on the pool's requirements other than its own name
label, the daemonsets that run on it, the blocked offerings and the resource names, not on the
pool's name. `TypeView` holds that shared part (each type's `PoolType`, and the cheapest-first
lists made from a catalog), and `TypeViews` hands the same view to every pool whose key is equal;
so the work grows with the number of distinct pool shapes, and each pool adds only its own small
memos.

Valid because a `PoolType` is a pure function of the key and the (immutable) instance type:
entries are found by the type's `id` and hold the type, so an id is never reused while it is
remembered; a list is reused only for a catalog holding the very same type objects in order.
"""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from nodewright.engine.scheduling.catalogindex import CatalogIndex
from nodewright.model.instancetype import InstanceType
from nodewright.model.requirements import Requirements

if TYPE_CHECKING:
    from nodewright.engine.scheduling.prepare import PoolType

TypeList = tuple[Sequence[InstanceType], tuple["PoolType", ...], Mapping[str, "PoolType"]]


class TypeView:
    """The types of a catalog as pools with one key see them: `by_type` (type id -> the type and its
    `PoolType`, None when such pools cannot use it), and the lists made from whole catalogs.
    """

    MAX_TYPES = 8192
    MAX_LISTS = 4
    MAX_REQUIREMENTS = 4096

    def __init__(self, keep: object = None) -> None:
        # What the key names by identity, held so the ids stay theirs while the view is kept.
        self._keep = keep
        self.by_type: dict[int, tuple[InstanceType, PoolType | None]] = {}
        self._lists: dict[Requirements, list[TypeList]] = {}
        self._memos: dict[str, dict[Any, Any]] = {}

    def memo(self, name: str) -> dict[Any, Any]:
        """The memo `name` of the pools sharing this view (`PreparedPool`'s answers by list of
        types and requirements: the same for every pool of the view's key).
        """
        return self._memos.setdefault(name, {})

    def remember_type(self, it: InstanceType, prepared: PoolType | None) -> None:
        """Keep `it`'s `PoolType` (forgetting every type when MAX_TYPES are kept)."""
        if len(self.by_type) >= self.MAX_TYPES:
            self.by_type.clear()
        self.by_type[id(it)] = (it, prepared)

    def list_for(self, requirements: Requirements, instance_types: Sequence[InstanceType]) -> TypeList | None:
        """A list made earlier for pools with `requirements` (but for their name) from a catalog of
        the very same type objects, in the same order.
        """
        for entry in self._lists.get(requirements, ()):
            known = entry[0]
            if known is instance_types or (
                len(known) == len(instance_types) and all(map(operator.is_, known, instance_types))
            ):
                return entry
        return None

    def remember_list(self, requirements: Requirements, entry: TypeList) -> None:
        """Keep a list made for pools with `requirements` from a catalog (MAX_LISTS catalogs each;
        forgetting every list when MAX_REQUIREMENTS requirement sets are kept).
        """
        if requirements not in self._lists and len(self._lists) >= self.MAX_REQUIREMENTS:
            self._lists.clear()
        lists = self._lists.setdefault(requirements, [])
        lists.insert(0, entry)
        del lists[self.MAX_LISTS :]


class TypeViews:
    """The views of the most recently used keys (an LRU of `size`; 0: never shared)."""

    # Catalog indexes kept (a provisioner has one catalog per EC2NodeClass kubelet configuration).
    INDEXES = 8

    def __init__(self, size: int) -> None:
        self.size = size
        self._views: OrderedDict[Hashable, TypeView] = OrderedDict()
        self._indexes: list[CatalogIndex] = []

    def index(self, catalog: Sequence[InstanceType]) -> CatalogIndex:
        """The index of `catalog` (one made for the very same type objects in order, when kept)."""
        for i, index in enumerate(self._indexes):
            known = index.catalog
            if known is catalog or (len(known) == len(catalog) and all(map(operator.is_, known, catalog))):
                if i:
                    del self._indexes[i]
                    self._indexes.insert(0, index)
                return index
        index = CatalogIndex(tuple(catalog))
        if self.size > 0:
            self._indexes.insert(0, index)
            del self._indexes[self.INDEXES :]
        return index

    def get(self, key: Hashable, keep: object = None) -> TypeView:
        """The view for `key`, made when none is kept; `keep`: the objects `key` names by id."""
        if self.size <= 0:
            return TypeView(keep)
        view = self._views.get(key)
        if view is None:
            view = self._views[key] = TypeView(keep)
            while len(self._views) > self.size:
                self._views.popitem(last=False)
        else:
            self._views.move_to_end(key)
        return view
