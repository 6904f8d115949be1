"""The Observer (nodewright.ports) for Lambda: Powertools structured logs and EMF metrics.

One JSON log record per decision, with a `decision` field the saved Logs Insights queries filter
on; one EMF data point per metric, flushed by the handler's `log_metrics` decorator.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit, single_metric

from nodewright.adapters.metricnames import emitted_names


class PowertoolsObserver:
    """Writes decisions to a Powertools Logger and metrics to a Powertools Metrics."""

    def __init__(self, logger: Logger, metrics: Metrics) -> None:
        self.logger = logger
        self.metrics = metrics

    def decision(self, kind: str, **fields: object) -> None:
        """Log one decision as a structured record."""
        self.logger.info(kind, extra={"decision": kind, **fields})

    def metric(self, name: str, value: float, unit: str = "Count", **dimensions: str) -> None:
        """Emit one EMF data point, under Karpenter's name too where the meaning is the same
        (`adapters.metricnames`); dimensions go on a single-metric object so they stay separate.
        """
        emf_unit = MetricUnit[unit] if unit in MetricUnit.__members__ else MetricUnit.Count
        for emitted in emitted_names(name):
            if not dimensions:
                self.metrics.add_metric(name=emitted, unit=emf_unit, value=value)
                continue
            # Namespace and service come from POWERTOOLS_* in the environment, as for `metrics`.
            with single_metric(name=emitted, unit=emf_unit, value=value) as metric:
                for key, dim in dimensions.items():
                    metric.add_dimension(name=key, value=dim)
