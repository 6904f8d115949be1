"""The fake cloud provider (nodewright.inmemory.cloud): chooses offerings as CreateFleet would, keeps
launches idempotent per claim, records calls, and fails on demand.

Faked: EC2. Observed: the instances it returns and lists, its `calls`, and the `on_launch` hook.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

import pytest

from nodewright.inmemory.clock import VirtualClock
from nodewright.inmemory.cloud import CloudCall, FakeCloudProvider, SimulatedCloudError
from nodewright.model import labels as wk
from nodewright.model.instance import Instance
from nodewright.model.instancetype import InstanceType, Offering, OfferingKey
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.requirements import Requirement, Requirements
from nodewright.ports import CloudProvider, InsufficientCapacity, LaunchError, LaunchRequest
from tests.builders import instance_type, node_pool

M5 = instance_type("m5.large", price=0.096, spot_price=0.04)
C5 = instance_type("c5.large", price=0.085, spot_price=0.035)
R5 = instance_type("r5.large", price=0.126, spot_price=0.05)
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")


def request(
    name: str = "default-1",
    *,
    options: Iterable[InstanceType] = (C5, M5, R5),
    requirements: Iterable[Requirement] = (),
    blocked: Iterable[OfferingKey] = (),
) -> LaunchRequest:
    return LaunchRequest(
        claim=NodeClaim(name=name, nodepool="default", requirements=Requirements(requirements)),
        nodepool=node_pool("default"),
        nodeclass=EC2NodeClass(name="default"),
        options=tuple(options),
        blocked=frozenset(blocked),
    )


def on_demand_only() -> Requirement:
    return Requirement.new(wk.CAPACITY_TYPE, "In", ["on-demand"])


def offered(it: InstanceType, *offerings: Offering) -> InstanceType:
    return InstanceType(it.name, it.requirements, it.capacity, it.overhead, offerings)


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock(1_000.0)


@pytest.fixture
def cloud(clock: VirtualClock) -> FakeCloudProvider:
    return FakeCloudProvider(clock)


# ---------------------------------------------------------------- choosing an offering


def test_launch_picks_the_cheapest_spot_offering_when_spot_is_allowed(cloud: FakeCloudProvider) -> None:
    instance = cloud.launch(request())
    assert (instance.capacity_type, instance.instance_type, instance.zone, instance.price) == (
        "spot",
        "c5.large",
        "us-east-1a",
        0.035,
    )


def test_launch_records_the_claim_pool_clock_and_a_sequential_id(cloud: FakeCloudProvider, clock: VirtualClock) -> None:
    first = cloud.launch(request("a"))
    clock.advance(5)
    second = cloud.launch(request("b"))
    assert (first.instance_id, second.instance_id) == ("i-1", "i-2")
    assert (first.nodeclaim, first.nodepool, first.state) == ("a", "default", "pending")
    assert (first.launched_at, second.launched_at) == (1_000.0, 1_005.0)
    assert first.provider_id == "aws:///us-east-1a/i-1"


def test_the_claims_capacity_type_requirement_is_honoured(cloud: FakeCloudProvider) -> None:
    instance = cloud.launch(request(requirements=[on_demand_only()]))
    assert (instance.capacity_type, instance.instance_type) == ("on-demand", "c5.large")


def test_the_claims_zone_requirement_is_honoured(cloud: FakeCloudProvider) -> None:
    instance = cloud.launch(request(requirements=[Requirement.new(wk.ZONE, "NotIn", ["us-east-1a"])]))
    assert instance.zone == "us-east-1b"


def test_instance_types_the_claim_excludes_are_not_launched(cloud: FakeCloudProvider) -> None:
    instance = cloud.launch(request(requirements=[Requirement.new(wk.INSTANCE_FAMILY, "In", ["m5", "r5"])]))
    assert instance.instance_type == "m5.large"


def test_reserved_capacity_goes_before_spot_and_spot_before_on_demand(cloud: FakeCloudProvider) -> None:
    reserved = offered(
        M5,
        Offering("us-east-1a", "on-demand", 0.096),
        Offering("us-east-1a", "spot", 0.04),
        Offering("us-east-1b", "reserved", 0.09),
    )
    assert cloud.launch(request("r", options=[C5, reserved])).capacity_type == "reserved"


def test_spot_pricier_than_the_cheapest_on_demand_offering_is_dropped(cloud: FakeCloudProvider) -> None:
    odd = offered(M5, Offering("us-east-1a", "on-demand", 0.05), Offering("us-east-1a", "spot", 0.07))
    instance = cloud.launch(request(options=[odd]))
    assert (instance.capacity_type, instance.price) == ("on-demand", 0.05)


def test_unavailable_offerings_are_skipped(cloud: FakeCloudProvider) -> None:
    gone = offered(C5, Offering("us-east-1a", "spot", 0.01, available=False), Offering("us-east-1b", "spot", 0.035))
    assert cloud.launch(request(options=[gone])).zone == "us-east-1b"


def test_ties_in_price_are_broken_by_instance_type_name_then_zone(cloud: FakeCloudProvider) -> None:
    a = offered(C5, Offering("us-east-1b", "on-demand", 0.1), Offering("us-east-1a", "on-demand", 0.1))
    b = offered(M5, Offering("us-east-1a", "on-demand", 0.1))
    instance = cloud.launch(request(options=[b, a]))
    assert (instance.instance_type, instance.zone) == ("c5.large", "us-east-1a")


def test_blocked_offerings_of_the_request_are_skipped(cloud: FakeCloudProvider) -> None:
    instance = cloud.launch(request(blocked=[("spot", "c5.large", "us-east-1a")]))
    assert (instance.instance_type, instance.zone) == ("c5.large", "us-east-1b")


def test_with_all_spot_blocked_the_launch_is_on_demand(cloud: FakeCloudProvider) -> None:
    spot = [("spot", it.name, z) for it in (C5, M5, R5) for z in ZONES]
    assert cloud.launch(request(blocked=spot)).capacity_type == "on-demand"


def test_a_request_with_no_allowed_offering_is_insufficient_capacity_naming_none(cloud: FakeCloudProvider) -> None:
    with pytest.raises(InsufficientCapacity) as raised:
        cloud.launch(request(requirements=[Requirement.new(wk.ZONE, "In", ["eu-west-1a"])]))
    assert raised.value.offerings == ()
    assert cloud.instances() == []


# ---------------------------------------------------------------- capacity errors


def test_an_insufficient_offering_falls_back_to_the_next_one_in_the_fleet(cloud: FakeCloudProvider) -> None:
    cloud.insufficient("spot", "c5.large", "us-east-1a")
    instance = cloud.launch(request())
    assert (instance.capacity_type, instance.instance_type, instance.zone) == ("spot", "c5.large", "us-east-1b")


def test_when_every_spot_offering_fails_the_launch_names_them_and_launches_nothing(
    cloud: FakeCloudProvider,
) -> None:
    cloud.insufficient("spot")
    with pytest.raises(InsufficientCapacity) as raised:
        cloud.launch(request(options=[C5, M5]))
    assert set(raised.value.offerings) == {("spot", it, z) for it in ("c5.large", "m5.large") for z in ZONES}
    assert raised.value.reason == "InsufficientInstanceCapacity"
    assert cloud.instances() == []


def test_blocking_what_failed_and_launching_again_gets_on_demand(cloud: FakeCloudProvider) -> None:
    cloud.insufficient("spot")
    with pytest.raises(InsufficientCapacity) as raised:
        cloud.launch(request())
    instance = cloud.launch(request(blocked=raised.value.offerings))
    assert instance.capacity_type == "on-demand"


def test_an_offering_whose_capacity_returns_launches_again(cloud: FakeCloudProvider) -> None:
    cloud.insufficient("spot", "c5.large", "*")
    cloud.restore_capacity("spot", "c5.large", "*")
    assert cloud.launch(request()).instance_type == "c5.large"


def test_a_zone_wide_shortage_leaves_the_other_zones(cloud: FakeCloudProvider) -> None:
    cloud.insufficient("spot", zone="us-east-1a")
    assert cloud.launch(request()).zone == "us-east-1b"


# ---------------------------------------------------------------- idempotency


def test_launching_a_claim_again_returns_the_same_instance_and_launches_nothing(cloud: FakeCloudProvider) -> None:
    first = cloud.launch(request("a"))
    again = cloud.launch(request("a", requirements=[on_demand_only()]))
    assert again == first
    assert cloud.instances() == [first]
    assert len(cloud.calls_to("launch")) == 2


def test_a_relaunch_of_a_terminated_claims_instance_returns_it_terminated(cloud: FakeCloudProvider) -> None:
    first = cloud.launch(request("a"))
    cloud.terminate([first.instance_id])
    again = cloud.launch(request("a"))
    assert (again.instance_id, again.state, again.live) == (first.instance_id, "terminated", False)


def test_threads_launching_one_claim_get_one_instance(cloud: FakeCloudProvider) -> None:
    results: list[Instance] = []
    barrier = threading.Barrier(8)

    def launch() -> None:
        barrier.wait()
        results.append(cloud.launch(request("a")))

    threads = [threading.Thread(target=launch) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({r.instance_id for r in results}) == 1
    assert len(cloud.instances()) == 1


# ---------------------------------------------------------------- instances and terminate


def test_instances_lists_the_ones_not_terminated_in_launch_order(cloud: FakeCloudProvider) -> None:
    a, b, c = (cloud.launch(request(n)) for n in "abc")
    cloud.terminate([b.instance_id])
    assert [i.instance_id for i in cloud.instances()] == [a.instance_id, c.instance_id]
    found = cloud.instance(b.instance_id)
    assert found is not None
    assert found.state == "terminated"


def test_terminating_unknown_or_gone_ids_is_fine(cloud: FakeCloudProvider) -> None:
    a = cloud.launch(request("a"))
    cloud.terminate([a.instance_id])
    cloud.terminate([a.instance_id, "i-404"])
    assert cloud.instances() == []


def test_an_instance_added_from_elsewhere_is_listed_and_ids_do_not_collide(
    cloud: FakeCloudProvider, clock: VirtualClock
) -> None:
    launched = cloud.launch(request("a"))
    orphan = cloud.add_instance(Instance("i-2", "m5.large", "us-east-1a", "on-demand", "running", 900.0, "lost"))
    later = cloud.launch(request("b"))
    assert later.instance_id == "i-3"
    assert cloud.instances() == [orphan, launched, later], "oldest first"
    assert cloud.launch(request("lost")) == orphan
    with pytest.raises(ValueError, match="i-2"):
        cloud.add_instance(orphan)


def test_aws_terminating_an_instance_takes_it_out_of_the_list_without_a_recorded_terminate(
    cloud: FakeCloudProvider,
) -> None:
    a = cloud.launch(request("a"))
    cloud.set_state(a.instance_id, "shutting-down")
    assert [i.state for i in cloud.instances()] == ["shutting-down"]
    cloud.set_state(a.instance_id, "terminated")
    assert cloud.instances() == []
    assert [c.method for c in cloud.calls] == ["launch", "instances", "instances"]


# ---------------------------------------------------------------- calls, knobs, hooks


def test_every_port_call_is_recorded_in_order_with_what_it_was_about(cloud: FakeCloudProvider) -> None:
    req = request("a")
    a = cloud.launch(req)
    cloud.instances()
    cloud.terminate([a.instance_id])
    assert cloud.calls == [
        CloudCall("launch", request=req),
        CloudCall("instances"),
        CloudCall("terminate", instance_ids=(a.instance_id,)),
    ]


def test_fail_next_fails_one_launch_with_a_launch_error_and_is_still_recorded(cloud: FakeCloudProvider) -> None:
    cloud.fail_next("launch")
    with pytest.raises(LaunchError):
        cloud.launch(request("a"))
    assert cloud.instances() == []
    assert cloud.launch(request("a")).instance_id == "i-1"
    assert len(cloud.calls_to("launch")) == 2


def test_fail_next_raises_the_given_error_the_given_number_of_times(cloud: FakeCloudProvider) -> None:
    throttled = RuntimeError("RequestLimitExceeded")
    cloud.fail_next("instances", throttled, times=2)
    for _ in range(2):
        with pytest.raises(RuntimeError) as raised:
            cloud.instances()
        assert raised.value is throttled
    assert cloud.instances() == []


def test_fail_next_defaults_to_a_simulated_cloud_error_for_terminate(cloud: FakeCloudProvider) -> None:
    a = cloud.launch(request("a"))
    cloud.fail_next("terminate")
    with pytest.raises(SimulatedCloudError):
        cloud.terminate([a.instance_id])
    assert cloud.instances() == [a]


@pytest.mark.parametrize(("method", "times"), [("create_fleet", 1), ("launch", 0)])
def test_fail_next_refuses_what_is_not_a_port_method_or_a_count(
    cloud: FakeCloudProvider, method: str, times: int
) -> None:
    with pytest.raises(ValueError, match=method if times else "times"):
        cloud.fail_next(method, times=times)


def test_the_launch_hook_sees_each_new_instance_once(clock: VirtualClock) -> None:
    seen: list[Instance] = []
    cloud = FakeCloudProvider(clock, on_launch=seen.append)
    a = cloud.launch(request("a"))
    cloud.launch(request("a"))
    assert seen == [a]


def test_the_launch_hook_may_call_back_into_the_fake(clock: VirtualClock) -> None:
    listed: list[list[Instance]] = []
    cloud = FakeCloudProvider(clock)
    cloud.on_launch = lambda _: listed.append(cloud.instances())
    a = cloud.launch(request("a"))
    assert listed == [[a]]


def test_reset_forgets_instances_calls_knobs_and_ids(cloud: FakeCloudProvider) -> None:
    cloud.launch(request("a"))
    cloud.insufficient("spot")
    cloud.fail_next("instances")
    cloud.reset()
    assert cloud.calls == []
    assert cloud.instances() == []
    instance = cloud.launch(request("a"))
    assert (instance.instance_id, instance.capacity_type) == ("i-1", "spot")


def test_the_fake_satisfies_the_cloud_provider_port(clock: VirtualClock) -> None:
    port: CloudProvider = FakeCloudProvider(clock)
    assert port.instances() == []


def test_without_a_clock_the_fake_uses_a_virtual_one_at_zero() -> None:
    assert FakeCloudProvider().launch(request()).launched_at == 0.0
