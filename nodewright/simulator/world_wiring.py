"""The world's wiring: the stand-ins and the functions connected to them.

`Wiring.__init__` builds the virtual clock and event loop, the in-memory cluster (or, with
`kube_api: http`, the API emulator in front of it), the faults, the moto-backed AWS account and
the catalog; `_wire` builds the controllers on the simulated EC2, SSM, DynamoDB and SQS and hands
them to the real handlers (`functions.*.handler`, through their `configure` seam), and `release`
hands the handlers back their own. A function missing from this tree is skipped with a warning.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import random
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from nodewright.adapters.aws.instance_profiles import InstanceProfiles
from nodewright.adapters.aws.reservations import CapacityReservations
from nodewright.adapters.aws.retry import Backoff
from nodewright.adapters.kube.claims import KubeClaimObjects
from nodewright.adapters.kube.store import KINDS, NODES
from nodewright.config.noderoles import NodeRoles
from nodewright.controllers.algorithms import (
    AUTOMODE,
    consolidator_options_for,
    decisions_for,
    provisioner_options_for,
    schedule_for,
)
from nodewright.controllers.mirror import ClaimMirror
from nodewright.controllers.noderoles import RoleCheckedConfiguration
from nodewright.controllers.observe import RecordingObserver
from nodewright.controllers.provisioning import Provisioner, ProvisionerOptions, StaticConfiguration
from nodewright.inmemory.claimobjects import InMemoryClaimObjects
from nodewright.inmemory.clock import VirtualClock
from nodewright.model.instance import Instance
from nodewright.model.nodepool import NodePool
from nodewright.ports import Cluster
from nodewright.reference import automode
from nodewright.simulator.aws import (
    CLUSTER,
    IDEMPOTENCY_TABLE,
    NODE_INSTANCE_PROFILE,
    NODE_ROLE,
    QUEUE,
    STATE_TABLE,
    Account,
    MirroredCloud,
    MirroredStateStore,
    PublicParameters,
    SimulatedEc2,
    SimulatedLambda,
)
from nodewright.simulator.catalog import SimCatalog
from nodewright.simulator.configuration import ScenarioConfiguration
from nodewright.simulator.faults import Faults
from nodewright.simulator.kube import Deployments, KubeScheduler, SimulatedCluster
from nodewright.simulator.kubehttp import HttpCluster
from nodewright.simulator.lambdas import ACCOUNT, REGION, EventLoop, Lambdas
from nodewright.simulator.metrics import (
    InterruptionRecord,
    Recorder,
)
from nodewright.simulator.reservations import SimulatedReservations
from nodewright.simulator.scenario import Scenario
from nodewright.simulator.world_changes import Changes
from nodewright.simulator.world_kubelet import Kubelet

HANDLERS = {
    "provisioner": "functions.provisioner.handler",
    "interruption": "functions.interruption.handler",
    "consolidator": "functions.consolidator.handler",
}


def functions_importable() -> bool:
    """Make the `functions` package importable: it sits next to `nodewright` in the repository,
    but the package build only ships `nodewright` (so an installed `nodewright` command run from
    elsewhere would not find it). False when it is not there at all.
    """
    if importlib.util.find_spec("functions") is not None:
        return True
    root = Path(__file__).resolve().parents[2]
    if (root / "functions" / "__init__.py").exists():
        sys.path.insert(0, str(root))
        importlib.invalidate_caches()
        return True
    return False


def _import(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        if error.name and (name == error.name or name.startswith(error.name + ".")):
            return None
        raise


class Wiring(Kubelet, Changes):
    """Building the world and wiring the functions to it (module docstring)."""

    def __init__(self, scenario: Scenario, session: Any) -> None:
        self.scenario = scenario
        self.clock = VirtualClock(scenario.start)
        self.end = scenario.start + scenario.duration
        self.loop = EventLoop(self.clock)
        self.loop.after_step = self._after_step
        self.lambdas = Lambdas(self.loop, {name: getattr(scenario, name).memory_mb for name in HANDLERS})
        self.cluster = SimulatedCluster(self.clock)
        self.cluster.before_evict = self._before_evict
        self.cluster.after_evict = self._after_evict
        self.cluster.before_delete_node = lambda name: self._audit_node(name, "Node deleted through the API")
        # The scenario's faults meet the functions at the cluster's and AWS's edges (faults.py).
        self.faults = Faults(scenario, self.lambdas)
        self.cluster.before_request = self.faults.kube
        self.cluster.after_effect = self.faults.effect
        # With `kube_api: http` the functions reach the cluster through the real adapter over HTTP.
        self.http = (
            HttpCluster(
                self.cluster,
                fault=self.faults.api_fault,
                alive=self.faults.check_alive,
                effect=self.faults.effect,
                sleep=self.faults.kube_sleep,
            )
            if scenario.kube_api == "http"
            else None
        )
        # The NodeClaim objects the functions mirror their claims into (served over HTTP too).
        self.claim_objects = InMemoryClaimObjects(clock=self.clock)
        if self.http is not None:
            self.http.server.claims = self.claim_objects
        self.scheduler = KubeScheduler(self.cluster)
        self.deployments = Deployments(self.cluster, scenario.workloads)
        self.account = Account(session)
        self.catalog = SimCatalog(scenario.zones, scenario.nodepools)
        self.recorder = Recorder(start=scenario.start)
        self.observers = {name: RecordingObserver(now=self.clock.now) for name in HANDLERS}
        self.pools: dict[str, NodePool] = {p.name: p for p in scenario.nodepools}
        self.handlers: dict[str, Callable[[dict[str, Any], Any], Any]] = {}
        self.modules: dict[str, ModuleType] = {}
        self._levels: dict[str, int] = {}
        self.store: MirroredStateStore | None = None
        self._seen = 0
        self._dirty = False
        self._unbound: set[str] = set()
        self._forced: set[str] = set()  # nodes under a spot interruption warning
        self._watched: dict[str, InterruptionRecord] = {}  # interrupted nodes by name
        self._refused: dict[str, float] = {}  # pod -> when a PodDisruptionBudget last refused its eviction
        self._booting: dict[str, float] = {}
        self._node_instance: dict[str, str] = {}
        self._reason = ""
        self._queue_check: float | None = None
        self._queue: Any = None
        self._observed: dict[str, int] = dict.fromkeys(HANDLERS, 0)
        self._rng = random.Random(scenario.seed)
        self._impaired: dict[str, tuple[tuple[str, ...], float]] = {}
        self._waiting_on: dict[str, str] = {}

    def _wire(self) -> None:
        scenario = self.scenario
        reservations = SimulatedReservations(
            scenario.capacity_reservations, start=scenario.start, account=ACCOUNT, region=REGION
        )
        ec2 = SimulatedEc2(self.account.ec2, self, reservations=reservations, clock=self.clock.now)
        backoff = Backoff(sleep=self.faults.sleep, random=self.faults.jitter)
        # One count of each reservation, shared by the catalog and the cloud provider, as one
        # Lambda container shares it (nodewright.controllers.assembly).
        counts = CapacityReservations(ec2, self.clock, backoff=backoff)
        self.catalog.reserve(counts, self.clock)
        ssm = PublicParameters(self.account.ssm, self.account.images)
        clients = {"ec2": self.account.ec2, "dynamodb": self.account.dynamodb, "sqs": self.account.sqs}
        self.faults.install(clients, lambda: ec2.quiet)
        # The deploy key nodeRoles (scenario `node_roles`): profiles kept in the simulated IAM.
        roles = NodeRoles.of(NODE_ROLE, scenario.node_roles or ())
        profiles = (
            None
            if scenario.node_roles is None
            else InstanceProfiles(
                self.account.iam,
                cluster=CLUSTER.name,
                region=REGION,
                roles=roles,
                own_profile=NODE_INSTANCE_PROFILE,
                clock=self.clock,
                backoff=backoff,
            )
        )
        cloud = MirroredCloud(
            ec2,
            ssm,
            CLUSTER,
            instance_profile=NODE_INSTANCE_PROFILE,
            profiles=profiles,
            clock=self.clock,
            registry=self._live_instances,
            backoff=backoff,
            reservations=counts,
        )
        self.ec2 = ec2
        self.cloud = cloud
        self.store = store = MirroredStateStore(self.account.dynamodb, STATE_TABLE)
        mode = scenario.consolidation
        config = ScenarioConfiguration(
            StaticConfiguration(
                automode.nodepools(scenario.nodepools) if mode == AUTOMODE else scenario.nodepools,
                dict(scenario.nodeclasses),
                capacitybuffers=scenario.capacitybuffers,
                podtemplates=scenario.podtemplates,
                nodeoverlays=scenario.nodeoverlays,
            ),
            scenario.nodepool_changes,
            self.clock,
            scenario.start,
        )
        self.configuration = config
        if self.http is not None:
            self.http.start()

        def provisioner(observer: RecordingObserver) -> Provisioner:
            cluster = self._cluster_for("provisioner")
            return Provisioner(
                cluster=cluster,
                cloud=cloud,
                store=store,
                clock=self.clock,
                config=config
                if profiles is None
                else RoleCheckedConfiguration(config, roles, cluster, self.clock, observer),
                catalog=self.catalog,
                observer=observer,
                sleep=self.lambdas.sleep,
                wait=self.lambdas.sleep,
                options=provisioner_options_for(mode, ProvisionerOptions(idle_exit=scenario.provisioner.idle_exit)),
                mirror=self._mirror(observer),
                reservations=counts,
                schedule=schedule_for(mode),
            )

        module = importlib.import_module(HANDLERS["provisioner"])
        module.configure(provisioner(self.observers["provisioner"]))
        self._use("provisioner", module)

        interruption = _import(HANDLERS["interruption"])
        if interruption is None:
            self.recorder.warnings.append("functions/interruption/handler.py is missing: interruptions are not handled")
        else:
            try:
                self._wire_interruption(interruption, cloud, store, config)
            except (ImportError, TypeError, AttributeError) as error:
                self.recorder.warnings.append(f"the interruption function could not be wired: {error}")

        if scenario.consolidation == "off":
            self.recorder.warnings.append("consolidation is off in this scenario")
            return
        consolidator = _import(HANDLERS["consolidator"])
        if consolidator is None:
            self.recorder.warnings.append("functions/consolidator/handler.py is missing: nothing is consolidated")
            return
        try:
            from nodewright.controllers.disruption import Consolidator, ConsolidatorOptions
            from nodewright.controllers.settings import disruption_options

            options = consolidator_options_for(
                mode,
                ConsolidatorOptions(
                    disruption=disruption_options(
                        scenario.consolidation,
                        scenario.consolidation_min_savings,
                        scenario.consolidation_min_savings_percent,
                        repair_max_unhealthy_percent=scenario.repair_max_unhealthy_percent,
                    )
                ),
            )
            observer = self.observers["consolidator"]
            controller = Consolidator(
                cluster=self._cluster_for("consolidator"),
                cloud=cloud,
                store=store,
                clock=self.clock,
                config=config,
                catalog=self.catalog,
                observer=observer,
                launcher=provisioner(observer),
                options=options,
                sleep=self.lambdas.sleep,
                decisions=decisions_for(mode),
            )
            consolidator.configure(controller)
            self._use("consolidator", consolidator)
        except (ImportError, TypeError, AttributeError) as error:
            self.recorder.warnings.append(f"the consolidator could not be wired: {error}")

    def _wire_interruption(self, module: ModuleType, cloud: MirroredCloud, store: Any, config: Any) -> None:
        from nodewright.adapters.aws.signals import LambdaProvisionerTrigger, SqsContinuations
        from nodewright.adapters.idempotency import EventDeduplicator
        from nodewright.controllers.interruption import InterruptionController

        lambda_client = SimulatedLambda(self._async_invoke, self.faults.effect)
        controller = InterruptionController(
            cluster=self._cluster_for("interruption", (NODES,)),
            store=store,
            cloud=cloud,
            clock=self.clock,
            config=config,
            observer=self.observers["interruption"],
            continuations=SqsContinuations(self.account.sqs, self.account.queue_url),
            provisioner=LambdaProvisionerTrigger(lambda_client, "nodewright-provisioner"),
        )
        module.configure(EventDeduplicator(controller.process, table=IDEMPOTENCY_TABLE, client=self.account.dynamodb))
        self._use("interruption", module)
        from moto.sqs.models import sqs_backends

        self._queue = sqs_backends[ACCOUNT][REGION].queues[QUEUE]

    def _mirror(self, observer: RecordingObserver) -> ClaimMirror:
        """The NodeClaim mirror of the function `observer` is (the consolidator's judges): through
        that function's own adapter over HTTP (its requests are that function's), else straight
        into the objects.
        """
        function = next(name for name, known in self.observers.items() if known is observer)
        objects = self.claim_objects if self.http is None else KubeClaimObjects(self.http.adapter(function))
        return ClaimMirror(objects, self.clock, observer, judge=function == "consolidator")

    def _cluster_for(self, function: str, kinds: tuple[str, ...] = KINDS) -> Cluster:
        """The cluster as `function` reaches it: directly, or through its own adapter over HTTP."""
        return self.cluster if self.http is None else self.http.adapter(function, kinds)

    def _use(self, name: str, module: ModuleType) -> None:
        self.modules[name] = module
        self.handlers[name] = module.handler
        logger = getattr(module, "logger", None)
        if logger is not None and hasattr(logger, "setLevel"):
            self._levels[name] = logger.log_level if hasattr(logger, "log_level") else logging.INFO
            logger.setLevel(logging.WARNING)

    def release(self) -> None:
        """Hand the functions back their own controllers (built from the environment on next use)."""
        if self.http is not None:
            self.http.stop()
        self.faults.close()
        for name, module in self.modules.items():
            module.configure(None)
            logger = getattr(module, "logger", None)
            if name in self._levels and logger is not None:
                logger.setLevel(self._levels[name])

    def _live_instances(self) -> list[Instance]:
        return [
            Instance(
                instance_id=r.instance_id,
                instance_type=r.instance_type,
                zone=r.zone,
                capacity_type=r.capacity_type,
                state="running",
                launched_at=r.launched_at,
                nodeclaim=r.nodeclaim,
                nodepool=r.nodepool,
                image_id=r.image_id,
            )
            for r in self.recorder.instances.values()
            if r.terminated_at is None
        ]
