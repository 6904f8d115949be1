"""`nodewright plan --cluster NAME` / `--kubeconfig PATH --context NAME`: a read-only look at a live cluster.

Role: answer "what would Nodewright do and save on my cluster?" before it is installed. The
cluster is read through the Lambdas' own Kubernetes adapter (`KubeCluster`, one LIST per kind:
nodes, pods, daemonsets, PDBs; `read_config` for `nodewright.io` and Karpenter's NodePools and
EC2NodeClasses); nothing is written, no AWS resource is created. The report has two halves:

  * the pods pending now and the node claims the provisioner would launch for them (the same
    `solve()` over the same inputs as a provisioner pass; `plan.to_report`'s shape);
  * the re-pack report: today's nodes and their $/h against the cheapest fresh plan of all the
    pods under the NodePools, in total and by (NodePool, capacity type): what consolidation could
    save. The measure is `nodewright.engine.headroom.measure`, the one `bench.headroom` reports
    for simulated clusters.

Connecting: `--cluster` uses the caller's AWS credentials as the Lambdas do (DescribeCluster and
a presigned STS token, `nodewright.adapters.aws.eks`); `--kubeconfig`/`--context` use a
kubeconfig (its exec plugins included).

Prices: with `--cluster` and working credentials, instance types come from EC2 and prices from
the Price List API and the spot price history (`LiveCatalog`, as the Lambdas read them); if that
fails, or with a kubeconfig, from the bundled us-east-1 catalog and its estimates. The report
says which (`prices.source`, and the reason when the live read failed).

NodePools: the cluster's; if it has none, those in `-f` files; else the default NodePool (any
Linux type, spot or on-demand).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nodewright.adapters.offline_catalog import DEFAULT_ZONES, load_catalog, load_snapshot, zones_for_region
from nodewright.cli.failures import reason
from nodewright.config.documents import EC2NODECLASS, NODEPOOL, Loaded
from nodewright.engine.catalog import region_of
from nodewright.engine.headroom import Headroom, capacity_type, measure
from nodewright.engine.scheduling import SchedulingResult, solve
from nodewright.engine.scheduling.inputs import provisioning_input
from nodewright.model import labels as wk
from nodewright.model.instancetype import InstanceType
from nodewright.model.node import Node
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodepool import NodePool
from nodewright.model.snapshot import ClusterSnapshot


class LiveReadError(Exception):
    """The cluster could not be read; the message names the step (connect, list, CRDs)."""


@dataclass(frozen=True, slots=True)
class LiveInput:
    """What was read from the cluster, and the configuration it found."""

    snapshot: ClusterSnapshot
    config: Loaded
    source: str  # "eks:<name>" or "kubeconfig:<context>"
    # The client it was read with, for a caller that reads more (explain: the object's Events).
    api_client: Any = None


class OfflineCatalog:
    """The controllers' Catalog over the bundled snapshot: one build per kubelet configuration."""

    def __init__(self, zones: Sequence[str], standing: Mapping[str, str] | None = None) -> None:
        self.zones = tuple(zones)
        # For zones of another region: the bundled zone standing in for each (`zones_for_region`).
        self.standing = dict(standing or {})
        self._built: dict[str, list[InstanceType]] = {}

    def instance_types(self, nodeclass: EC2NodeClass | None) -> Sequence[InstanceType]:
        """The bundled types offered in `zones`, shaped by the NodeClass's kubelet settings."""
        kubelet = nodeclass.kubelet if nodeclass is not None else None
        key = repr(kubelet)  # kubelet settings hold dicts: key by their repr
        if key not in self._built:
            bundled = tuple(self.standing) if self.standing else self.zones
            self._built[key] = load_catalog(bundled, kubelet=kubelet, as_zones=self.standing or None)
        return self._built[key]


