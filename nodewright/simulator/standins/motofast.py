"""Make moto answer the simulator's requests faster, with the same answers. Simulator only.

Why a patch: a 24-hour simulation sends moto thousands of requests, and several of moto's costs grow
with the run rather than with the request. Each is replaced, inside `moto_faster()` only, by code
that returns exactly what moto's own code returns (tests/simulator/test_motofast.py compares them):

* `QueryParser._gonna_recurse(query_params, prefix)` asks whether any query parameter starts with
  `prefix` by scanning every parameter (through werkzeug, which builds a set of the keys on each
  scan), and it is asked once per structure member: a CreateFleet with dozens of overrides spends
  most of its time there. The replacement sorts the keys once per parser and bisects: the keys
  starting with `prefix`, if any, begin at the first key >= `prefix`. Only immutable parameter
  dicts (werkzeug's, as every request carries) are answered this way; others go to moto's code.
* EventBridge input transformation compiles each target's JSONPath expressions (jsonpath_ng's
  ply parser) for every event and target. The replacement remembers compiled expressions by
  their text: an expression is a pure function of its text, and `find` does not change it.
* `TaggedEC2Resource.get_tags()` (describe instances, fleets, filters) runs `describe_tags` with a
  resource-id filter, which scans every tag of every EC2 resource. The filter is a glob anchored
  at both ends, so an id without glob characters selects exactly that resource's tags: the
  replacement reads them directly and builds the same result (same entries, same order). Ids with
  glob characters go to moto's code.
* `InstanceBackend.all_reservations()` (under every instance lookup by id) shallow-copies every
  reservation ever made with `copy.copy`, which goes through `__reduce_ex__` for each. The
  replacement makes the same shallow copies directly (a new object of the class with the same
  `__dict__`, which is what `copy.copy` does for a plain class); it is installed only while
  `Reservation` is such a class (no copy, pickle or slot hooks), checked on entry.
* `InstanceBackend.get_instance(id)` lists every instance (through `all_reservations`) to return
  the first with that id. The replacement walks the reservations in the same order without
  copying them and returns the same instance; an id it does not find goes to moto's code (which
  raises the same error).
* `InstanceBackend.get_reservations_by_instance_ids(ids)` (DescribeInstances by id, as the kubelet
  asks for each instance it boots) copies every reservation ever made, then keeps those holding one
  of `ids`. The replacement walks the same reservations in the same order and copies only those
  (the same shallow copies, the same instances kept), then finishes as moto does (the same error
  for an unknown id, the same filters). Installed with `all_reservations`' replacement, under the
  same check.
* `InstanceBackend.get_multi_instances_by_id(ids)` (DescribeInstanceStatus by id, every
  consolidator pass) indexes every instance through `all_reservations`' copies; a copy shares its
  instances with the original, so the replacement indexes the originals' instances, in the same
  order (the last of a repeated id wins, as in moto's dict), and finishes as moto does.
* Serializing a response asks moto's `AttributePicker` for every member of every structure, and
  it works out the member's possible attribute names anew each time (an alias provider object per
  provider and member, then `xform_name` of each) and scans the response's transformers by key
  path: DescribeInstanceStatus of 200 instances asks 4,800 times for the same dozen members. The
  replacement remembers, per picker (one per response), the names and the transformer for each
  member of each shape and kind of object, and reads the value as moto does, in the same order.
  Only moto's own pickers and alias providers are answered this way, and only for objects whose
  `Meta` (the explicit aliases) is a class or absent; anything else goes to moto's code.
* Every request looks up its handler among `inspect.getmembers(response class)`; the names are
  remembered per class (moto's classes do not change while a simulation runs); callers get a
  fresh list each time, as before.

The controllers never run this code in AWS: `nodewright/adapters` call AWS exactly as before; this
only changes how fast the in-process fake answers. Like `timewarp`, the patch is process-wide
while inside and is undone on exit.
"""

from __future__ import annotations

import bisect
import importlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

# Compiled JSONPath expressions remembered at most (EventBridge targets use a handful).
PATH_LIMIT = 256
_GLOB_CHARS = frozenset("*?[\\")
# What `copy.copy` consults on a class; `object`'s own versions make a plain shallow copy.
_OBJECT_HOOKS = ("__reduce_ex__", "__reduce__", "__getstate__")


def _fast_gonna_recurse(original: Callable[[Any, Any, str], bool]) -> Callable[[Any, Any, str], bool]:
    from werkzeug.datastructures import CombinedMultiDict
    from werkzeug.datastructures.mixins import ImmutableMultiDictMixin

    def immutable(params: Any) -> bool:
        if isinstance(params, CombinedMultiDict):
            return all(isinstance(d, ImmutableMultiDictMixin) for d in params.dicts)
        return isinstance(params, ImmutableMultiDictMixin)

    def gonna_recurse(self: Any, query_params: Any, prefix: str) -> bool:
        if prefix == "":
            return False
        # One parser parses one request: its sorted keys are kept on it, with the dict they came
        # from (held, so the identity check cannot match another object).
        cached = getattr(self, "_nodewright_keys", None)
        if cached is None or cached[0] is not query_params:
            if not immutable(query_params):
                return original(self, query_params, prefix)
            cached = (query_params, sorted(query_params))
            self._nodewright_keys = cached
        keys: list[str] = cached[1]
        i = bisect.bisect_left(keys, prefix)
        return not (i < len(keys) and keys[i].startswith(prefix))

    return gonna_recurse


