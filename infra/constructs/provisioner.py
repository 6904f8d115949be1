"""The provisioner: every `rate_minutes`, launch right-sized EC2 capacity for pending pods.

Runs on an EventBridge schedule with reserved concurrency 1, because two passes deciding at once
would both launch nodes for the same pending pods. The interruption function also invokes it
asynchronously to replace interrupted capacity sooner than the next tick. Its schedule, role and
permissions are those of every scheduled controller (`scheduled.py`).
"""

from __future__ import annotations

from infra.constructs import permissions
from infra.constructs.scheduled import ScheduledFunction

PROVISIONER_FUNCTION = ScheduledFunction(
    name="provisioner",
    purpose="launches nodes for pending pods",
    # Housekeeping lists the cluster's instances: launches that never registered, orphans.
    extra_describe=(permissions.DESCRIBE_INSTANCES,),
    # Standby instances (CapacityBuffers with the standby strategy) are stopped, then started for pods.
    standby=True,
)
