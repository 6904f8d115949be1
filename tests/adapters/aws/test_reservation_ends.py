"""Which capacity reservations ended: DescribeCapacityReservations by id through botocore's Stubber.

Faked: EC2, by a Stubber on a real botocore client (moto has no DescribeCapacityReservations), with
the CapacityReservation shape of tests/adapters/aws/test_reservations.py (expired, cancelled and
active ODCRs) and EC2's InvalidCapacityReservationId.NotFound for an id it does not know.
Observed: the requests sent, the ids reported ended, and which ids are asked again later.
"""

from __future__ import annotations

from typing import Any

import pytest
from botocore.stub import Stubber

from nodewright.adapters.aws.reservations import CapacityReservations
from nodewright.inmemory.clock import VirtualClock
from tests.adapters.aws.test_reservations import NOW, described, ec2

__all__ = ["ec2"]

ACTIVE, EXPIRED, CANCELLED, UNKNOWN = (f"cr-0aaaaaaaaaaaaaaa{i}" for i in range(1, 5))


def test_expired_and_cancelled_reservations_ended_active_ones_did_not(ec2: Any) -> None:
    clock = VirtualClock(NOW)
    reservations = CapacityReservations(ec2, clock)
    with Stubber(ec2) as stub:
        stub.add_response(
            "describe_capacity_reservations",
            {
                "CapacityReservations": [
                    described(ACTIVE),
                    described(EXPIRED, state="expired"),
                    described(CANCELLED, state="cancelled"),
                ]
            },
            {"CapacityReservationIds": [ACTIVE, EXPIRED, CANCELLED]},
        )
        assert reservations.ended([EXPIRED, ACTIVE, CANCELLED, ACTIVE]) == {EXPIRED, CANCELLED}
        # Within the minute nothing is asked again: an ended one stays ended, an active one is cached.
        assert reservations.ended([EXPIRED, ACTIVE]) == {EXPIRED}
        stub.assert_no_pending_responses()
    clock.advance(61)
    with Stubber(ec2) as stub:
        stub.add_response(
            "describe_capacity_reservations",
            {"CapacityReservations": [described(ACTIVE, state="expired")]},
            {"CapacityReservationIds": [ACTIVE]},
        )
        assert reservations.ended([EXPIRED, ACTIVE]) == {EXPIRED, ACTIVE}
        stub.assert_no_pending_responses()


def test_an_id_ec2_does_not_know_ended_and_the_others_are_asked_one_by_one(ec2: Any) -> None:
    reservations = CapacityReservations(ec2, VirtualClock(NOW))
    not_found = "InvalidCapacityReservationId.NotFound"
    with Stubber(ec2) as stub:
        stub.add_client_error(
            "describe_capacity_reservations", not_found, expected_params={"CapacityReservationIds": [ACTIVE, UNKNOWN]}
        )
        stub.add_response(
            "describe_capacity_reservations",
            {"CapacityReservations": [described(ACTIVE)]},
            {"CapacityReservationIds": [ACTIVE]},
        )
        stub.add_client_error(
            "describe_capacity_reservations", not_found, expected_params={"CapacityReservationIds": [UNKNOWN]}
        )
        assert reservations.ended([UNKNOWN, ACTIVE]) == {UNKNOWN}
        stub.assert_no_pending_responses()


def test_any_other_error_propagates_and_decides_nothing(ec2: Any) -> None:
    reservations = CapacityReservations(ec2, VirtualClock(NOW))
    with Stubber(ec2) as stub:
        stub.add_client_error("describe_capacity_reservations", "UnauthorizedOperation")
        with pytest.raises(Exception, match="UnauthorizedOperation"):
            reservations.ended([ACTIVE])
    with Stubber(ec2) as stub:
        stub.add_response("describe_capacity_reservations", {"CapacityReservations": [described(ACTIVE)]})
        assert reservations.ended([ACTIVE]) == frozenset()