def _memo_parse(original: Callable[..., Any]) -> Callable[..., Any]:
    memo: dict[tuple[str, Any], Any] = {}

    def parse(path: str, debug: bool | None = None) -> Any:
        key = (path, debug)
        hit = memo.get(key)
        if hit is None:
            hit = original(path, debug)
            if len(memo) >= PATH_LIMIT:
                memo.clear()
            memo[key] = hit
        return hit

    return parse


def _direct_get_tags(original: Callable[[Any], list[dict[str, str]]]) -> Callable[[Any], list[dict[str, str]]]:
    from moto.ec2.utils import EC2_PREFIX_TO_RESOURCE, get_prefix

    def get_tags(self: Any) -> list[dict[str, str]]:
        resource_id = self.id
        if not resource_id:
            return []
        if not isinstance(resource_id, str) or _GLOB_CHARS.intersection(resource_id):
            return original(self)
        tags = self.ec2_backend.tags.get(resource_id)  # a defaultdict: get() adds nothing
        if not tags:
            return []
        kind = EC2_PREFIX_TO_RESOURCE.get(get_prefix(resource_id), "")
        return [
            {"resource_id": resource_id, "key": key, "value": value, "resource_type": kind}
            for key, value in tags.items()
        ]

    return get_tags


def _plain_class(cls: Any) -> bool:
    """True when `copy.copy` of an instance of `cls` is a new instance with the same `__dict__`."""
    return bool(
        type(cls) is type
        and all(getattr(cls, hook, None) is getattr(object, hook, None) for hook in _OBJECT_HOOKS)
        and not any(hasattr(cls, hook) for hook in ("__copy__", "__setstate__", "__slots__"))
    )


def _direct_copies(original: Callable[..., list[Any]], plain: Any) -> Callable[..., list[Any]]:
    """`all_reservations` making its copies of reservations of the class `plain` (a `_plain_class`) directly."""
    from moto.ec2.utils import filter_reservations

    make: Any = plain.__new__  # as copy.copy makes the copy (copyreg.__newobj__)

    def all_reservations(self: Any, filters: Any = None) -> list[Any]:
        reservations = []
        for reservation in self.reservations.copy().values():
            if type(reservation) is not plain:
                return original(self, filters)
            twin = make(plain)
            twin.__dict__.update(reservation.__dict__)
            reservations.append(twin)
        if filters is not None:
            reservations = filter_reservations(reservations, filters)
        return reservations

    return all_reservations


def _direct_by_ids(original: Callable[..., list[Any]], plain: Any) -> Callable[..., list[Any]]:
    """`get_reservations_by_instance_ids` copying only the reservations it keeps (see the module docstring)."""
    from moto.ec2.exceptions import InvalidInstanceIdError
    from moto.ec2.utils import filter_reservations

    make: Any = plain.__new__

    def get_reservations_by_instance_ids(self: Any, instance_ids: list[str], filters: Any = None) -> list[Any]:
        try:
            wanted = frozenset(instance_ids)
        except TypeError:  # an unhashable id: moto's own comparisons
            return original(self, instance_ids, filters)
        reservations = []
        for reservation in self.reservations.copy().values():
            if type(reservation) is not plain:
                return original(self, instance_ids, filters)
            if any(instance.id in wanted for instance in reservation.instances):
                twin = make(plain)
                twin.__dict__.update(reservation.__dict__)
                twin.instances = [instance for instance in reservation.instances if instance.id in wanted]
                reservations.append(twin)
        found_instance_ids = [instance.id for reservation in reservations for instance in reservation.instances]
        if len(found_instance_ids) != len(instance_ids):
            invalid_id = next(iter(set(instance_ids).difference(set(found_instance_ids))))  # moto: list(...)[0]
            raise InvalidInstanceIdError(invalid_id)
        if filters is not None:
            reservations = filter_reservations(reservations, filters)
        return reservations

    return get_reservations_by_instance_ids


def _direct_multi(original: Callable[..., list[Any]]) -> Callable[..., list[Any]]:
    """`get_multi_instances_by_id` indexing the reservations' own instances (see the module docstring)."""
    from moto.ec2.exceptions import InvalidInstanceIdError

    def get_multi_instances_by_id(self: Any, instance_ids: list[str], filters: Any = None) -> list[Any]:
        all_instance_ids = {}
        for reservation in self.reservations.copy().values():
            for instance in reservation.instances:
                all_instance_ids[instance.id] = instance
        result = []
        not_found_instance_ids = []
        for instance_id in instance_ids:
            if instance_id not in all_instance_ids:
                not_found_instance_ids.append(instance_id)
                continue
            instance = all_instance_ids[instance_id]
            if instance.applies(filters):
                result.append(instance)
        if not_found_instance_ids:
            raise InvalidInstanceIdError(not_found_instance_ids)
        return result

    return get_multi_instances_by_id


