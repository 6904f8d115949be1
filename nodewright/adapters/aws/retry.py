"""Retry AWS calls that were throttled, with jittered exponential backoff.

Role: EC2 throttles per account and API (RequestLimitExceeded); a burst of launches from one
provisioner pass can trip it. botocore's own retries already absorb short bursts; this wrapper
adds a longer, jittered budget around the calls whose failure costs a whole provisioning pass
(CreateFleet, CreateLaunchTemplate, the Describe calls behind them).

Contract: `Backoff.call(fn)` returns what `fn` returns; it retries only errors `is_throttle`
accepts, at most `attempts` times in all, sleeping `random() * min(cap, base * 2**n)` seconds
before retry n ("full jitter", so concurrent callers spread out instead of retrying in step).
The last throttling error, and every other error, propagates unchanged. `sleep` and `random`
are injectable so tests never sleep and are deterministic.
"""

from __future__ import annotations

import random as _random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from botocore.exceptions import ClientError

T = TypeVar("T")

# Error codes AWS services use for "slow down" (EC2: RequestLimitExceeded; most others: Throttling*).
THROTTLE_CODES = frozenset(
    {
        "RequestLimitExceeded",
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottled",
        "RequestThrottledException",
        "TooManyRequestsException",
        "ProvisionedThroughputExceededException",
    }
)


def error_code(error: BaseException) -> str:
    """The AWS error code of a botocore ClientError, or '' for anything else."""
    if isinstance(error, ClientError):
        return str(error.response.get("Error", {}).get("Code", ""))
    return ""


def is_throttle(error: BaseException) -> bool:
    """True when `error` is AWS asking the caller to slow down."""
    return error_code(error) in THROTTLE_CODES


@dataclass(frozen=True, slots=True)
class Backoff:
    """A retry policy for throttled calls (see the module docstring for the contract)."""

    attempts: int = 6
    base: float = 0.2
    cap: float = 5.0
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False)
    random: Callable[[], float] = field(default=_random.random, compare=False)
    retryable: Callable[[BaseException], bool] = field(default=is_throttle, compare=False)

    def delay(self, retry: int) -> float:
        """Seconds to wait before retry number `retry` (0-based)."""
        return float(self.random() * min(self.cap, self.base * 2**retry))

    def call(self, fn: Callable[[], T]) -> T:
        """Run `fn`, retrying throttling errors; the last error propagates."""
        for retry in range(self.attempts - 1):
            try:
                return fn()
            except Exception as error:
                if not self.retryable(error):
                    raise
                self.sleep(self.delay(retry))
        return fn()
