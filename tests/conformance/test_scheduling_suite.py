"""Behaviours of Karpenter's provisioning scheduler suite (kubernetes-sigs/karpenter,
pkg/controllers/provisioning/scheduling/suite_test.go), as manifests through `solve()` and
`nodewright plan` (see `harness.py`; each case's `source` names the behaviour in our words).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nodewright.model import labels as wk
from tests.conformance.harness import (
    Case,
    Expectation,
    Outcome,
    cases_of,
    check,
    daemonset,
    deployment,
    node,
    nodepool,
    pod,
    req,
    taint,
    term,
    toleration,
)

TEAM = "example.com/team"
TIER = "example.com/tier"


def placed(*names: str) -> Expectation:
    def expect(o: Outcome) -> None:
        assert set(names) <= o.placed, o.pending

    return expect


def pending(*names: str) -> Expectation:
    def expect(o: Outcome) -> None:
        assert set(names) <= set(o.pending), f"placed: {o.placed}"

    return expect


def all_placed(o: Outcome) -> None:
    assert not o.pending, o.pending


def on_label(pod_name: str, key: str, value: str) -> Expectation:
    def expect(o: Outcome) -> None:
        assert o.node_of(pod_name).labels.get(key) == value, o.node_of(pod_name).labels.get(key)

    return expect


def both(*checks: Expectation) -> Expectation:
    def expect(o: Outcome) -> None:
        for c in checks:
            c(o)

    return expect


def apart(a: str, b: str) -> Expectation:
    def expect(o: Outcome) -> None:
        assert o.node_of(a) is not o.node_of(b)

    return expect


def together(*names: str) -> Expectation:
    def expect(o: Outcome) -> None:
        assert len({o.node_of(n).name for n in names}) == 1

    return expect


def new_nodes(count: int) -> Expectation:
    def expect(o: Outcome) -> None:
        assert len(o.new) == count, [(n.instance_type, n.pods) for n in o.new]

    return expect


POOL = nodepool()
TEAM_POOL = nodepool(requirements=[req(TEAM, "In", "a", "b")])
LABELLED_POOL = nodepool(labels={TIER: "gold"})

CUSTOM_LABELS = [
    Case(
        "selector-on-a-label-the-pool-allows",
        "custom labels: schedule a pod selecting a value the NodePool's requirement allows",
        (TEAM_POOL, pod("p", node_selector={TEAM: "a"})),
        on_label("p", TEAM, "a"),
    ),
    Case(
        "selector-on-a-value-the-pool-refuses",
        "custom labels: a value outside the NodePool's In list is not provisioned for",
        (TEAM_POOL, pod("p", node_selector={TEAM: "c"})),
        pending("p"),
    ),
    Case(
        "selector-on-an-undefined-label",
        "custom labels: a label no NodePool defines is not provisioned for",
        (POOL, pod("p", node_selector={"example.com/undefined": "x"})),
        pending("p"),
    ),
    Case(
        "two-values-of-one-label-two-nodes",
        "custom labels: pods requiring different values of one label never share a node",
        (TEAM_POOL, pod("pa", node_selector={TEAM: "a"}), pod("pb", node_selector={TEAM: "b"})),
        both(apart("pa", "pb"), on_label("pa", TEAM, "a"), on_label("pb", TEAM, "b")),
    ),
    Case(
        "exists-on-a-pool-label",
        "custom labels: Exists on a label the NodePool's requirement defines",
        (TEAM_POOL, pod("p", required=[[req(TEAM, "Exists")]])),
        both(all_placed, lambda o: o.node_of("p").labels.get(TEAM) in ("a", "b")),
    ),
    Case(
        "does-not-exist-on-a-pool-label",
        "custom labels: DoesNotExist on a label the NodePool's template sets is not provisioned for",
        (LABELLED_POOL, pod("p", required=[[req(TIER, "DoesNotExist")]])),
        pending("p"),
    ),
    Case(
        "not-in-a-template-label",
        "custom labels: NotIn the template's value is not provisioned for",
        (LABELLED_POOL, pod("p", required=[[req(TIER, "NotIn", "gold")]])),
        pending("p"),
    ),
    Case(
        "in-a-template-label",
        "custom labels: In the template's value is provisioned for and the node carries it",
        (LABELLED_POOL, pod("p", required=[[req(TIER, "In", "gold", "silver")]])),
        on_label("p", TIER, "gold"),
    ),
    Case(
        "pool-label-set-on-unconstrained-pods",
        "custom labels: a NodePool's template labels are on its nodes",
        (LABELLED_POOL, pod("p")),
        on_label("p", TIER, "gold"),
    ),
    Case(
        "a-pool-in-list-gets-one-value",
        "custom labels: a node of a NodePool allowing several values carries one of them",
        (TEAM_POOL, pod("p")),
        lambda o: o.node_of("p").labels.get(TEAM) in ("a", "b"),
        differs="Karpenter picks any allowed value; Nodewright picks the smallest, so plans are stable",
    ),
]

WELL_KNOWN = [
    Case(
        f"well-known-{key.rsplit('/', 1)[1]}",
        f"well-known labels: a pod selecting {key} is provisioned for, and the node carries it",
        (POOL, pod("p", node_selector={key: value})),
        on_label("p", key, value),
    )
    for key, value in (
        (wk.ZONE, "us-east-1b"),
        (wk.REGION, "us-east-1"),
        (wk.ARCH, "amd64"),
        (wk.OS, "linux"),
        (wk.CAPACITY_TYPE, "on-demand"),
        (wk.INSTANCE_TYPE, "m5.large"),
        (wk.NODEPOOL, "default"),
        (wk.INSTANCE_FAMILY, "c6i"),
        (wk.INSTANCE_CATEGORY, "r"),
        (wk.INSTANCE_GENERATION, "7"),
        (wk.INSTANCE_SIZE, "2xlarge"),
        (wk.INSTANCE_HYPERVISOR, "nitro"),
        (wk.INSTANCE_CAPABILITY_FLEX, "true"),
        (wk.INSTANCE_TENANCY, "default"),
        ("beta.kubernetes.io/arch", "amd64"),
        ("beta.kubernetes.io/os", "linux"),
        ("beta.kubernetes.io/instance-type", "m5.large"),
        ("failure-domain.beta.kubernetes.io/region", "us-east-1"),
        ("failure-domain.beta.kubernetes.io/zone", "us-east-1c"),
        ("topology.ebs.csi.aws.com/zone", "us-east-1a"),
    )
]

NODE_AFFINITY = [
    Case(
        "required-zone-affinity",
        "node affinity: required In on zone",
        (POOL, pod("p", required=[[req(wk.ZONE, "In", "us-east-1c")]])),
        on_label("p", wk.ZONE, "us-east-1c"),
    ),
    Case(
        "ored-terms-take-a-satisfiable-one",
        "node affinity: of ORed terms, an unsatisfiable one is skipped",
        (POOL, pod("p", required=[[req(wk.ZONE, "In", "mars-1a")], [req(wk.ZONE, "In", "us-east-1b")]])),
        on_label("p", wk.ZONE, "us-east-1b"),
    ),
    Case(
        "preferred-zone-honoured",
        "node affinity: a satisfiable preference is honoured",
        (POOL, pod("p", preferred=[(10, [req(wk.ZONE, "In", "us-east-1b")])])),
        on_label("p", wk.ZONE, "us-east-1b"),
    ),
    Case(
        "unsatisfiable-preference-relaxed",
        "node affinity: an unsatisfiable preference is relaxed",
        (POOL, pod("p", preferred=[(10, [req(wk.ZONE, "In", "mars-1a")])])),
        all_placed,
    ),
    Case(
        "preference-never-overrides-a-requirement",
        "node affinity: a preference conflicting with the requirement is dropped, the requirement kept",
        (
            POOL,
            pod(
                "p",
                required=[[req(wk.ZONE, "In", "us-east-1a")]],
                preferred=[(10, [req(wk.ZONE, "In", "us-east-1b")])],
            ),
        ),
        on_label("p", wk.ZONE, "us-east-1a"),
    ),
    Case(
        "not-in-every-zone",
        "node affinity: NotIn every zone is not provisioned for",
        (POOL, pod("p", required=[[req(wk.ZONE, "NotIn", "us-east-1a", "us-east-1b", "us-east-1c")]])),
        pending("p"),
    ),
    Case(
        "gt-on-instance-cpu",
        "node affinity: Gt on instance-cpu gives a larger type",
        (POOL, pod("p", required=[[req(wk.INSTANCE_CPU, "Gt", "15")]])),
        lambda o: int(o.node_of("p").labels[wk.INSTANCE_CPU]) > 15,
    ),
    Case(
        "lt-on-instance-memory",
        "node affinity: Lt on instance-memory gives a smaller type",
        (POOL, pod("p", required=[[req(wk.INSTANCE_MEMORY, "Lt", "4097")]])),
        lambda o: int(o.node_of("p").labels[wk.INSTANCE_MEMORY]) < 4097,
    ),
]

TAINTS_AND_PORTS = [
    Case(
        "pool-taint-refuses-intolerant-pods",
        "taints: a NodePool's taint keeps pods without a toleration away",
        (nodepool(taints=[taint("dedicated")]), pod("p")),
        pending("p"),
    ),
    Case(
        "pool-taint-tolerated",
        "taints: a tolerating pod is provisioned for on a tainted NodePool",
        (nodepool(taints=[taint("dedicated")]), pod("p", tolerations=[toleration("dedicated")])),
        all_placed,
    ),
    Case(
        "prefer-no-schedule-taint-relaxed",
        "taints: PreferNoSchedule is tolerated after the other preferences",
        (nodepool(taints=[taint("soft", "PreferNoSchedule")]), pod("p")),
        all_placed,
    ),
    Case(
        "existing-tainted-node-skipped",
        "existing nodes: a tainted node takes no pod that does not tolerate it",
        (POOL, node("n1", taints=[taint("dedicated")]), pod("p")),
        lambda o: o.node_of("p").new,
    ),
    Case(
        "two-pods-one-host-port",
        "host ports: two pods binding the same hostPort go to different nodes",
        (POOL, pod("pa", host_ports=[8080]), pod("pb", host_ports=[8080])),
        apart("pa", "pb"),
    ),
    Case(
        "different-host-ports-share",
        "host ports: pods binding different hostPorts may share a node",
        (POOL, pod("pa", host_ports=[8080]), pod("pb", host_ports=[9090])),
        both(all_placed, new_nodes(1)),
    ),
    Case(
        "daemonset-host-port-blocks-pod",
        "host ports: a pod asking for a DaemonSet's hostPort cannot run where the DaemonSet runs",
        (POOL, daemonset("agent", host_ports=[9100]), pod("p", host_ports=[9100])),
        pending("p"),
    ),
    Case(
        "existing-pod-host-port",
        "host ports: a node whose bound pod holds the port takes no second one",
        (
            POOL,
            node("n1"),
            pod("bound", host_ports=[7000], node_name="n1"),
            pod("p", host_ports=[7000]),
        ),
        lambda o: o.node_of("p").new,
    ),
]

EXISTING_AND_HOSTNAME = [
    Case(
        "existing-node-first",
        "existing nodes: a pod that fits goes to an existing node before a new one",
        (POOL, node("n1"), pod("p")),
        both(new_nodes(0), lambda o: o.node_of("p").name == "n1"),
    ),
    Case(
        "hostname-selector-of-an-existing-node",
        "hostname: a pod selecting an existing node's hostname goes there",
        (POOL, node("n1"), node("n2"), pod("p", node_selector={wk.HOSTNAME: "n2"})),
        lambda o: o.node_of("p").name == "n2",
    ),
    Case(
        "hostname-selector-never-provisions",
        "hostname: a pod selecting a hostname no node has is not provisioned for",
        (POOL, pod("p", node_selector={wk.HOSTNAME: "some-node"})),
        both(pending("p"), new_nodes(0)),
    ),
    Case(
        "cordoned-node-takes-nothing",
        "existing nodes: a cordoned node takes no pod",
        (POOL, {**node("n1"), "spec": {"unschedulable": True}}, pod("p")),
        lambda o: o.node_of("p").new,
    ),
    Case(
        "full-node-overflows",
        "existing nodes: pods that do not fit the room left go to a new node",
        (POOL, node("n1", cpu="1"), deployment("web", 4, cpu="500m")),
        both(all_placed, lambda o: len(o.node_of("web-0").pods) + sum(len(n.pods) for n in o.new) == 4),
    ),
]

AFFINITY = [
    Case(
        "hostname-anti-affinity-one-per-node",
        "pod anti-affinity: hostname anti-affinity to itself puts each replica on its own node",
        (POOL, deployment("web", 4, anti=[term("web")])),
        both(all_placed, new_nodes(4)),
    ),
    Case(
        "hostname-affinity-to-self-one-node",
        "pod affinity: hostname affinity to itself puts every replica on one node",
        (POOL, deployment("web", 5, affinity=[term("web")])),
        both(all_placed, new_nodes(1)),
    ),
    Case(
        "zone-affinity-to-self-one-zone",
        "pod affinity: zone affinity to itself keeps replicas in one zone",
        (POOL, deployment("web", 6, cpu="1", affinity=[term("web", wk.ZONE)])),
        lambda o: len(o.count_by(wk.ZONE)) == 1 and not o.pending,
    ),
    Case(
        "affinity-to-a-pod-in-the-batch",
        "pod affinity: a pod follows a target pending in the same batch, whatever their names",
        (POOL, pod("a-follower", affinity=[term("target", wk.ZONE)]), pod("z-target", labels={"app": "target"})),
        lambda o: o.node_of("a-follower").labels[wk.ZONE] == o.node_of("z-target").labels[wk.ZONE],
    ),
    Case(
        "affinity-chain-in-the-batch",
        "pod affinity: a chain of followers in one batch all schedule (Karpenter's queue retries)",
        (
            POOL,
            pod("a-ui", labels={"app": "ui"}, affinity=[term("cache")]),
            pod("b-cache", labels={"app": "cache"}, affinity=[term("web")]),
            pod("c-web", labels={"app": "web"}, affinity=[term("db")]),
            pod("d-db", labels={"app": "db"}),
        ),
        both(all_placed, together("a-ui", "b-cache", "c-web", "d-db")),
    ),
    Case(
        "affinity-to-an-existing-pod",
        "pod affinity: a pod goes where its target already runs",
        (
            POOL,
            node("n1", zone="us-east-1b"),
            pod("db", labels={"app": "db"}, node_name="n1"),
            pod("p", cpu="8", affinity=[term("db", wk.ZONE)]),
        ),
        on_label("p", wk.ZONE, "us-east-1b"),
    ),
    Case(
        "affinity-to-nothing",
        "pod affinity: affinity to pods that exist nowhere is not provisioned for",
        (POOL, pod("p", affinity=[term("ghost")])),
        pending("p"),
    ),
    Case(
        "anti-affinity-to-an-existing-zone",
        "pod anti-affinity: a pod avoids the zone of a pod it is anti-affine to",
        (
            POOL,
            node("n1", zone="us-east-1a"),
            pod("db", labels={"app": "db"}, node_name="n1"),
            pod("p", anti=[term("db", wk.ZONE)]),
        ),
        lambda o: o.node_of("p").labels[wk.ZONE] != "us-east-1a",
    ),
    Case(
        "existing-pod-anti-affinity-is-symmetric",
        "pod anti-affinity: an existing pod's anti-affinity keeps matching pods off its node",
        (POOL, node("n1"), pod("guard", anti=[term("web")], node_name="n1"), pod("w", labels={"app": "web"})),
        lambda o: o.node_of("w").name != "n1",
    ),
    Case(
        "namespace-list-affinity",
        "pod affinity: a term naming another namespace follows the target there",
        (
            POOL,
            pod("target", namespace="data", labels={"app": "db"}),
            pod("a-follower", affinity=[term("db", wk.ZONE, namespaces=["data"])]),
        ),
        lambda o: o.node_of("a-follower").labels[wk.ZONE] == o.node_of("target").labels[wk.ZONE],
    ),
    Case(
        "preferred-anti-affinity-spreads-when-it-costs-little",
        "pod anti-affinity: preferred hostname anti-affinity puts replicas on separate nodes",
        (POOL, deployment("web", 3, cpu="1500m", preferred_anti=[(50, term("web"))])),
        both(all_placed, new_nodes(3)),
    ),
    Case(
        "preferred-anti-affinity-buys-no-node-per-replica",
        "pod anti-affinity: preferred hostname anti-affinity puts replicas on separate nodes",
        (POOL, deployment("web", 3, preferred_anti=[(50, term("web"))])),
        both(all_placed, new_nodes(1)),
        differs="Karpenter treats the preference as required and buys a node per replica; Nodewright keeps "
        "preferred pod (anti-)affinity only while it adds at most 25% to the plan (kube-scheduler still "
        "spreads the replicas over the nodes bought)",
    ),
]

PACKING = [
    Case(
        "pods-share-a-node",
        "packing: small pods share one node",
        (POOL, deployment("web", 10, cpu="100m")),
        both(all_placed, new_nodes(1)),
    ),
    Case(
        "too-large-for-any-type",
        "packing: a pod larger than every type is not provisioned for",
        (POOL, pod("p", cpu="100000")),
        pending("p"),
    ),
    Case(
        "daemonset-overhead-counted",
        "packing: a DaemonSet's requests are reserved on every new node",
        (POOL, daemonset("agent", cpu="1"), pod("p", cpu="1")),
        lambda o: int(o.node_of("p").labels[wk.INSTANCE_CPU]) >= 4,
        differs="Karpenter also reserves the overhead; the type chosen is the cheapest that holds both",
    ),
    Case(
        "gpu-pods-pack-by-gpu",
        "packing: GPU pods of 5, 5 and 2 GPUs take the cheapest GPU nodes, whatever their names",
        (
            nodepool(requirements=[req(wk.INSTANCE_FAMILY, "In", "g5", "g6")]),
            pod("a", gpu=5, cpu="1"),
            pod("b", gpu=5, cpu="1"),
            pod("c", gpu=2, cpu="1"),
        ),
        all_placed,
    ),
    Case(
        "limits-bound-new-capacity",
        "limits: a NodePool's cpu limit bounds what it launches",
        (nodepool(limits={"cpu": "4"}), deployment("web", 20, cpu="1")),
        lambda o: sum(int(n.labels[wk.INSTANCE_CPU]) for n in o.new) <= 4 and bool(o.pending),
    ),
    Case(
        "weighted-pool-first",
        "NodePools: the heavier NodePool is used first",
        (nodepool("light", weight=1), nodepool("heavy", weight=50, labels={TIER: "heavy"}), pod("p")),
        on_label("p", TIER, "heavy"),
    ),
]


@pytest.mark.parametrize(
    "case",
    cases_of(CUSTOM_LABELS, WELL_KNOWN, NODE_AFFINITY, TAINTS_AND_PORTS, EXISTING_AND_HOSTNAME, AFFINITY, PACKING),
)
def test_scheduling_behaviour(case: Case, tmp_path: Path) -> None:
    check(case, tmp_path)
