"""The simulator runs the timings that are deployed: one source, nodewright/config/timings.py.

Real: the scenario reader and the CDK app's config loader. Observed: a scenario without a
`functions:` block gets the stack's function timeouts, memory, the event source mapping's batch
size and concurrency; the simulated queue's visibility timeout is the stack's.
"""

from __future__ import annotations

from collections.abc import Callable

from infra.config import load_config
from nodewright.config import timings
from nodewright.simulator.scenario import Scenario
from tests.simulator.conftest import NODECLASS, nodepool


def test_a_scenario_runs_the_deployed_function_timings(scenario: Callable[[str], Scenario]) -> None:
    run = scenario(f"name: timings\nduration: 10m\nnodepools:{nodepool()}nodeclasses:{NODECLASS}")
    deployed = load_config({"clusterName": "c"})
    assert run.provisioner.timeout == deployed.provisioner.timeout_seconds
    assert run.consolidator.timeout == deployed.consolidator.timeout_seconds
    assert run.interruption.timeout == deployed.interruption.timeout_seconds == timings.INTERRUPTION_TIMEOUT_SECONDS
    assert run.interruption.memory_mb == deployed.interruption.memory_mb
    assert run.interruption.batch_size == timings.INTERRUPTION_BATCH_SIZE
    # Each queue's event source mapping, the main one's and the priority one's.
    assert run.interruption.concurrency == run.interruption.priority_concurrency == timings.INTERRUPTION_CONCURRENCY
    # A spot warning a dead invocation held comes back within a sixth of its 120 s notice.
    assert timings.visibility_seconds(run.interruption.timeout) <= 20


def test_a_scenario_may_set_each_event_sources_concurrency(scenario: Callable[[str], Scenario]) -> None:
    functions = "functions:\n  interruption: {concurrency: 2, priority_concurrency: 7}\n"
    run = scenario(f"name: lanes\nduration: 10m\n{functions}nodepools:{nodepool()}nodeclasses:{NODECLASS}")
    assert (run.interruption.concurrency, run.interruption.priority_concurrency) == (2, 7)
