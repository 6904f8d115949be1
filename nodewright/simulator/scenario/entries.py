"""The scenario's event and settings entries: `interruptions`, `initial_nodes`, `capacity_errors`,
`capacity_reservations`, `faults` and `functions`.

One reader per entry kind, each given the entry's `At` (`interruptions[2]`, ...) and its raw
value; it reports every problem there and returns the entry, or None when it is invalid. What
needs the whole scenario (a zone or NodePool an entry names) is checked by
`reader.py`'s cross-check. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from nodewright.config import fields as f
from nodewright.config.problems import At, show
from nodewright.simulator.scenario.fields import read_choices, read_duration, read_number
from nodewright.simulator.scenario.model import (
    DEPLOYED_CONSOLIDATOR,
    DEPLOYED_INTERRUPTION,
    DEPLOYED_PROVISIONER,
    DYNAMODB_THROTTLE_CODES,
    EC2_THROTTLED,
    FAULT_KINDS,
    FUNCTIONS,
    KUBE_VERBS,
    CapacityError,
    CapacityReservationSpec,
    Fault,
    FunctionSettings,
    InitialNodes,
    Interruption,
    NodeFailure,
)

STATUS_CHECKS = ("system", "instance", "ebs")
CONDITION_STATUSES = ("True", "False", "Unknown")

# The keys each fault kind takes besides kind, rate, from and until.
_FAULT_KEYS: dict[str, tuple[str, ...]] = {
    "kube-5xx": ("verbs", "status"),
    "kube-429": ("verbs", "retry_after"),
    "kube-timeout": ("verbs",),
    "ec2-throttle": ("operations",),
    "dynamodb-throttle": ("code",),
    "crash": ("functions",),
    "timeout": ("functions",),
}


def read_interruption(at: At, raw: Any) -> Interruption | None:
    """One `interruptions` entry: `at` and exactly one of count and fraction."""
    keys = ("at", "count", "fraction", "within", "rebalance", "rebalance_lead", "notice", "nodepool", "zone")
    entry = f.item(at, raw, keys)
    if entry is None:
        return None
    start = read_duration(at / "at", f.required(at, entry, "at"))
    if ("count" in entry) == ("fraction" in entry):
        at.error("needs exactly one of count and fraction")
        return None
    count = f.integer(at / "count", entry.get("count"), minimum=1)
    fraction = read_number(at / "fraction", entry.get("fraction"), low=0.0, high=1.0)
    within = read_duration(at / "within", entry.get("within"))
    rebalance = f.boolean(at / "rebalance", entry.get("rebalance"))
    lead = read_duration(at / "rebalance_lead", entry.get("rebalance_lead"))
    notice = read_duration(at / "notice", entry.get("notice"))
    nodepool = f.string(at / "nodepool", entry.get("nodepool"), non_empty=True)
    zone = f.string(at / "zone", entry.get("zone"), non_empty=True)
    if start is None or (count is None and fraction is None):
        return None
    return Interruption(
        at=start,
        count=count,
        fraction=fraction,
        within=within or 0.0,
        rebalance=rebalance if rebalance is not None else True,
        rebalance_lead=lead if lead is not None else 60.0,
        notice=notice if notice is not None else 120.0,
        nodepool=nodepool,
        zone=zone,
    )


def read_node_failure(at: At, raw: Any) -> NodeFailure | None:
    """One `node_failures` entry: `at`, and a node condition (`condition`, default Ready, with its
    `status`, default Unknown for Ready and False for the others) or a `status_check`.
    """
    entry = f.item(at, raw, ("at", "count", "condition", "status", "status_check", "nodepool", "zone"))
    if entry is None:
        return None
    start = read_duration(at / "at", f.required(at, entry, "at"))
    count = f.integer(at / "count", entry.get("count"), minimum=1)
    check = f.string(at / "status_check", entry.get("status_check"), enum=STATUS_CHECKS)
    if check is not None and ("condition" in entry or "status" in entry):
        at.error("takes either status_check or condition and status, not both")
        return None
    condition = f.string(at / "condition", entry.get("condition"), non_empty=True) or "Ready"
    raw_status = entry.get("status")
    if isinstance(raw_status, bool):
        (at / "status").error(f'quote "{raw_status}": YAML reads a bare {raw_status} as a boolean')
        return None
    status = f.string(at / "status", raw_status, enum=CONDITION_STATUSES)
    nodepool = f.string(at / "nodepool", entry.get("nodepool"), non_empty=True)
    zone = f.string(at / "zone", entry.get("zone"), non_empty=True)
    if start is None:
        return None
    return NodeFailure(
        at=start,
        count=count or 1,
        condition=condition,
        status=status or ("Unknown" if condition == "Ready" else "False"),
        status_check=check or "",
        nodepool=nodepool,
        zone=zone,
    )


def read_initial_nodes(at: At, raw: Any) -> InitialNodes | None:
    """One `initial_nodes` group: another autoscaler's nodes, so no Nodewright label."""
    entry = f.item(at, raw, ("instance_type", "zone", "capacity_type", "count", "labels"))
    if entry is None:
        return None
    instance_type = f.string(at / "instance_type", f.required(at, entry, "instance_type"), non_empty=True)
    zone = f.string(at / "zone", f.required(at, entry, "zone"), non_empty=True)
    capacity_type = f.string(
        at / "capacity_type", entry.get("capacity_type", "on-demand"), enum=("spot", "on-demand", "reserved")
    )
    count = f.integer(at / "count", entry.get("count", 1), minimum=1)
    labels = entry.get("labels") or {}
    if not isinstance(labels, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items()):
        (at / "labels").error("must map label keys to string values")
        return None
    owned = sorted(k for k in labels if k.startswith("nodewright.io/"))
    if owned:
        (at / "labels").error(f"{', '.join(owned)}: another autoscaler's nodes carry no Nodewright label")
        return None
    if instance_type is None or zone is None or capacity_type is None or count is None:
        return None
    return InitialNodes(instance_type, zone, capacity_type, count, dict(labels))


