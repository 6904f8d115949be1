"""The deployed functions' timings: the one source the CDK stack (`infra/config.py`,
`infra/constructs/`) and the simulator (`nodewright/simulator`) both read, so a simulation runs
what is deployed.

Role: constants only (the runtime may not import `infra`, so the stack imports these instead).
A deployment may override a function's timeout through the CDK context (`infra/config.py`); the
simulator's scenario may override them in its `functions` block. Pure.
"""

from __future__ import annotations

# Function timeouts (seconds) and memory (MB), as deployed unless a context key overrides them.
# The provisioner's loop stops 10 s before its timeout; 68 s ends it at 58 s, just before the
# next one-minute tick (see infra/config.py).
PROVISIONER_TIMEOUT_SECONDS = 68
PROVISIONER_MEMORY_MB = 1024
CONSOLIDATOR_TIMEOUT_SECONDS = 120
CONSOLIDATOR_MEMORY_MB = 1024
# One interruption message is one bounded step (a cordon, a page of evictions, a continuation):
# seconds of work. The timeout also sets how long a message a dead invocation held stays
# invisible (timeout + VISIBILITY_MARGIN_SECONDS): the redelivery a crash before the drain's
# first continuation (or before a step's successor) costs. `python -m bench.crash_points` killed
# the function at every write and every pair of writes of a 6-pod strict-PDB spot drain: at a 45 s
# visibility (30 s + 15 s) 8 of 156 single crashes lose a pod, at 30 s none do but two crashes
# before the first continuation do, at 20 s (15 s + 5 s) no pair does (README, "Crash anywhere").
INTERRUPTION_TIMEOUT_SECONDS = 15
INTERRUPTION_MEMORY_MB = 512

# The schedules (seconds between invocations; the consolidator runs half a minute after the
# provisioner's tick).
PROVISIONER_RATE_SECONDS = 60
CONSOLIDATOR_RATE_SECONDS = 60
CONSOLIDATOR_OFFSET_SECONDS = 30

# The interruption queue keeps a message 300 s (Karpenter's value: a spot warning is useless after
# its 2 minutes). Every receive may hold a message for timeout + VISIBILITY_MARGIN_SECONDS, and a
# poison message must reach the DLQ (after QUEUE_MAX_RECEIVE_COUNT receives) before it expires.
# The margin covers the event source mapping's own time around the invocation, so a message is
# not received again while the invocation that holds it still runs.
QUEUE_RETENTION_SECONDS = 300
QUEUE_MAX_RECEIVE_COUNT = 3
VISIBILITY_MARGIN_SECONDS = 5

# Each interruption queue's event source mapping (the main queue's and the priority queue's):
# records per invocation, and how many invocations it runs at once (the SQS poller starts with five).
INTERRUPTION_BATCH_SIZE = 10
INTERRUPTION_CONCURRENCY = 5


def visibility_seconds(timeout: float) -> int:
    """The queue's visibility timeout for an interruption function of `timeout` seconds."""
    return int(timeout) + VISIBILITY_MARGIN_SECONDS