def read_cluster(
    *, cluster: str | None, kubeconfig: str | None, context: str | None, region: str | None
) -> tuple[LiveInput, Any]:
    """Read the cluster once (LIST per kind, no watch) and its NodePools/EC2NodeClasses.

    Returns the input and, with `--cluster`, the AWS session facts the catalog may use (region).
    Raises LiveReadError naming what failed.
    """
    from nodewright.adapters.kube.client import from_cluster_info, from_kubeconfig
    from nodewright.adapters.kube.cluster import KubeCluster
    from nodewright.adapters.kube.crd_config import read_config

    on_unauthorized = None
    aws: dict[str, Any] = {}
    try:
        if cluster:
            from nodewright.adapters.aws import session
            from nodewright.adapters.aws.eks import EksTokenSource, describe_cluster
            from nodewright.adapters.clock import SystemClock

            info = describe_cluster(session.client("eks", region=region), cluster)
            tokens = EksTokenSource(session.client("sts", region=region), info.name, SystemClock())
            api_client = from_cluster_info(info, tokens)
            on_unauthorized = tokens.invalidate
            aws = {"region": region or session.client("ec2", region=region).meta.region_name, "info": info}
            source = f"eks:{cluster}"
        else:
            api_client = from_kubeconfig(kubeconfig, context)
            source = f"kubeconfig:{context or '(current context)'}"
    except Exception as error:  # any credential, network or kubeconfig failure: one readable line
        raise LiveReadError(f"cannot connect to the cluster: {reason(error)}") from error
    try:
        snapshot = KubeCluster.connect(api_client, on_unauthorized=on_unauthorized).snapshot()
    except Exception as error:
        raise LiveReadError(f"cannot list nodes, pods, daemonsets and PDBs: {reason(error)}") from error
    try:
        config = read_config(api_client)
    except Exception as error:
        raise LiveReadError(f"cannot list NodePools and EC2NodeClasses: {reason(error)}") from error
    return LiveInput(snapshot=snapshot, config=config, source=source, api_client=api_client), aws


