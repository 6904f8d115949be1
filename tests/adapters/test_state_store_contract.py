"""The `StateStore` contract, run against both implementations: DynamoDB (moto) and in memory.

Faked: DynamoDB, by moto in-process (`mock_aws`). moto evaluates a write's condition and then
stores the item without a lock, so two threads can both pass one condition; DynamoDB makes each
conditional write atomic per item. `atomic_moto_writes` gives moto's item writes that atomicity
(one lock around them) so the races below test our conditions, not moto's thread-safety.
Observed: only what the `StateStore` methods return; item layout is in aws/test_state_store.py.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.dynamodb.models.table import Table

from nodewright.adapters.aws.state_store import DynamoStateStore, create_table
from nodewright.inmemory.state import InMemoryStateStore
from nodewright.model import labels as wk
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.requirements import Requirement, Requirements
from nodewright.model.resources import Resources
from nodewright.model.taints import Taint
from nodewright.ports import DrainRecord, StateStore

TABLE = "nodewright-state"
SPOT_M5 = ("spot", "m5.large", "us-east-1a")
SPOT_C5 = ("spot", "c5.large", "us-east-1b")
ON_DEMAND_M5 = ("on-demand", "m5.large", "us-east-1a")


@contextmanager
def atomic_moto_writes(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Serialise moto's conditional item writes, as DynamoDB does per item."""
    lock = threading.Lock()

    def locked(method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with lock:
                return method(*args, **kwargs)

        return wrapper

    for name in ("put_item", "delete_item", "update_item"):
        if hasattr(Table, name):
            monkeypatch.setattr(Table, name, locked(getattr(Table, name)))
    yield


@contextmanager
def dynamo_store(monkeypatch: pytest.MonkeyPatch) -> Iterator[DynamoStateStore]:
    """A DynamoStateStore on a fresh state table in moto."""
    with mock_aws(), atomic_moto_writes(monkeypatch):
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_table(client, TABLE)
        yield DynamoStateStore(client, TABLE)


@pytest.fixture(params=["memory", "dynamodb"])
def store(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[StateStore]:
    if request.param == "memory":
        yield InMemoryStateStore()
        return
    with dynamo_store(monkeypatch) as dynamo:
        yield dynamo


@pytest.fixture
def busy_threads() -> Iterator[None]:
    """Switch threads as often as possible, so racing callers really interleave."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


def claim(name: str = "default-1", **fields: Any) -> NodeClaim:
    base: dict[str, Any] = {
        "nodepool": "default",
        "requirements": Requirements(
            [
                Requirement.new(wk.CAPACITY_TYPE, "In", ["spot", "on-demand"]),
                Requirement.new(wk.INSTANCE_CPU, "Gt", ["2"], min_values=3),
            ]
        ),
        "instance_type_options": ("m5.large", "c5.large"),
        "requests": Resources.of(cpu="1500m", memory="3Gi", pods=4),
        "pods": ("default/a", "default/b"),
        "labels": {"team": "a"},
        "taints": (Taint("dedicated", "NoSchedule", "x"),),
        "created_at": 1_700_000_000.125,
    }
    return NodeClaim(name=name, **{**base, **fields})


def race(n: int, attempt: Callable[[int], bool]) -> list[int]:
    """Run `attempt(i)` in n threads released together; the indexes that returned True."""
    barrier = threading.Barrier(n)
    winners: list[int] = []
    errors: list[BaseException] = []

    def run(i: int) -> None:
        barrier.wait()
        try:
            if attempt(i):
                winners.append(i)
        except BaseException as error:  # surfaced below: a thread's exception is otherwise lost
            errors.append(error)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    return winners


# ---------------------------------------------------------------- claims


def test_a_created_claim_reads_back_exactly_as_it_was_given(store: StateStore) -> None:
    original = claim()
    assert store.create_claim(original)
    assert store.claims() == [original]


def test_creating_a_claim_that_exists_returns_false_and_changes_nothing(store: StateStore) -> None:
    store.create_claim(claim(pods=("default/a",)))
    assert not store.create_claim(claim(pods=("default/other",)))
    assert [c.pods for c in store.claims()] == [("default/a",)]


def test_saving_a_claim_overwrites_its_record(store: StateStore) -> None:
    store.create_claim(claim())
    launched = claim().with_changes(state="launched", instance_id="i-1", zone="us-east-1a", launched_at=1.5)
    store.save_claim(launched)
    assert store.claims() == [launched]


def test_saving_a_claim_that_was_never_created_records_it(store: StateStore) -> None:
    store.save_claim(claim("late"))
    assert [c.name for c in store.claims()] == ["late"]


def test_claims_are_listed_sorted_by_name(store: StateStore) -> None:
    for name in ("b", "c", "a"):
        store.create_claim(claim(name))
    assert [c.name for c in store.claims()] == ["a", "b", "c"]


def test_an_empty_store_has_no_claims(store: StateStore) -> None:
    assert store.claims() == []


def test_deleting_a_claim_twice_or_one_never_made_is_fine(store: StateStore) -> None:
    store.create_claim(claim("a"))
    store.create_claim(claim("b"))
    store.delete_claim("a")
    store.delete_claim("a")
    store.delete_claim("never")
    assert [c.name for c in store.claims()] == ["b"]


def test_a_deleted_claim_can_be_created_again(store: StateStore) -> None:
    store.create_claim(claim())
    store.delete_claim(claim().name)
    assert store.create_claim(claim())


def test_changing_a_claims_labels_after_saving_does_not_change_the_record(store: StateStore) -> None:
    saved = claim()
    store.create_claim(saved)
    saved.labels["team"] = "changed"
    read = store.claims()[0]
    read.labels["team"] = "changed again"
    assert store.claims()[0].labels == {"team": "a"}


def test_of_threads_creating_one_claim_exactly_one_succeeds(store: StateStore, busy_threads: None) -> None:
    winners = race(8, lambda i: store.create_claim(claim(pods=(f"default/p{i}",))))
    assert len(winners) == 1
    assert store.claims()[0].pods == (f"default/p{winners[0]}",)


# ---------------------------------------------------------------- leases


def test_a_free_lease_is_acquired(store: StateStore) -> None:
    assert store.acquire_lease("provisioner", "a", now=100.0, ttl=30.0)


def test_a_lease_held_by_another_is_refused_until_it_expires(store: StateStore) -> None:
    store.acquire_lease("provisioner", "a", now=100.0, ttl=30.0)
    assert not store.acquire_lease("provisioner", "b", now=100.0, ttl=30.0)
    assert not store.acquire_lease("provisioner", "b", now=129.999, ttl=30.0)


def test_an_expired_lease_is_handed_over_and_the_old_holder_is_then_refused(store: StateStore) -> None:
    store.acquire_lease("provisioner", "a", now=100.0, ttl=30.0)
    assert store.acquire_lease("provisioner", "b", now=130.0, ttl=30.0)
    assert not store.acquire_lease("provisioner", "a", now=131.0, ttl=30.0)


def test_the_holder_renews_its_lease_and_the_renewal_extends_it(store: StateStore) -> None:
    store.acquire_lease("provisioner", "a", now=100.0, ttl=30.0)
    assert store.acquire_lease("provisioner", "a", now=120.0, ttl=30.0)
    assert not store.acquire_lease("provisioner", "b", now=140.0, ttl=30.0)
    assert store.acquire_lease("provisioner", "b", now=150.0, ttl=30.0)


def test_a_released_lease_is_free_at_once(store: StateStore) -> None:
    store.acquire_lease("provisioner", "a", now=100.0, ttl=30.0)
    store.release_lease("provisioner", "a")
    assert store.acquire_lease("provisioner", "b", now=101.0, ttl=30.0)


def test_only_the_holder_can_release_a_lease(store: StateStore) -> None:
    store.acquire_lease("provisioner", "a", now=100.0, ttl=30.0)
    store.release_lease("provisioner", "b")
    assert not store.acquire_lease("provisioner", "b", now=101.0, ttl=30.0)


def test_releasing_a_lease_nobody_holds_is_fine(store: StateStore) -> None:
    store.release_lease("provisioner", "a")
    assert store.acquire_lease("provisioner", "a", now=1.0, ttl=1.0)


def test_a_holder_that_lost_its_lease_cannot_release_the_new_holders(store: StateStore) -> None:
    store.acquire_lease("provisioner", "a", now=100.0, ttl=30.0)
    store.acquire_lease("provisioner", "b", now=200.0, ttl=30.0)
    store.release_lease("provisioner", "a")
    assert not store.acquire_lease("provisioner", "c", now=201.0, ttl=30.0)


def test_leases_of_different_names_are_independent(store: StateStore) -> None:
    assert store.acquire_lease("provisioner", "a", now=100.0, ttl=30.0)
    assert store.acquire_lease("consolidator", "b", now=100.0, ttl=30.0)


def test_of_threads_racing_for_one_lease_exactly_one_wins(store: StateStore, busy_threads: None) -> None:
    for round_ in range(5):
        attempt = functools.partial(_take, store, f"lease-{round_}")
        assert len(race(8, attempt)) == 1


def _take(store: StateStore, lease: str, i: int) -> bool:
    return store.acquire_lease(lease, f"holder-{i}", now=100.0, ttl=30.0)


def test_of_threads_racing_for_an_expired_lease_exactly_one_takes_it_over(
    store: StateStore, busy_threads: None
) -> None:
    store.acquire_lease("provisioner", "old", now=0.0, ttl=30.0)
    winners = race(8, lambda i: store.acquire_lease("provisioner", f"holder-{i}", now=100.0, ttl=30.0))
    assert len(winners) == 1


# ---------------------------------------------------------------- capacity-error cache


def test_a_blocked_offering_is_blocked_until_its_time_and_not_at_it(store: StateStore) -> None:
    store.block_offerings([SPOT_M5, SPOT_C5], until=280.0)
    assert store.blocked_offerings(100.0) == {SPOT_M5, SPOT_C5}
    assert store.blocked_offerings(279.9) == {SPOT_M5, SPOT_C5}
    assert store.blocked_offerings(280.0) == frozenset()


def test_offerings_blocked_at_different_times_expire_separately(store: StateStore) -> None:
    store.block_offerings([SPOT_M5], until=200.0)
    store.block_offerings([ON_DEMAND_M5], until=300.0)
    assert store.blocked_offerings(250.0) == {ON_DEMAND_M5}


def test_blocking_again_extends_a_block_but_never_shortens_it(store: StateStore) -> None:
    store.block_offerings([SPOT_M5], until=300.0)
    store.block_offerings([SPOT_M5], until=200.0)
    assert store.blocked_offerings(250.0) == {SPOT_M5}
    store.block_offerings([SPOT_M5], until=400.0)
    assert store.blocked_offerings(350.0) == {SPOT_M5}


def test_an_expired_block_can_be_renewed(store: StateStore) -> None:
    store.block_offerings([SPOT_M5], until=100.0)
    store.block_offerings([SPOT_M5], until=500.0)
    assert store.blocked_offerings(400.0) == {SPOT_M5}


def test_blocking_nothing_is_fine(store: StateStore) -> None:
    store.block_offerings([], until=100.0)
    assert store.blocked_offerings(0.0) == frozenset()


def test_the_same_offering_given_twice_in_one_call_is_blocked_once(store: StateStore) -> None:
    store.block_offerings([SPOT_M5, SPOT_M5], until=100.0)
    assert store.blocked_offerings(0.0) == {SPOT_M5}


# ---------------------------------------------------------------------- disruption commands


def test_command_records_read_back_oldest_first_and_delete_idempotently(store: StateStore) -> None:
    from nodewright.model.command import CommandRecord

    later = CommandRecord("b", "consolidation", "Underutilized", ("n2",), ("i-2",), created_at=20.0)
    first = CommandRecord("a", "emptiness", "Empty", ("n1",), ("i-1",), replacements=("c-1",), created_at=10.0)
    store.save_command(later)
    store.save_command(first)
    assert store.commands() == [first, later]
    moved = first.advanced("tainted", 12.0)
    store.save_command(moved)
    assert store.commands()[0] == moved
    store.delete_command("a")
    store.delete_command("a")
    assert store.commands() == [later]


# ---------------------------------------------------------------------- drain records


def drain(instance_id: str = "i-0123456789abcdef0", **fields: Any) -> DrainRecord:
    base: dict[str, Any] = {
        "node": "ip-10-0-0-1.ec2.internal",
        "drain": "after-replacement",
        "deadline": 1_700_000_120.5,
        "started": 1_700_000_000.125,
        "origin": "spot-interruption",
        "replace_by": 1_700_000_060.25,
        "expires": 1_700_003_600.125,
    }
    return DrainRecord(instance_id=instance_id, **{**base, **fields})


def test_a_drain_record_reads_back_exactly_until_it_expires(store: StateStore) -> None:
    record = drain()
    store.save_drain(record)
    assert store.drain_record(record.chain, now=1_700_000_000.0) == record
    assert store.drain_record(record.chain, now=1_700_003_600.0) == record
    assert store.drain_record(record.chain, now=1_700_003_600.125) is None


def test_a_drain_record_without_a_replacement_time_reads_back_with_none(store: StateStore) -> None:
    record = drain(replace_by=None, drain="now", deadline=0.0)
    store.save_drain(record)
    assert store.drain_record(record.chain, now=0.0) == record


def test_there_is_no_drain_record_for_a_chain_never_started(store: StateStore) -> None:
    store.save_drain(drain("i-1"))
    assert store.drain_record(drain("i-2").chain, now=0.0) is None
    assert store.drain_record(drain("i-1", started=5.0).chain, now=0.0) is None


def test_two_chains_of_one_instance_have_a_record_each(store: StateStore) -> None:
    rebalance = drain("i-1", origin="rebalance", started=10.0, deadline=0.0)
    warning = drain("i-1", origin="spot-interruption", started=20.0)
    store.save_drain(rebalance)
    store.save_drain(warning)
    assert store.drain_record(rebalance.chain, now=0.0) == rebalance
    assert store.drain_record(warning.chain, now=0.0) == warning


def test_saving_a_drain_record_again_overwrites_it_and_extends_it(store: StateStore) -> None:
    store.save_drain(drain("i-1", expires=100.0))
    store.save_drain(drain("i-1", expires=200.0, node="other"))
    assert store.drain_record(drain("i-1").chain, now=150.0) == drain("i-1", expires=200.0, node="other")


def test_deleting_a_drain_record_twice_or_one_never_made_is_fine(store: StateStore) -> None:
    store.save_drain(drain("i-1"))
    store.save_drain(drain("i-2"))
    store.delete_drain(drain("i-1").chain)
    store.delete_drain(drain("i-1").chain)
    store.delete_drain("i-never/none/0.0")
    assert store.drain_record(drain("i-1").chain, now=0.0) is None
    assert store.drain_record(drain("i-2").chain, now=0.0) == drain("i-2")
