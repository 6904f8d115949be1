"""Builds the production dependencies of each function from its Settings (the composition root).

Called once per cold start by the handlers, never at import: AWS clients, the EKS token source,
the Kubernetes client (CA verified), the EC2 cloud provider, the DynamoDB stores, the configuration
source and the live catalog. Tests and the simulator build their own ports instead, wire the
provisioner's components with `build_provisioner`, and hand the controller to the handler
(`functions.provisioner.handler.configure`). The only controller module that imports adapters.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from nodewright.adapters.aws import session
from nodewright.adapters.aws.catalog import LiveCatalog
from nodewright.adapters.aws.config_store import ConfigStore
from nodewright.adapters.aws.ec2 import Ec2CloudProvider
from nodewright.adapters.aws.eks import EksTokenSource, describe_cluster
from nodewright.adapters.aws.instance_profiles import InstanceProfiles
from nodewright.adapters.aws.pricing import PriceCache, Prices, pricing_client
from nodewright.adapters.aws.reservations import CapacityReservations
from nodewright.adapters.aws.signals import LambdaProvisionerTrigger, SqsContinuations
from nodewright.adapters.aws.state_store import DynamoStateStore
from nodewright.adapters.clock import SystemClock
from nodewright.adapters.kube.claims import KubeClaimObjects
from nodewright.adapters.kube.client import from_cluster_info
from nodewright.adapters.kube.cluster import KubeCluster
from nodewright.adapters.kube.configstatus import KubeConfigStatus
from nodewright.adapters.kube.crd_config import read_config
from nodewright.adapters.kube.store import KINDS, NODES, PODS
from nodewright.adapters.offline_catalog import estimated_on_demand_prices
from nodewright.config.documents import Document
from nodewright.controllers.algorithms import Schedule, consolidator_options_for, decisions_for, schedule_for
from nodewright.controllers.batching import Batch
from nodewright.controllers.configstatus import ConfigStatus
from nodewright.controllers.configuration import StoredConfiguration
from nodewright.controllers.consolidationoptions import ConsolidatorOptions
from nodewright.controllers.disruption import Consolidator
from nodewright.controllers.housekeeping import Housekeeping
from nodewright.controllers.interruption import InterruptionController
from nodewright.controllers.launching import Launcher
from nodewright.controllers.mirror import ClaimMirror
from nodewright.controllers.noderoles import RoleCheckedConfiguration
from nodewright.controllers.provisioning import Provisioner
from nodewright.controllers.provisionoptions import ProvisionerOptions
from nodewright.controllers.settings import Settings
from nodewright.controllers.standby import StandbyCapacity
from nodewright.controllers.staticcapacity import StaticCapacity
from nodewright.ports import (
    Catalog,
    Clock,
    CloudProvider,
    Cluster,
    Configuration,
    ImageIds,
    Observer,
    ReservationEnds,
    StateStore,
)


def build_provisioner(
    *,
    cluster: Cluster,
    cloud: CloudProvider,
    store: StateStore,
    clock: Clock,
    config: Configuration,
    catalog: Catalog,
    observer: Observer,
    options: ProvisionerOptions = ProvisionerOptions(),  # noqa: B008 (frozen: a shared default is safe)
    sleep: Callable[[float], None] = time.sleep,
    wait: Callable[[float, Callable[[], bool]], None] | None = None,
    mirror: ClaimMirror | None = None,
    reservations: ReservationEnds | None = None,
    solve_clock: Callable[[], float] | None = None,
    schedule: Schedule | None = None,
    config_status: ConfigStatus | None = None,
    images: ImageIds | None = None,
) -> Provisioner:
    """The provisioner's components wired to the given ports: one `Launcher` (the launch path
    `StaticCapacity` and `StandbyCapacity` launch through too), `Housekeeping`, `StaticCapacity`,
    `StandbyCapacity` and a `Batch`.

    The arguments are what `Provisioner` and its components take (see them).
    """
    launcher = Launcher(
        cluster=cluster,
        cloud=cloud,
        store=store,
        clock=clock,
        config=config,
        catalog=catalog,
        observer=observer,
        options=options,
        config_status=config_status,
    )
    housekeeping = Housekeeping(
        cluster=cluster,
        cloud=cloud,
        store=store,
        clock=clock,
        config=config,
        catalog=catalog,
        observer=observer,
        options=options,
        reservations=reservations,
    )
    static_capacity = StaticCapacity(
        launcher,
        cluster=cluster,
        store=store,
        clock=clock,
        config=config,
        observer=observer,
        options=options,
        config_status=config_status,
    )
    standby = StandbyCapacity(
        launcher,
        cluster=cluster,
        cloud=cloud,
        store=store,
        clock=clock,
        config=config,
        observer=observer,
        options=options,
        images=images,
    )
    return Provisioner(
        launcher,
        housekeeping,
        static_capacity,
        Batch(options),
        cluster=cluster,
        claim_records=store,
        command_records=store,
        leases=store,
        clock=clock,
        config=config,
        catalog=catalog,
        observer=observer,
        options=options,
        sleep=sleep,
        wait=wait,
        mirror=mirror,
        solve_clock=solve_clock,
        schedule=schedule,
        standby=standby,
    )


class _Aws:
    """The AWS side every function shares: clients, the cluster, EC2, the state store, config.

    `kinds` are what the cluster adapter watches: everything for the provisioner and the
    consolidator, nodes only for the interruption function (it reads pods per node).
    """

    def __init__(self, settings: Settings, observer: Observer, kinds: tuple[str, ...] = KINDS) -> None:
        self.clock = SystemClock()
        region = settings.region or None
        self.region = region
        info = describe_cluster(session.client("eks", region=region), settings.cluster_name)
        tokens = EksTokenSource(session.client("sts", region=region), info.name, self.clock)
        self.api_client = from_cluster_info(info, tokens)
        self.cluster = KubeCluster.connect(
            self.api_client,
            on_unauthorized=tokens.invalidate,
            kinds=kinds,
            reporting_instance=settings.function_name or "nodewright",
        )
        self.ec2 = session.client("ec2", region=region)
        # One count of each capacity reservation per container: the catalog offers what the cloud
        # provider has not launched into yet.
        self.reservations = CapacityReservations(self.ec2, self.clock)
        self.cloud = Ec2CloudProvider(
            self.ec2,
            session.client("ssm", region=region),
            info,
            profiles=InstanceProfiles(
                session.client("iam", region=region),
                cluster=info.name,
                region=region or "",
                roles=settings.roles(),
                own_profile=settings.node_instance_profile,
                clock=self.clock,
            ),
            clock=self.clock,
            reservations=self.reservations,
        )
        self.store = DynamoStateStore(session.client("dynamodb", region=region), settings.state_table)
        # CapacityBuffers take their chunks from pods: read by the functions that watch pods.
        self.stored = self._configuration(settings, observer, buffers=PODS in kinds)
        # NodePools whose EC2NodeClass names a node role this deployment may not pass are held back.
        self.config = RoleCheckedConfiguration(self.stored, settings.roles(), self.cluster, self.clock, observer)

    def _configuration(self, settings: Settings, observer: Observer, *, buffers: bool) -> StoredConfiguration:
        if settings.config_source == "crd":
            api_client = self.api_client

            def read() -> list[Document]:
                return list(read_config(api_client, include_buffers=buffers).require())

        else:
            config_store = ConfigStore(settings.config_table, client=session.client("dynamodb", region=self.region))

            def read() -> list[Document]:
                return [stored.document for stored in config_store.list()]

        return StoredConfiguration(read, observer)


def provisioner_from_settings(settings: Settings, observer: Observer) -> Provisioner:
    """The provisioner wired to EKS, EC2, DynamoDB and the Price List API."""
    aws = _Aws(settings, observer)
    config_status = None
    if settings.config_source == "crd":
        # The status of the CapacityBuffers and NodeOverlays read from the cluster: one writer.
        writes = KubeConfigStatus(aws.cluster)
        config_status = ConfigStatus(writes, aws.clock, observer, listed=aws.stored.statuses)
    return _provisioner(aws, settings, observer, config_status)


def _provisioner(
    aws: _Aws, settings: Settings, observer: Observer, config_status: ConfigStatus | None = None
) -> Provisioner:
    # NodeClaim objects for kubectl: on when the nodeclaims.nodewright.io CRD is installed and granted.
    mirror = ClaimMirror(
        KubeClaimObjects(aws.cluster, aws.api_client),
        aws.clock,
        observer,
        nodepool_status=settings.config_source == "crd",
    )
    mirror.refused = aws.config.refused
    return build_provisioner(
        cluster=aws.cluster,
        cloud=aws.cloud,
        store=aws.store,
        clock=aws.clock,
        config=aws.config,
        catalog=_catalog(aws, settings),
        observer=observer,
        options=settings.provisioner_options(),
        wait=aws.cluster.wait,
        reservations=aws.reservations,
        schedule=schedule_for(settings.consolidation),
        mirror=mirror,
        config_status=config_status,
        # Standby instances booted from an AMI their EC2NodeClass no longer resolves to are replaced.
        images=_image_ids(aws),
    )


def _image_ids(aws: _Aws) -> ImageIds:
    """The AMI ids each configured EC2NodeClass resolves to now (cached by the EC2 adapter)."""
    return lambda: aws.cloud.image_ids(aws.config.load()[1])


def _catalog(aws: _Aws, settings: Settings) -> LiveCatalog:
    """The live catalog: EC2's instance types, priced by the Price List API or the bundled estimates."""
    if settings.price_source == "estimates":
        # A private VPC with no Price List endpoint: on-demand from the bundled estimates, spot from EC2.
        prices = PriceCache(
            settings.region,
            pricing=None,
            ec2=aws.ec2,
            clock=aws.clock,
            initial=Prices(on_demand=estimated_on_demand_prices()),
        )
    else:
        prices = PriceCache(settings.region, pricing=pricing_client(settings.region), ec2=aws.ec2, clock=aws.clock)
    return LiveCatalog(aws.ec2, prices, aws.clock, reservations=aws.reservations)