def read_capacity_error(at: At, raw: Any) -> CapacityError | None:
    """One `capacity_errors` window; `until` after `from`."""
    entry = f.item(at, raw, ("instance_type", "zone", "capacity_type", "from", "until", "code"))
    if entry is None:
        return None
    instance_type = f.string(at / "instance_type", entry.get("instance_type", "*"), non_empty=True)
    zone = f.string(at / "zone", entry.get("zone", "*"), non_empty=True)
    capacity_type = f.string(
        at / "capacity_type", entry.get("capacity_type", "*"), enum=("*", "spot", "on-demand", "reserved")
    )
    start = read_duration(at / "from", entry.get("from"))
    end = read_duration(at / "until", entry.get("until"))
    code = f.string(at / "code", entry.get("code", "InsufficientInstanceCapacity"), non_empty=True)
    if start is not None and end is not None and end <= start:
        (at / "until").error("must be after `from`")
        return None
    if instance_type is None or zone is None or capacity_type is None or code is None:
        return None
    return CapacityError(instance_type, zone, capacity_type, start or 0.0, end, code)


def read_capacity_reservation(at: At, raw: Any) -> CapacityReservationSpec | None:
    """One `capacity_reservations` entry: an ODCR or a capacity block (which needs `until`)."""
    keys = ("id", "instance_type", "zone", "count", "type", "match", "owner", "tags", "from", "until", "interruptible")
    entry = f.item(at, raw, keys)
    if entry is None:
        return None
    ident = f.string(
        at / "id", f.required(at, entry, "id"), pattern=re.compile(r"^cr-[0-9a-z]+$"), rule="is not cr-..."
    )
    instance_type = f.string(at / "instance_type", f.required(at, entry, "instance_type"), non_empty=True)
    zone = f.string(at / "zone", f.required(at, entry, "zone"), non_empty=True)
    count = f.integer(at / "count", f.required(at, entry, "count"), minimum=1)
    kind = f.string(at / "type", entry.get("type", "default"), enum=("default", "capacity-block"))
    match = f.string(at / "match", entry.get("match", "targeted"), enum=("open", "targeted"))
    owner = f.string(
        at / "owner", entry.get("owner"), pattern=re.compile(r"^[0-9]{12}$"), rule="is not a 12-digit account id"
    )
    tags = f.string_map(at / "tags", entry.get("tags")) or {}
    start = read_duration(at / "from", entry.get("from"))
    end = read_duration(at / "until", entry.get("until"))
    if kind == "capacity-block" and end is None:
        (at / "until").error("a capacity block must end")
        return None
    interruptible = entry.get("interruptible", False)
    if not isinstance(interruptible, bool) or (interruptible and kind == "capacity-block"):
        (at / "interruptible").error("must be true or false, and false for a capacity block")
        return None
    if start is not None and end is not None and end <= start:
        (at / "until").error("must be after `from`")
        return None
    if ident is None or instance_type is None or zone is None or count is None or kind is None or match is None:
        return None
    return CapacityReservationSpec(
        id=ident,
        instance_type=instance_type,
        zone=zone,
        count=count,
        reservation_type=kind,
        match=match,
        owner_id=owner or "",
        tags=tags,
        start=start or 0.0,
        end=end,
        interruptible=interruptible,
    )


