"""DecisionLog on CloudWatch Logs' answer shapes: the saved queries' log groups, a query still running.

Faked: CloudWatch Logs by botocore's Stubber (moto implements neither DescribeQueryDefinitions nor
Insights' `@timestamp` text format; the end-to-end path over moto is tests/cli/test_explain_cli.py).
Observed: the requests sent (the stubber checks each one's parameters) and what `read` returns.
"""

from __future__ import annotations

import json

import boto3
from botocore.stub import ANY, Stubber

from nodewright.adapters.aws.logs import QUERY, DecisionLog, Invocation

REPORT = "Billed Duration: 1500 ms Memory Size: 512 MB"
GROUPS = ["/aws/lambda/Nodewright-demo-Consolidator", "/aws/lambda/Nodewright-demo-Provisioner"]


def test_the_saved_queries_log_groups_are_queried_and_records_and_reports_are_parsed() -> None:
    logs = boto3.client("logs", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    record = {"level": "INFO", "service": "provisioner", "decision": "launch", "nodeclaim": "default-abc"}
    with Stubber(logs) as stub:
        stub.add_response(
            "describe_query_definitions",
            {
                "queryDefinitions": [
                    {"name": "Nodewright/demo/Decisions", "queryDefinitionId": "1", "logGroupNames": GROUPS},
                    {"name": "Nodewright/demo/Errors", "queryDefinitionId": "2", "logGroupNames": GROUPS[:1]},
                ]
            },
            {"queryDefinitionNamePrefix": "Nodewright/demo/"},
        )
        stub.add_response(
            "start_query",
            {"queryId": "q-1"},
            {"logGroupNames": GROUPS, "startTime": 1000, "endTime": 2001, "queryString": QUERY},
        )
        stub.add_response("get_query_results", {"status": "Running", "results": []}, {"queryId": "q-1"})
        stub.add_response(
            "get_query_results",
            {
                "status": "Complete",
                "results": [
                    [
                        {"field": "@timestamp", "value": "2026-11-25 08:58:08.500"},
                        {"field": "@message", "value": json.dumps(record)},
                        {"field": "@log", "value": f"123456789012:{GROUPS[1]}"},
                    ],
                    [
                        {"field": "@timestamp", "value": "2026-11-25 08:58:09.000"},
                        {
                            "field": "@message",
                            "value": "REPORT RequestId: r Billed Duration: 1500 ms Memory Size: 512 MB",
                        },
                        {"field": "@log", "value": f"123456789012:{GROUPS[0]}"},
                    ],
                    [{"field": "@message", "value": "START RequestId: r Version: $LATEST"}],
                    [
                        {"field": "@timestamp", "value": "2026-11-25 08:58:10.000"},
                        {
                            "field": "@message",
                            "value": '{"level": "ERROR", "service": "consolidator", "message": "boom"}',
                        },
                    ],
                    [
                        {"field": "@timestamp", "value": "2026-11-25 08:58:11.000"},
                        {"field": "@message", "value": "2026-11-25T08:58:11Z r Task timed out after 60.00 seconds"},
                        {"field": "@log", "value": f"123456789012:{GROUPS[1]}"},
                    ],
                ],
            },
            {"queryId": ANY},
        )
        read = DecisionLog(logs, cluster="demo", sleep=lambda _: None).read(1000.0, 2000.0)
        stub.assert_no_pending_responses()

    assert read.log_groups == GROUPS
    assert read.complete
    decision, error, timeout = read.decisions
    assert (error["decision"], error["function"], error["at"]) == ("error", "consolidator", 1795597090.0)
    assert (timeout["decision"], timeout["function"], timeout["level"]) == ("timeout", "provisioner", "ERROR")
    assert decision["function"] == "provisioner"
    assert decision["nodeclaim"] == "default-abc"
    assert decision["at"] == 1795597088.5
    assert read.invocations == [Invocation("consolidator", 1795597089.0, 1500.0, 512)]
