"""Builds the production dependencies of each function from its Settings (the composition root).

Called once per cold start by the handlers, never at import: AWS clients, the EKS token source,
the Kubernetes client (CA verified), the EC2 cloud provider, the DynamoDB stores, the configuration
source and the live catalog. Tests and the simulator build their own dependencies instead and
hand the controller to the handler (`functions.provisioner.handler.configure`).
"""

from __future__ import annotations

from nodewright.adapters.aws import session
from nodewright.adapters.aws.catalog import LiveCatalog
from nodewright.adapters.aws.config_store import ConfigStore
from nodewright.adapters.aws.ec2 import Ec2CloudProvider
from nodewright.adapters.aws.eks import EksTokenSource, describe_cluster
from nodewright.adapters.aws.pricing import PriceCache, pricing_client
from nodewright.adapters.aws.state_store import DynamoStateStore
from nodewright.adapters.clock import SystemClock
from nodewright.adapters.kube.client import from_cluster_info
from nodewright.adapters.kube.cluster import KubeCluster
from nodewright.adapters.kube.crd_config import read_config
from nodewright.config.documents import Document
from nodewright.controllers.configuration import StoredConfiguration
from nodewright.controllers.provisioning import Provisioner
from nodewright.controllers.settings import Settings
from nodewright.ports import Observer


def provisioner_from_settings(settings: Settings, observer: Observer) -> Provisioner:
    """The provisioner wired to EKS, EC2, DynamoDB and the Price List API."""
    clock = SystemClock()
    region = settings.region or None
    info = describe_cluster(session.client("eks", region=region), settings.cluster_name)
    tokens = EksTokenSource(session.client("sts", region=region), info.name, clock)
    api_client = from_cluster_info(info, tokens)
    cluster = KubeCluster(api_client, on_unauthorized=tokens.invalidate)
    ec2 = session.client("ec2", region=region)
    cloud = Ec2CloudProvider(
        ec2, session.client("ssm", region=region), info, instance_profile=settings.node_instance_profile, clock=clock
    )
    store = DynamoStateStore(session.client("dynamodb", region=region), settings.state_table)
    if settings.config_source == "crd":

        def read() -> list[Document]:
            return list(read_config(api_client).require())

    else:
        config_store = ConfigStore(settings.config_table, client=session.client("dynamodb", region=region))

        def read() -> list[Document]:
            return [stored.document for stored in config_store.list()]

    prices = PriceCache(settings.region, pricing=pricing_client(settings.region), ec2=ec2, clock=clock)
    return Provisioner(
        cluster=cluster,
        cloud=cloud,
        store=store,
        clock=clock,
        config=StoredConfiguration(read, observer),
        catalog=LiveCatalog(ec2, prices, clock),
        observer=observer,
    )
