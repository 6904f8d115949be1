"""Provisioner Lambda: on each schedule tick (or an async invoke from the interruption function),
launch capacity for pending pods until shortly before the invocation's deadline.

Thin by design: read settings, build dependencies once per cold start, call the controller.
"""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools import Logger, Metrics

from nodewright.adapters.powertools import PowertoolsObserver
from nodewright.controllers.assembly import provisioner_from_settings
from nodewright.controllers.provisioning import Provisioner
from nodewright.controllers.settings import Settings

logger = Logger(service="provisioner")
metrics = Metrics(namespace="Nodewright", service="provisioner")
_provisioner: Provisioner | None = None


def configure(provisioner: Provisioner | None) -> None:
    """Use this provisioner instead of building one from the environment (tests, the simulator)."""
    global _provisioner  # noqa: PLW0603 - the one cached controller of this container
    _provisioner = provisioner


@metrics.log_metrics
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: Any) -> dict[str, object]:
    """Run the provisioner until ~10 s before this invocation's deadline."""
    global _provisioner  # noqa: PLW0603
    if _provisioner is None:
        _provisioner = provisioner_from_settings(Settings.from_env(os.environ), PowertoolsObserver(logger, metrics))
    # The remaining time, not a wall-clock deadline: the controller measures it with its own clock.
    remaining = context.get_remaining_time_in_millis() / 1000
    return _provisioner.run_for(remaining, invocation=context.aws_request_id).as_dict()
