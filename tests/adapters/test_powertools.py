"""The Powertools observer writes decisions as JSON log records and metrics as EMF."""

from __future__ import annotations

import io
import json
import logging

import pytest
from aws_lambda_powertools import Logger, Metrics

from nodewright.adapters.powertools import PowertoolsObserver


def test_a_decision_is_one_json_record_with_its_fields() -> None:
    # Loggers of one service share a handler; a service of its own and a stream of its own keep
    # this test independent of the order tests run in.
    stream = io.StringIO()
    logger = Logger(service="observer-test", logger_handler=logging.StreamHandler(stream))
    observer = PowertoolsObserver(logger, Metrics(namespace="Nodewright", service="p"))
    observer.decision("launch", nodeclaim="default-abc", pods=["default/web-0"], price=0.096)
    record = json.loads(stream.getvalue().strip().splitlines()[-1])
    assert record["decision"] == "launch"
    assert record["nodeclaim"] == "default-abc"
    assert record["pods"] == ["default/web-0"]


def test_a_metric_with_dimensions_is_flushed_as_emf(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "Nodewright")
    observer = PowertoolsObserver(Logger(service="provisioner"), Metrics(namespace="Nodewright", service="p"))
    observer.metric("LaunchFailures", 1, reason="InsufficientCapacity")
    blob = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert blob["LaunchFailures"] == [1.0] or blob["LaunchFailures"] == 1.0
    assert blob["reason"] == "InsufficientCapacity"
    assert blob["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "Nodewright"


def test_a_metric_karpenter_has_is_emitted_under_both_names_with_the_same_dimensions(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "Nodewright")
    observer = PowertoolsObserver(Logger(service="provisioner"), Metrics(namespace="Nodewright", service="p"))
    observer.metric("NodesLaunched", 1, nodepool="default", capacity_type="spot")
    observer.metric("PendingToLaunchSeconds", 12.0, "Seconds")  # another meaning than Karpenter's: one name
    observer.metrics.flush_metrics()

    blobs = [json.loads(line) for line in capsys.readouterr().out.strip().splitlines() if line.startswith("{")]
    names = [m["Name"] for b in blobs for d in b["_aws"]["CloudWatchMetrics"] for m in d["Metrics"]]
    assert names.count("NodesLaunched") == names.count("karpenter_nodes_created_total") == 1
    assert "PendingToLaunchSeconds" in names
    assert not [n for n in names if n.startswith("karpenter_pods_startup")]
    (karpenter,) = [b for b in blobs if "karpenter_nodes_created_total" in b]
    assert (karpenter["nodepool"], karpenter["capacity_type"]) == ("default", "spot")
