"""Consolidator Lambda: on each schedule tick, advance or start one disruption command
(emptiness, expiration, drift, consolidation) until shortly before the invocation's deadline.

Thin by design: read settings, build dependencies once per cold start, call the controller.
"""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools import Logger, Metrics

from nodewright.adapters.powertools import PowertoolsObserver
from nodewright.controllers.assembly import consolidator_from_settings
from nodewright.controllers.disruption import Consolidator
from nodewright.controllers.settings import Settings

logger = Logger(service="consolidator")
metrics = Metrics(namespace="Nodewright", service="consolidator")
_consolidator: Consolidator | None = None


def configure(consolidator: Consolidator | None) -> None:
    """Use this consolidator instead of building one from the environment (tests, the simulator)."""
    global _consolidator  # noqa: PLW0603 - the one cached controller of this container
    _consolidator = consolidator


@metrics.log_metrics
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: Any) -> dict[str, object]:
    """Run the consolidator until ~10 s before this invocation's deadline."""
    global _consolidator  # noqa: PLW0603
    if _consolidator is None:
        _consolidator = consolidator_from_settings(Settings.from_env(os.environ), PowertoolsObserver(logger, metrics))
    # The remaining time, not a wall-clock deadline: the controller measures it with its own clock.
    remaining = context.get_remaining_time_in_millis() / 1000
    return _consolidator.run_for(remaining, invocation=context.aws_request_id).as_dict()
