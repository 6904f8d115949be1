"""The state a simulation run holds (see `world.py`'s theory of operation): one declaration the
world's parts share, so each part's module can be read, and type-checked, on its own.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from types import ModuleType
from typing import Any

from nodewright.controllers.observe import RecordingObserver
from nodewright.inmemory.clock import VirtualClock
from nodewright.model.nodepool import NodePool
from nodewright.simulator.aws import (
    Account,
    MirroredCloud,
    MirroredStateStore,
    SimulatedEc2,
)
from nodewright.simulator.catalog import SimCatalog
from nodewright.simulator.configuration import ScenarioConfiguration
from nodewright.simulator.faults import Faults
from nodewright.simulator.kube import Deployments, KubeScheduler, SimulatedCluster
from nodewright.simulator.kubehttp import HttpCluster
from nodewright.simulator.lambdas import EventLoop, Lambdas
from nodewright.simulator.metrics import (
    InterruptionRecord,
    Recorder,
)
from nodewright.simulator.scenario import Scenario


class WorldState:
    """Everything a simulation run holds, declared once for the parts of `World` that share it
    (each part is a base class of `World` in its own module; `world_wiring.Wiring.__init__`
    creates all of it).
    """

    # -- the scenario, the clock and the stand-ins for AWS and Kubernetes
    scenario: Scenario
    clock: VirtualClock
    end: float  # the virtual time the run ends
    loop: EventLoop
    lambdas: Lambdas
    cluster: SimulatedCluster
    faults: Faults
    http: HttpCluster | None  # with `kube_api: http`: the API emulator the functions' adapter reaches
    scheduler: KubeScheduler
    deployments: Deployments
    account: Account
    catalog: SimCatalog
    ec2: SimulatedEc2
    cloud: MirroredCloud
    store: MirroredStateStore | None
    configuration: ScenarioConfiguration  # what the functions read; `simulate --serve` adds the cluster's
    pools: dict[str, NodePool]
    foreign_nodes: list[str]  # nodes another autoscaler launched before the run
    # -- the functions: their handlers, modules, observers and saved log levels
    handlers: dict[str, Callable[[dict[str, Any], Any], Any]]
    modules: dict[str, ModuleType]
    observers: dict[str, RecordingObserver]
    _levels: dict[str, int]
    _observed: dict[str, int]  # decisions of each observer already read
    # -- what the accounting has seen
    recorder: Recorder
    _seen: int  # cluster changes already read
    _dirty: bool  # the cluster changed since the kube-scheduler last ran
    _unbound: set[str]  # pending pods
    _booting: dict[str, float]  # instance -> when its node registers
    _node_instance: dict[str, str]
    _reason: str  # why instances are being terminated, when the world terminates them
    # -- spot interruptions
    _forced: set[str]  # nodes under a spot interruption warning
    _watched: dict[str, InterruptionRecord]  # interrupted nodes by name
    _refused: dict[str, float]  # pod -> when a PodDisruptionBudget last refused its eviction
    _rng: random.Random  # draws which nodes are interrupted
    # -- broken nodes (world_repair.py)
    _impaired: dict[str, tuple[tuple[str, ...], float]]  # instance -> failed status checks, since
    _waiting_on: dict[str, str]  # a pod displaced from a broken node -> that node
    # -- the SQS event source mapping
    _queue_check: float | None
    _queue: Any
