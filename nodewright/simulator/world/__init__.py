"""The simulated world: one EKS cluster, its AWS account and Nodewright's three functions, on a
virtual clock.

Theory of operation. Everything happens on the `EventLoop` (nodewright.simulator.standins.lambdas):

* EventBridge schedules invoke the provisioner and the consolidator handlers (the real
  `functions.*.handler.handler`, through their `configure` seam) at their rates. Each invocation
  is a thread that runs until it sleeps or returns, so a provisioner polling every second for 80 s
  overlaps with everything else exactly as concurrent Lambdas would.
* Workload schedules scale Deployments; the in-memory API server recreates evicted or lost pods.
* After every step, `_after_step` looks at what changed in the cluster: the kube-scheduler binds
  pending pods (or marks them Unschedulable), the accounting follows pods and nodes, and the SQS
  event source mapping receives due messages from the interruption queue and invokes the
  interruption handler with them (deleting those not reported in `batchItemFailures`).
* The kubelet: every instance CreateFleet starts becomes a Ready Node `boot_delay` seconds later,
  with the labels and taints of its user data, capacity from the catalog, providerID
  `aws:///zone/id`; when an instance is terminated its Node goes at once (pods still on it are
  lost) and EC2's state-change events (shutting-down, terminated) are put on the bus.
* Spot interruptions are put on EventBridge as EC2 does (rebalance recommendation, interruption
  warning, and after `notice` the instance is terminated); the rules route them to the queue.
* Capacity errors come from `SimulatedEc2` (nodewright.simulator.standins.account).

Functions that do not exist yet in this tree (`functions/interruption/handler.py`,
`functions/consolidator/handler.py`) are skipped with a warning in the report.

Which file does what
--------------------
`World` is one object whose parts live in one module each; each part is a base class that reads
and writes the state declared in `world_state.py`, and calls only the parts it inherits from:

    world.py          `World`: `build()` (the cluster's fixed objects, the nodes another
                      autoscaler left, the wiring, the schedule) and this overview
    world_clock.py    the event loop: the scenario's events on the virtual clock, and `run()`
    world_wiring.py   building the clock, cluster (or API emulator), faults and moto account;
                      wiring the real handlers to controllers on them; `release()`
    world_invoke.py   invocations: EventBridge schedules, asynchronous invokes, how each ended
    world_sqs.py      the SQS event source mapping of the interruption function
    world_changes.py  after each step: cluster changes and decisions into the recorder (lost
                      pods included), the kube-scheduler, scale events, samples
    world_kubelet.py  EC2's hooks and the kubelet: capacity errors, launches into Nodes,
                      terminations and their state-change events
    world_spot.py     spot interruptions: signals on EventBridge, the interrupted nodes' records
    world_audits.py   budget and do-not-disrupt violations, limits, fleet choices, consolidation
                      replacements, duplicate and orphan instances after faults
    world_state.py    the state the parts share, declared once
    catalog.py        the controllers' Catalog (the offline catalog, filtered to the NodePools)

The stand-ins themselves are apart: AWS in `aws.py` and `fleet.py` (moto, CreateFleet's choice),
Kubernetes in `kube.py` and `kubehttp.py`, the Lambda runtime in `lambdas.py`, faults in
`faults.py`, the recorder in `metrics.py`; the scenario in `scenario.py`; the report in `report.py`.
"""

from __future__ import annotations

from nodewright.simulator.standins.catalog import SimCatalog
from nodewright.simulator.world.foreign import add_initial_nodes
from nodewright.simulator.world.schedule import Clockwork
from nodewright.simulator.world.wiring import HANDLERS, functions_importable

__all__ = ["HANDLERS", "SimCatalog", "World", "functions_importable"]


class World(Clockwork):
    """One simulation run (see the module docstring). Build inside `mock_aws` and the time patches:
    `World(scenario, session)`, then `build()`, `run()`, and `release()` at the end.
    """

    def build(self) -> None:
        """Create the AWS resources, the cluster's fixed objects, the controllers and the schedules."""
        scenario = self.scenario
        self.account.create(scenario.nodeclasses, scenario.zones, scenario.interruption.timeout)
        if scenario.node_roles is not None:
            self.account.create_node_roles(scenario.nodeclasses)
        for daemonset in scenario.daemonsets:
            self.cluster.add_daemonset(daemonset)
        for pdb in scenario.pdbs:
            self.cluster.add_pdb(pdb)
        # Nodes another autoscaler launched before the run (a migration's starting point).
        self.foreign_nodes = add_initial_nodes(self)
        self._wire()
        self._schedule()