def consolidator_from_settings(settings: Settings, observer: Observer) -> Consolidator:
    """The consolidator, launching replacements through the provisioner's launch path."""
    aws = _Aws(settings, observer)
    launcher = Launcher(
        cluster=aws.cluster,
        cloud=aws.cloud,
        store=aws.store,
        clock=aws.clock,
        config=aws.config,
        catalog=_catalog(aws, settings),
        observer=observer,
        options=settings.provisioner_options(),
    )
    return Consolidator(
        cluster=aws.cluster,
        cloud=aws.cloud,
        claim_records=aws.store,
        command_records=aws.store,
        leases=aws.store,
        offering_blocks=aws.store,
        clock=aws.clock,
        config=aws.config,
        catalog=launcher.catalog,
        observer=observer,
        launcher=launcher,
        options=consolidator_options_for(
            settings.consolidation,
            ConsolidatorOptions(
                disruption=settings.disruption_options(), steer_deletion_cost=settings.deletion_cost_steering
            ),
        ),
        # Nodes booted from an AMI their EC2NodeClass no longer resolves to have drifted.
        images=_image_ids(aws),
        decisions=decisions_for(settings.consolidation),
        # The consolidator's mirror writes only its verdicts (Drifted, Consolidatable, Disrupting).
        mirror=ClaimMirror(KubeClaimObjects(aws.cluster, aws.api_client), aws.clock, observer, judge=True),
    )


def interruption_from_settings(settings: Settings, observer: Observer) -> InterruptionController:
    """The interruption controller wired to EKS, EC2, DynamoDB, its own queue and the provisioner."""
    aws = _Aws(settings, observer, kinds=(NODES,))
    return InterruptionController(
        cluster=aws.cluster,
        claim_records=aws.store,
        drain_records=aws.store,
        offering_blocks=aws.store,
        cloud=aws.cloud,
        clock=aws.clock,
        config=aws.config,
        observer=observer,
        continuations=SqsContinuations(session.client("sqs", region=aws.region), settings.interruption_queue_url),
        provisioner=LambdaProvisionerTrigger(
            session.client("lambda", region=aws.region), settings.provisioner_function
        ),
        default_policy=settings.rebalance_policy,
    )