def read_fault(at: At, raw: Any) -> Fault | None:
    """One `faults` entry: `kind`, `rate` and only the keys of that kind (others are unknown)."""
    if isinstance(raw, Mapping) and raw.get("kind") in FAULT_KINDS:
        extra = _FAULT_KEYS.get(str(raw["kind"]), ())
    else:
        extra = tuple(sorted({k for keys in _FAULT_KEYS.values() for k in keys}))
    entry = f.item(at, raw, ("kind", "rate", "from", "until", *extra))
    if entry is None:
        return None
    # Keys of another kind were reported as unknown by `item`: they are not read again.
    given = {k: v for k, v in entry.items() if k in extra}
    kind = f.string(at / "kind", f.required(at, entry, "kind"), enum=FAULT_KINDS)
    rate = read_number(at / "rate", f.required(at, entry, "rate"), low=0.0, high=1.0)
    start = read_duration(at / "from", entry.get("from"))
    end = read_duration(at / "until", entry.get("until"))
    verbs = read_choices(at / "verbs", given.get("verbs"), KUBE_VERBS)
    functions = read_choices(at / "functions", given.get("functions"), FUNCTIONS)
    operations = f.string_list(at / "operations", given.get("operations"), min_items=1)
    for index, operation in enumerate(operations or ()):
        if not re.fullmatch(r"(CreateFleet|TerminateInstances|Describe[A-Za-z]*\*?)", operation):
            (at / "operations" / index).error(
                f"{show(operation)} is not CreateFleet, TerminateInstances or a Describe call (Describe* for all)"
            )
            operations = None
    status = f.integer(at / "status", given.get("status"), minimum=500, maximum=599)
    retry_after = read_duration(at / "retry_after", given.get("retry_after"))
    code = f.string(at / "code", given.get("code"), enum=DYNAMODB_THROTTLE_CODES)
    if start is not None and end is not None and end <= start:
        (at / "until").error("must be after `from`")
        return None
    read = {"verbs": verbs, "functions": functions, "operations": operations, "status": status, "code": code}
    if kind is None or rate is None or any(given.get(k) is not None and v is None for k, v in read.items()):
        return None
    return Fault(
        kind=kind,
        rate=rate,
        start=start or 0.0,
        end=end,
        verbs=verbs or KUBE_VERBS,
        status=status or 503,
        retry_after=retry_after if retry_after is not None else 1.0,
        operations=operations or EC2_THROTTLED,
        code=code or DYNAMODB_THROTTLE_CODES[0],
        functions=functions or FUNCTIONS,
    )


def read_functions(at: At, raw: Any) -> dict[str, FunctionSettings]:
    """The `functions` block: each function's settings, defaults for what is left out."""
    entry = f.obj(at, raw, ("provisioner", "consolidator", "interruption")) or {}
    defaults = {
        "provisioner": DEPLOYED_PROVISIONER,
        "consolidator": DEPLOYED_CONSOLIDATOR,
        "interruption": DEPLOYED_INTERRUPTION,
    }
    out: dict[str, FunctionSettings] = {}
    for name, default in defaults.items():
        here = at / name
        keys: tuple[str, ...] = (
            ("timeout", "batch_size", "concurrency", "priority_concurrency")
            if name == "interruption"
            else ("rate", "timeout", "offset", "single_flight")
        )
        keys += ("memory", "idle_exit") if name == "provisioner" else ("memory",)
        settings = f.obj(here, entry.get(name), keys) or {}
        memory = f.integer(here / "memory", settings.get("memory"), minimum=128, maximum=10240)
        idle_exit = read_duration(here / "idle_exit", settings.get("idle_exit"))
        rate = read_duration(here / "rate", settings.get("rate"))
        timeout = read_duration(here / "timeout", settings.get("timeout"), positive=True)
        offset = read_duration(here / "offset", settings.get("offset"))
        single_flight = f.boolean(here / "single_flight", settings.get("single_flight"))
        batch = f.integer(here / "batch_size", settings.get("batch_size"), minimum=1, maximum=10)
        concurrency = f.integer(here / "concurrency", settings.get("concurrency"), minimum=1, maximum=100)
        priority_concurrency = f.integer(
            here / "priority_concurrency", settings.get("priority_concurrency"), minimum=1, maximum=100
        )
        if timeout is not None and not 3 <= timeout <= 900:
            (here / "timeout").error("must be between 3s and 15m (Lambda's limits)")
        out[name] = FunctionSettings(
            rate=rate if rate is not None else default.rate,
            timeout=timeout if timeout is not None else default.timeout,
            offset=offset if offset is not None else default.offset,
            concurrency=concurrency or default.concurrency,
            priority_concurrency=priority_concurrency or default.priority_concurrency,
            batch_size=batch or default.batch_size,
            memory_mb=memory or default.memory_mb,
            idle_exit=idle_exit,
            single_flight=bool(single_flight),
        )
    return out
