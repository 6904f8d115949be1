"""The API-load benchmark counts the provisioner's Event API calls among its Kubernetes requests.

Faked: the cluster (the API emulator in a child process, as the benchmark runs it), EC2 and the
state store. Real: the provisioner loop, the Kubernetes adapter over HTTP, the benchmark's
accounting. Observed: the figures `bench.api_load.measure` returns, against what the emulator
says it served.
"""

from __future__ import annotations

import pytest

from bench.api_load import measure

pytestmark = pytest.mark.integration


def test_event_calls_are_counted_among_the_requests_and_match_what_the_server_served() -> None:
    result = measure(60, 2, 0.5, burst=3, burst_every=5.0, invocation=20.0, seed=1, nominate_after=0)

    served = result["server_usage"]
    served_events = sum(n for call, (n, _) in served.items() if call.endswith(" events"))
    assert result["pods_launched_for"] >= 3
    assert result["event_requests"] >= 3  # nominate_after=0: one Nominated per launched burst pod
    assert result["event_requests"] == served_events
    assert result["event_requests"] <= result["requests"]
    assert result["event_share"] == round(result["event_requests"] / result["requests"], 4)
