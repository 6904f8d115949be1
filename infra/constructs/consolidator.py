"""The consolidator: every `rate_minutes`, remove or replace nodes the cluster no longer needs.

Runs on an EventBridge schedule with reserved concurrency 1 (two passes must not pick the same
candidates). Its commands taint, launch replacements, drain and terminate, so it shares the
provisioner's launch and owned-instance permissions (`scheduled.py`): launching the replacement
itself lets it wait for the node before draining.
"""

from __future__ import annotations

from infra.constructs import permissions
from infra.constructs.scheduled import ScheduledFunction

CONSOLIDATOR_FUNCTION = ScheduledFunction(
    name="consolidator",
    purpose="removes or replaces idle nodes",
    # Node repair reads the status checks of the cluster's instances (impaired ones are replaced).
    extra_describe=(permissions.DESCRIBE_INSTANCE_STATUS,),
)