def _direct_get_instance(original: Callable[[Any, str], Any]) -> Callable[[Any, str], Any]:
    def get_instance(self: Any, instance_id: str) -> Any:
        for reservation in list(self.reservations.values()):
            for instance in reservation.instances:
                # all_instances() keeps the instances that apply to no filters (all of them).
                if instance.id == instance_id and instance.applies(None):
                    return instance
        return original(self, instance_id)

    return get_instance


def _remembered_keys(original: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """`AttributePicker.__call__` remembering each member's possible names (see the module docstring)."""
    serialize = importlib.import_module("moto.core.serialize")
    pickers = frozenset({serialize.AttributePicker, serialize.XFormedAttributePicker})
    providers = frozenset(serialize.DEFAULT_ALIAS_PROVIDERS)
    get_value = serialize.get_value
    missing = serialize.MISSING

    def pick(self: Any, context: Any) -> Any:
        memo: dict[tuple[Any, ...], tuple[tuple[str, ...], Any]] | None = self.__dict__.get("_nodewright_keys")
        if memo is None:
            if type(self) not in pickers or not providers.issuperset(self.alias_providers):
                return original(self, context)
            memo = self._nodewright_keys = {}
        obj = context.obj
        meta = getattr(obj, "Meta", None)
        if meta is not None and not isinstance(meta, type):
            return original(self, context)
        shape = context.shape
        # The shapes live as long as the response's model, which outlives this picker's use.
        key = (context.key, id(shape), id(getattr(shape, "parent", None)), obj.__class__, meta, context.key_path)
        hit = memo.get(key)
        if hit is None:
            try:
                names = tuple(self.get_possible_keys(context))
            except Exception:  # moto asks lazily: let it meet whatever this was as it would
                return original(self, context)
            key_path = f"{context.key_path}.{context.key}"
            transform = next((t for path, t in self.response_transformers.items() if key_path.endswith(path)), None)
            hit = memo[key] = (names, transform)
        names, transform = hit
        value = None
        for name in names:
            found = get_value(obj, name, missing)
            if found is not missing:
                value = found
                break
        return value if transform is None else transform(value)

    return pick


def _remembered_names(original: Callable[[object], list[str]]) -> Callable[[object], list[str]]:
    memo: dict[object, tuple[object, list[str]]] = {}

    def method_names_from_class(clazz: object) -> list[str]:
        hit = memo.get(clazz)
        if hit is None:
            hit = memo[clazz] = (clazz, original(clazz))
        return list(hit[1])

    return method_names_from_class


@contextmanager
def moto_faster() -> Iterator[None]:
    """While inside, moto answers the simulator's requests faster (see the module docstring)."""
    parse = importlib.import_module("moto.core.parse")
    ext = importlib.import_module("jsonpath_ng.ext")
    core = importlib.import_module("moto.ec2.models.core")
    instances = importlib.import_module("moto.ec2.models.instances")
    responses = importlib.import_module("moto.core.responses")
    serialize = importlib.import_module("moto.core.serialize")
    backend = instances.InstanceBackend
    # (owner, attribute, replacement): each is put back as it was on exit.
    patches: list[tuple[Any, str, Any]] = [
        (parse.QueryParser, "_gonna_recurse", _fast_gonna_recurse(parse.QueryParser.__dict__["_gonna_recurse"])),
        (ext, "parse", _memo_parse(ext.parse)),
        (core.TaggedEC2Resource, "get_tags", _direct_get_tags(core.TaggedEC2Resource.__dict__["get_tags"])),
        (responses, "method_names_from_class", _remembered_names(responses.method_names_from_class)),
        (serialize.AttributePicker, "__call__", _remembered_keys(serialize.AttributePicker.__dict__["__call__"])),
        (backend, "get_instance", _direct_get_instance(backend.__dict__["get_instance"])),
        (backend, "get_multi_instances_by_id", _direct_multi(backend.__dict__["get_multi_instances_by_id"])),
    ]
    if _plain_class(instances.Reservation):
        replacement = _direct_copies(backend.__dict__["all_reservations"], instances.Reservation)
        patches.append((backend, "all_reservations", replacement))
        by_ids = _direct_by_ids(backend.__dict__["get_reservations_by_instance_ids"], instances.Reservation)
        patches.append((backend, "get_reservations_by_instance_ids", by_ids))
    saved = [(owner, name, vars(owner)[name]) for owner, name, _ in patches]
    for owner, name, replacement in patches:
        setattr(owner, name, replacement)
    try:
        yield
    finally:
        for owner, name, value in reversed(saved):
            setattr(owner, name, value)
