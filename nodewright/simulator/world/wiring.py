"""The functions wired to the stand-ins: `Functions` builds the controllers on the simulated EC2,
SSM, DynamoDB, SQS and the cluster (or each function's own adapter over HTTP), hands them to the
real handlers (`functions.*.handler`, through their `configure` seam) and deploys each handler
(`Invocations.deploy`); `release` hands the handlers back their own. A function missing from this
tree is skipped with a warning.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

from nodewright.adapters.aws.ec2 import Ec2CloudProvider
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
from nodewright.controllers.assembly import build_provisioner
from nodewright.controllers.mirror import ClaimMirror
from nodewright.controllers.noderoles import RoleCheckedConfiguration
from nodewright.controllers.observe import RecordingObserver
from nodewright.controllers.provisioning import Provisioner
from nodewright.controllers.provisionoptions import ProvisionerOptions, StaticConfiguration
from nodewright.inmemory.claimobjects import InMemoryClaimObjects
from nodewright.model.instance import Instance
from nodewright.ports import Clock, Cluster
from nodewright.reference import automode
from nodewright.simulator.report.metrics import Recorder
from nodewright.simulator.scenario import Scenario
from nodewright.simulator.standins.account import (
    CLUSTER,
    IDEMPOTENCY_TABLE,
    NODE_INSTANCE_PROFILE,
    NODE_ROLE,
    Account,
    PublicParameters,
    SimulatedLambda,
)
from nodewright.simulator.standins.catalog import SimCatalog
from nodewright.simulator.standins.configuration import ScenarioConfiguration
from nodewright.simulator.standins.ec2 import SimulatedEc2
from nodewright.simulator.standins.faults import Faults
from nodewright.simulator.standins.kube import SimulatedCluster
from nodewright.simulator.standins.kubehttp import HttpCluster
from nodewright.simulator.standins.lambdas import REGION, Lambdas
from nodewright.simulator.standins.mirrors import MirroredCloud, MirroredStateStore
from nodewright.simulator.standins.solveclock import SolveClock
from nodewright.simulator.world.invocations import Invocations

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


class Functions:
    """The three functions wired to the stand-ins (module docstring). `wire` runs once, after the
    account exists; `cloud` is the functions' EC2 provider from then on.
    """

    def __init__(
        self,
        *,
        scenario: Scenario,
        clock: Clock,
        lambdas: Lambdas,
        faults: Faults,
        account: Account,
        catalog: SimCatalog,
        cluster: SimulatedCluster,
        http: HttpCluster | None,
        claim_objects: InMemoryClaimObjects,
        observers: Mapping[str, RecordingObserver],
        recorder: Recorder,
        ec2: SimulatedEc2,
        store: MirroredStateStore,
        invocations: Invocations,
    ) -> None:
        self._scenario = scenario
        self._clock = clock
        self._lambdas = lambdas
        self._faults = faults
        self._account = account
        self._catalog = catalog
        self._cluster = cluster
        self._http = http
        self._claim_objects = claim_objects
        self._observers = observers
        self._recorder = recorder
        self._ec2 = ec2
        self._store = store
        self._invocations = invocations
        self.modules: dict[str, ModuleType] = {}
        self._levels: dict[str, int] = {}  # each handler's log level before the run
        self._cloud: MirroredCloud | None = None
        self._configuration: ScenarioConfiguration | None = None

    @property
    def cloud(self) -> MirroredCloud:
        """The functions' EC2 cloud provider (once wired)."""
        if self._cloud is None:
            raise RuntimeError("the functions are not wired yet")
        return self._cloud

    @property
    def configuration(self) -> ScenarioConfiguration:
        """What the functions read as their configuration (once wired); `simulate --serve` adds
        the cluster's NodePools to it.
        """
        if self._configuration is None:
            raise RuntimeError("the functions are not wired yet")
        return self._configuration

    def wire(self) -> None:
        """Build the controllers and hand them to the handlers (module docstring)."""
        scenario = self._scenario
        ec2 = self._ec2
        backoff = Backoff(sleep=self._faults.sleep, random=self._faults.jitter)
        # One count of each reservation, shared by the catalog and the cloud provider, as one
        # Lambda container shares it (nodewright.controllers.assembly).
        counts = CapacityReservations(ec2, self._clock, backoff=backoff)
        self._catalog.reserve(counts, self._clock)
        ssm = PublicParameters(self._account.ssm, self._account.images)
        clients = {"ec2": self._account.ec2, "dynamodb": self._account.dynamodb, "sqs": self._account.sqs}
        self._faults.install(clients, lambda: ec2.quiet)
        # The deploy key nodeRoles (scenario `node_roles`): profiles kept in the simulated IAM.
        roles = NodeRoles.of(NODE_ROLE, scenario.node_roles or ())
        profiles = (
            None
            if scenario.node_roles is None
            else InstanceProfiles(
                self._account.iam,
                cluster=CLUSTER.name,
                region=REGION,
                roles=roles,
                own_profile=NODE_INSTANCE_PROFILE,
                clock=self._clock,
                backoff=backoff,
            )
        )
        cloud = MirroredCloud(
            Ec2CloudProvider(
                ec2,
                ssm,
                CLUSTER,
                instance_profile=NODE_INSTANCE_PROFILE,
                profiles=profiles,
                clock=self._clock,
                backoff=backoff,
                reservations=counts,
            ),
            registry=lambda: live_instances(self._recorder),
        )
        self._cloud = cloud
        store = self._store
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
            self._clock,
            scenario.start,
        )
        self._configuration = config

        def images() -> Mapping[str, frozenset[str]]:
            # As the Lambdas' assembly: the AMIs each EC2NodeClass resolves to now (drift by image).
            return cloud.image_ids(config.load()[1])

        if self._http is not None:
            self._http.start()

        # ProvisionerOptions set otherwise than deployed (an experiment's, e.g. the latency benchmark's).
        changed: dict[str, Any] = dict(scenario.provisioner_options)

        def provisioner(observer: RecordingObserver) -> Provisioner:
            cluster = self._cluster_for("provisioner")
            return build_provisioner(
                cluster=cluster,
                cloud=cloud,
                store=store,
                clock=self._clock,
                config=config
                if profiles is None
                else RoleCheckedConfiguration(config, roles, cluster, self._clock, observer),
                catalog=self._catalog,
                observer=observer,
                sleep=self._lambdas.sleep,
                wait=self._lambdas.sleep,
                options=provisioner_options_for(
                    mode,
                    replace(ProvisionerOptions(idle_exit=scenario.provisioner.idle_exit), **changed),
                ),
                mirror=self._mirror(observer),
                reservations=counts,
                # The solve budget on a charged clock, not the machine's wall clock (solveclock.py).
                solve_clock=SolveClock(),
                schedule=schedule_for(mode),
                images=images,
            )

        module = importlib.import_module(HANDLERS["provisioner"])
        module.configure(provisioner(self._observers["provisioner"]))
        self._use("provisioner", module)

        interruption = _import(HANDLERS["interruption"])
        if interruption is None:
            self._recorder.warnings.append(
                "functions/interruption/handler.py is missing: interruptions are not handled"
            )
        else:
            try:
                self._wire_interruption(interruption, cloud, store, config)
            except (ImportError, TypeError, AttributeError) as error:
                self._recorder.warnings.append(f"the interruption function could not be wired: {error}")

        if scenario.consolidation == "off":
            self._recorder.warnings.append("consolidation is off in this scenario")
            return
        consolidator = _import(HANDLERS["consolidator"])
        if consolidator is None:
            self._recorder.warnings.append("functions/consolidator/handler.py is missing: nothing is consolidated")
            return
        try:
            from nodewright.controllers.consolidationoptions import ConsolidatorOptions
            from nodewright.controllers.disruption import Consolidator
            from nodewright.controllers.settings import disruption_options

            options = consolidator_options_for(
                mode,
                ConsolidatorOptions(
                    disruption=disruption_options(
                        scenario.consolidation,
                        scenario.consolidation_min_savings,
                        scenario.consolidation_min_savings_percent,
                        repair_max_unhealthy_percent=scenario.repair_max_unhealthy_percent,
                        spot_to_spot=scenario.spot_to_spot_consolidation,
                    ),
                    steer_deletion_cost=scenario.deletion_cost_steering,
                ),
            )
            observer = self._observers["consolidator"]
            cluster = self._cluster_for("consolidator")
            # The replacements launch through a provisioner's launch path, and its mirror's writer.
            replacing = provisioner(observer)
            controller = Consolidator(
                cluster=cluster,
                cloud=cloud,
                claim_records=store,
                command_records=store,
                leases=store,
                offering_blocks=store,
                clock=self._clock,
                config=config,
                catalog=self._catalog,
                observer=observer,
                launcher=replacing.launcher,
                options=options,
                sleep=self._lambdas.sleep,
                decisions=decisions_for(mode),
                mirror=replacing.mirror,
                images=images,
            )
            consolidator.configure(controller)
            self._use("consolidator", consolidator)
        except (ImportError, TypeError, AttributeError) as error:
            self._recorder.warnings.append(f"the consolidator could not be wired: {error}")

    def _wire_interruption(self, module: ModuleType, cloud: MirroredCloud, store: Any, config: Any) -> None:
        from nodewright.adapters.aws.signals import LambdaProvisionerTrigger, SqsContinuations
        from nodewright.adapters.idempotency import EventDeduplicator
        from nodewright.controllers.interruption import InterruptionController

        lambda_client = SimulatedLambda(self._invocations.invoke_async, self._faults.effect)
        controller = InterruptionController(
            cluster=self._cluster_for("interruption", (NODES,)),
            claim_records=store,
            drain_records=store,
            offering_blocks=store,
            cloud=cloud,
            clock=self._clock,
            config=config,
            observer=self._observers["interruption"],
            continuations=SqsContinuations(self._account.sqs, self._account.queue_url),
            provisioner=LambdaProvisionerTrigger(lambda_client, "nodewright-provisioner"),
        )
        module.configure(EventDeduplicator(controller.process, table=IDEMPOTENCY_TABLE, client=self._account.dynamodb))
        self._use("interruption", module)

    def _mirror(self, observer: RecordingObserver) -> ClaimMirror:
        """The NodeClaim mirror of the function `observer` is (the consolidator's judges): through
        that function's own adapter over HTTP (its requests are that function's), else straight
        into the objects.
        """
        function = next(name for name, known in self._observers.items() if known is observer)
        objects = self._claim_objects if self._http is None else KubeClaimObjects(self._http.adapter(function))
        return ClaimMirror(objects, self._clock, observer, judge=function == "consolidator")

    def _cluster_for(self, function: str, kinds: tuple[str, ...] = KINDS) -> Cluster:
        """The cluster as `function` reaches it: directly, or through its own adapter over HTTP."""
        return self._cluster if self._http is None else self._http.cluster(function, kinds)

    def _use(self, name: str, module: ModuleType) -> None:
        self.modules[name] = module
        self._invocations.deploy(name, module.handler)
        logger = getattr(module, "logger", None)
        if logger is not None and hasattr(logger, "setLevel"):
            self._levels[name] = logger.log_level if hasattr(logger, "log_level") else logging.INFO
            logger.setLevel(logging.WARNING)

    def release(self) -> None:
        """Hand the functions back their own controllers (built from the environment on next use)."""
        for name, module in self.modules.items():
            module.configure(None)
            logger = getattr(module, "logger", None)
            if name in self._levels and logger is not None:
                logger.setLevel(self._levels[name])


def live_instances(recorder: Recorder) -> list[Instance]:
    """The instances running now, from the world's records (the registry the mirrored EC2
    provider answers `instances()` from).
    """
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
        for r in recorder.instances.values()
        if r.terminated_at is None
    ]