def catalog_for(snapshot: ClusterSnapshot, aws: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The Catalog to plan with and what the report says about its prices.

    With AWS facts (`--cluster`), the Lambdas' LiveCatalog, checked by building one NodeClass's
    types (so a missing permission shows here, not mid-plan); otherwise or on failure, the
    bundled catalog in the nodes' zones (or the default us-east-1 zones when the bundled catalog
    does not know them).
    """
    reason = ""
    if aws:
        try:
            from nodewright.adapters.aws import session
            from nodewright.adapters.aws.catalog import LiveCatalog
            from nodewright.adapters.aws.pricing import PriceCache, pricing_client
            from nodewright.adapters.clock import SystemClock

            region = aws["region"]
            ec2 = session.client("ec2", region=region)
            clock = SystemClock()
            prices = PriceCache(region, pricing=pricing_client(region), ec2=ec2, clock=clock)
            prices.refresh()
            if prices.last_error:
                raise LookupError(prices.last_error)
            live = LiveCatalog(ec2, prices, clock)
            if not live.instance_types(None):
                raise LookupError("EC2 offered no instance types")
            return live, {"source": "aws", "region": region, "on_demand": "price-list", "spot": "spot-price-history"}
        except Exception as error:  # no rights, no network: fall back, and say why
            reason = f"{type(error).__name__}: {error}"
    known = load_snapshot().all_zones
    zones = sorted({node.labels[wk.ZONE] for node in snapshot.nodes if node.labels.get(wk.ZONE)})
    note = ""
    standing: dict[str, str] = {}
    if zones and not set(zones) <= known:
        try:
            standing = zones_for_region(zones)
        except ValueError:
            standing = {}
        if standing:
            note = (
                f"the bundled catalog is us-east-1's: its instance types and estimated prices are assumed "
                f"offered in the nodes' zones ({', '.join(zones)})"
            )
    if not zones or (not set(zones) <= known and not standing):
        note = (
            f"the nodes' zones ({', '.join(zones) or 'none'}) are not in the bundled catalog; "
            f"planned in {', '.join(DEFAULT_ZONES)}"
        )
        zones = list(DEFAULT_ZONES)
    described = {
        "source": "bundled",
        "region": region_of(zones[0]) if standing else load_snapshot().region,
        "on_demand": "estimates",
        "spot": "estimates (35% of on-demand)",
        "zones": zones,
    }
    if reason:
        described["live_prices_failed"] = reason
    if note:
        described["note"] = note
    return OfflineCatalog(zones, standing), described


def node_price(catalog: Any, nodeclasses: Mapping[str, EC2NodeClass]) -> Any:
    """A node's $/h from its labels (instance type, capacity type, zone) and the catalog's offerings."""
    by_name: dict[str, InstanceType] = {}
    for nodeclass in [None, *nodeclasses.values()]:
        for instance_type in catalog.instance_types(nodeclass):
            by_name.setdefault(instance_type.name, instance_type)

    def price(node: Node) -> float | None:
        found = by_name.get(node.labels.get(wk.INSTANCE_TYPE, ""))
        if found is None:
            return None
        bought = capacity_type(node) or "on-demand"
        zone = node.labels.get(wk.ZONE, "")
        offered = [o for o in found.offerings if o.capacity_type == bought]
        exact = [o.price for o in offered if o.zone == zone]
        if exact:
            return exact[0]
        return min((o.price for o in offered), default=None)

    return price


def plan_cluster(
    live: LiveInput, files_config: Loaded | None, aws: Mapping[str, Any], *, default_nodepool: bool = False
) -> dict[str, Any]:
    """The report: pending pods and the claims for them, then the re-pack report (JSON shape).
    With no NodePool (in the cluster or the files) it says so first (`notices`) and plans with
    none, and claims no saving (`repack` is null), unless `default_nodepool`.
    """
    from nodewright.cli.plan import DEFAULT_NODEPOOL, to_report, with_notices
    from nodewright.controllers.provisionoptions import pool_capacities

    config = live.config
    nodepool_source = "cluster"
    if not config.of_kind(NODEPOOL) and files_config is not None and files_config.of_kind(NODEPOOL):
        config, nodepool_source = files_config, "files"
    nodepools = [d.model for d in config.of_kind(NODEPOOL) if isinstance(d.model, NodePool)]
    nodeclasses = {d.name: d.model for d in config.of_kind(EC2NODECLASS) if isinstance(d.model, EC2NodeClass)}
    notices = [] if nodepools else ["no-nodepool"]
    if not nodepools:
        nodepools, nodepool_source = ([DEFAULT_NODEPOOL], "default") if default_nodepool else ([], "none")
    catalog, prices = catalog_for(live.snapshot, aws)
    pools = pool_capacities(nodepools, nodeclasses, catalog)
    snapshot = live.snapshot
    now = time.time()
    pending = tuple(snapshot.pending())
    # The provisioner's input rules; plan reads no claim records: the nodes are all there is.
    inp = provisioning_input(snapshot, pending=pending, pools=pools, now=now)
    started = time.perf_counter()
    result: SchedulingResult = solve(inp)
    report = to_report(result, time.perf_counter() - started, estimated=prices["source"] != "aws")
    # Pending means without a node; pods of draining nodes are planned too but said apart, and
    # pods on cordoned nodes still run where they are.
    report["pending"] = sorted(p.key for p in pending if not p.node_name)
    report["on_draining_nodes"] = sorted(p.key for p in pending if p.node_name)
    cordoned = {n.name for n in snapshot.nodes if n.unschedulable}
    report["on_cordoned_nodes"] = sorted(p.key for p in snapshot.pods if p.node_name in cordoned and not p.daemon)
    report["repack"] = repack_report(measure(snapshot, pools, node_price(catalog, nodeclasses), now)) if pools else None
    report["cluster"] = {
        "source": live.source,
        "nodes": len(snapshot.nodes),
        "pods": sum(1 for p in snapshot.pods if not p.daemon),
        "daemonsets": len(snapshot.daemonsets),
        "pdbs": len(snapshot.pdbs),
        "nodepools": [pool.name for pool in nodepools],
        "nodepools_from": nodepool_source,
        "config_problems": [str(p) for p in live.config.problems],
        # Warnings: fields Nodewright ignores, and Karpenter's NodePools left to a running Karpenter.
        "config_warnings": [str(w) for w in live.config.warnings],
    }
    report["prices"] = prices
    return with_notices(report, notices, default_nodepool=default_nodepool)


def repack_report(headroom: Headroom) -> dict[str, Any]:
    """The re-pack half of the report (JSON shape)."""
    groups = sorted(set(headroom.current_by_group) | set(headroom.fresh_by_group))
    return {
        "current_price_per_hour": round(headroom.current, 6),
        "fresh_price_per_hour": round(headroom.fresh, 6),
        "savings_per_hour": round(headroom.savings, 6),
        "savings_percent": round(100 * headroom.savings / headroom.current, 2) if headroom.current else 0.0,
        "by_group": [
            {
                "nodepool": pool,
                "capacity_type": bought,
                "nodes": headroom.nodes_by_group.get((pool, bought), 0),
                "current_price_per_hour": round(headroom.current_by_group.get((pool, bought), 0.0), 6),
                "fresh_nodes": headroom.claims_by_group.get((pool, bought), 0),
                "fresh_price_per_hour": round(headroom.fresh_by_group.get((pool, bought), 0.0), 6),
            }
            for pool, bought in groups
        ],
        "unplaceable": sorted(headroom.plan.unschedulable) if headroom.plan is not None else [],
        "unpriced_nodes": list(headroom.unpriced),
    }
