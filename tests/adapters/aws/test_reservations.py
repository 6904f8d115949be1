"""Capacity reservation selection: DescribeCapacityReservations through botocore's Stubber.

Faked: EC2, by a Stubber on a real botocore client (moto has no DescribeCapacityReservations).
The responses are written from the EC2 API reference's CapacityReservation shape (the Stubber
checks them against botocore's model): active, expired and cancelled ODCRs, a capacity block,
open and targeted match criteria, another account's reservation.
Observed: the requests sent (filters per selector term), the reservations selected and the counts.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import botocore.session
import pytest
from botocore.stub import Stubber

from nodewright.adapters.aws.reservations import CapacityReservations, queries, reservation_from_description
from nodewright.inmemory.clock import VirtualClock
from nodewright.model.nodeclass import SelectorTerm

NOW = datetime(2026, 11, 25, 9, 0, tzinfo=UTC).timestamp()
OWNER = "111122223333"


def described(
    ident: str,
    *,
    instance_type: str = "m5.xlarge",
    zone: str = "us-east-1a",
    available: int = 3,
    total: int = 4,
    state: str = "active",
    criteria: str = "targeted",
    kind: str | None = "odcr",
    end: datetime | None = None,
    owner: str = OWNER,
    tags: dict[str, str] | None = None,
) -> dict[str, Any]:
    item: dict[str, Any] = {
        "CapacityReservationId": ident,
        "OwnerId": owner,
        "CapacityReservationArn": f"arn:aws:ec2:us-east-1:{owner}:capacity-reservation/{ident}",
        "AvailabilityZoneId": "use1-az1",
        "InstanceType": instance_type,
        "InstancePlatform": "Linux/UNIX",
        "AvailabilityZone": zone,
        "Tenancy": "default",
        "TotalInstanceCount": total,
        "AvailableInstanceCount": available,
        "EbsOptimized": True,
        "EphemeralStorage": False,
        "State": state,
        "StartDate": datetime(2026, 11, 1, tzinfo=UTC),
        "EndDateType": "limited" if end else "unlimited",
        "InstanceMatchCriteria": criteria,
        "CreateDate": datetime(2026, 11, 1, tzinfo=UTC),
        "Tags": [{"Key": k, "Value": v} for k, v in (tags or {}).items()],
    }
    if end is not None:
        item["EndDate"] = end
    if kind is not None:
        item["ReservationType"] = kind
    return item


@pytest.fixture
def ec2() -> Any:
    return botocore.session.get_session().create_client(
        "ec2", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )


def test_each_selector_term_becomes_karpenters_query() -> None:
    terms = (
        SelectorTerm(id="cr-0123456789abcdef0"),
        SelectorTerm(tags={"team": "ml", "purpose": "*"}, owner_id=OWNER),
        SelectorTerm(instance_match_criteria="open"),
    )
    assert queries(terms) == [
        {"CapacityReservationIds": ["cr-0123456789abcdef0"], "Filters": [{"Name": "state", "Values": ["active"]}]},
        {
            "Filters": [
                {"Name": "state", "Values": ["active"]},
                {"Name": "owner-id", "Values": [OWNER]},
                {"Name": "tag-key", "Values": ["purpose"]},
                {"Name": "tag:team", "Values": ["ml"]},
            ],
            "MaxResults": 1000,
        },
        {
            "Filters": [
                {"Name": "state", "Values": ["active"]},
                {"Name": "instance-match-criteria", "Values": ["open"]},
            ],
            "MaxResults": 1000,
        },
    ]


def test_selects_active_reservations_and_capacity_blocks_with_their_counts(ec2: Any) -> None:
    block_end = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
    term = SelectorTerm(tags={"team": "ml"})
    with Stubber(ec2) as stub:
        stub.add_response(
            "describe_capacity_reservations",
            {
                "CapacityReservations": [
                    described("cr-0aaaaaaaaaaaaaaa1", criteria="open", available=2),
                    described(
                        "cr-0aaaaaaaaaaaaaaa2",
                        kind="capacity-block",
                        instance_type="p5.48xlarge",
                        available=1,
                        total=1,
                        end=block_end,
                    ),
                    # EC2 answers by the filters; one whose end already passed is still dropped.
                    described("cr-0aaaaaaaaaaaaaaa3", end=datetime(2026, 11, 25, 8, 0, tzinfo=UTC)),
                ]
            },
            queries([term])[0],
        )
        selected = CapacityReservations(ec2, VirtualClock(NOW)).select([term])
        stub.assert_no_pending_responses()
    assert [(r.id, r.instance_type, r.reservation_type, r.instance_match_criteria, r.available) for r in selected] == [
        ("cr-0aaaaaaaaaaaaaaa1", "m5.xlarge", "default", "open", 2),
        ("cr-0aaaaaaaaaaaaaaa2", "p5.48xlarge", "capacity-block", "targeted", 1),
    ]
    assert selected[1].end_time == block_end.timestamp()


def test_an_unknown_id_selects_nothing_and_other_errors_propagate(ec2: Any) -> None:
    with Stubber(ec2) as stub:
        stub.add_client_error("describe_capacity_reservations", "InvalidCapacityReservationId.NotFound")
        assert CapacityReservations(ec2, VirtualClock(NOW)).select([SelectorTerm(id="cr-0bbbbbbbbbbbbbbb1")]) == ()
        stub.add_client_error("describe_capacity_reservations", "UnauthorizedOperation", http_status_code=403)
        with pytest.raises(Exception, match="UnauthorizedOperation"):
            CapacityReservations(ec2, VirtualClock(NOW)).select([SelectorTerm(id="cr-0bbbbbbbbbbbbbbb1")])


def test_terms_are_ored_and_a_reservation_two_terms_select_counts_once(ec2: Any) -> None:
    terms = [SelectorTerm(id="cr-0ccccccccccccccc1"), SelectorTerm(tags={"team": "ml"}, owner_id=OWNER)]
    first, second = queries(terms)
    with Stubber(ec2) as stub:
        stub.add_response(
            "describe_capacity_reservations", {"CapacityReservations": [described("cr-0ccccccccccccccc1")]}, first
        )
        stub.add_response(
            "describe_capacity_reservations",
            {
                "CapacityReservations": [
                    described("cr-0ccccccccccccccc1"),
                    described("cr-0ccccccccccccccc2", zone="us-east-1b"),
                ]
            },
            second,
        )
        selected = CapacityReservations(ec2, VirtualClock(NOW)).select(terms)
    assert [r.id for r in selected] == ["cr-0ccccccccccccccc1", "cr-0ccccccccccccccc2"]


def test_counts_follow_launches_and_capacity_errors_until_ec2_is_read_again(ec2: Any) -> None:
    clock = VirtualClock(NOW)
    term = SelectorTerm(id="cr-0ddddddddddddddd1")
    with Stubber(ec2) as stub:
        for available in (3, 1):
            stub.add_response(
                "describe_capacity_reservations",
                {"CapacityReservations": [described("cr-0ddddddddddddddd1", available=available)]},
                queries([term])[0],
            )
        reservations = CapacityReservations(ec2, clock, ttl=60)
        reservations.select([term])
        reservations.mark_launched("cr-0ddddddddddddddd1")
        assert reservations.remaining() == {"cr-0ddddddddddddddd1": 2}
        reservations.select([term])  # within the TTL: no call, the count stays ours
        assert reservations.remaining() == {"cr-0ddddddddddddddd1": 2}
        reservations.mark_unavailable(["cr-0ddddddddddddddd1"])
        assert reservations.remaining() == {"cr-0ddddddddddddddd1": 0}
        clock.advance(60)
        reservations.select([term])  # EC2's count replaces ours
        stub.assert_no_pending_responses()
    assert reservations.remaining() == {"cr-0ddddddddddddddd1": 1}


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("InstanceMatchCriteria", "future-criteria", "InstanceMatchCriteria 'future-criteria' is not open or targeted"),
        ("ReservationType", "unknown-kind", "ReservationType 'unknown-kind' is not odcr or capacity-block"),
    ],
    ids=["match-criteria", "reservation-type"],
)
def test_a_reservation_nodewright_cannot_read_is_refused_by_name(field: str, value: object, message: str) -> None:
    item = described("cr-0eeeeeeeeeeeeeee1")
    item[field] = value
    with pytest.raises(ValueError, match=f"capacity reservation cr-0eeeeeeeeeeeeeee1: {message}"):
        reservation_from_description(item)


def test_an_interruptible_reservation_is_read_as_one() -> None:
    item = described("cr-0eeeeeeeeeeeeeee1")
    item["Interruptible"] = True
    assert reservation_from_description(item).interruptible
    assert not reservation_from_description(described("cr-0eeeeeeeeeeeeeee2")).interruptible
