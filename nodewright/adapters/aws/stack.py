"""The installation's functions, found through its CloudFormation stack, switched off for an uninstall.

Role: `nodewright.controllers.uninstall.FunctionSwitch` over AWS. `StackFunctions(stack, ...)`
lists the stack's resources once (DescribeStackResources) and `stop()`:
  * sets every Lambda function's reserved concurrency to 0 (PutFunctionConcurrency): Lambda then
    refuses every invocation, scheduled, from the queue or from another function, at once;
  * disables every EventBridge rule of the stack that has a schedule (DisableRule), so the
    schedules stop firing into throttles.
Both calls are idempotent. `cdk destroy` removes all of it afterwards; a redeploy restores both
(the template sets the concurrency and the rule state).
"""

from __future__ import annotations

from typing import Any

FUNCTION = "AWS::Lambda::Function"
RULE = "AWS::Events::Rule"


class StackFunctions:
    """Stops the functions and schedules of one Nodewright stack (see the module docstring)."""

    def __init__(self, stack_name: str, *, cloudformation: Any, lambda_client: Any, events: Any) -> None:
        self.stack_name = stack_name
        self._cloudformation = cloudformation
        self._lambda = lambda_client
        self._events = events

    def stop(self) -> list[str]:
        """Throttle every function to 0 and disable every schedule rule; the names, sorted."""
        resources = self._cloudformation.describe_stack_resources(StackName=self.stack_name)["StackResources"]
        stopped = []
        for resource in resources:
            physical = resource.get("PhysicalResourceId", "")
            if resource["ResourceType"] == FUNCTION and physical:
                self._lambda.put_function_concurrency(FunctionName=physical, ReservedConcurrentExecutions=0)
                stopped.append(f"function {physical}")
            elif resource["ResourceType"] == RULE and physical:
                rule = self._events.describe_rule(Name=physical)
                if rule.get("ScheduleExpression"):
                    self._events.disable_rule(Name=physical)
                    stopped.append(f"schedule {physical}")
        return sorted(stopped)
