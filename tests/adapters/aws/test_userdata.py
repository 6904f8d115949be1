"""User data for each AMI family: pure string building, read back with real parsers.

Nothing is faked: the AL2023 archive is read with the stdlib MIME parser and its NodeConfig with
PyYAML, Bottlerocket settings with tomllib, and the AL2 script is inspected as text.
"""

from __future__ import annotations

import tomllib
from email import message_from_string
from typing import Any

import pytest
import yaml

from nodewright.adapters.aws.userdata import (
    NODECONFIG_CONTENT_TYPE,
    Bootstrap,
    InvalidBootstrap,
    al2_bootstrap_script,
    dump_toml,
    kubelet_may_set,
    node_labels,
    node_taints,
    render,
)
from nodewright.model import labels as wk
from nodewright.model.cluster import ClusterInfo
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.nodeclass import KubeletConfiguration
from nodewright.model.requirements import Requirements
from nodewright.model.resources import Resources
from nodewright.model.taints import Taint
from tests.builders import node_pool

CLUSTER = ClusterInfo(
    name="prod",
    endpoint="https://ABCDEF.gr7.us-east-1.eks.amazonaws.com",
    certificate_authority="LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t",
    version="1.31",
    service_cidr="172.20.0.0/16",
)
LABELS = {
    "karpenter.sh/capacity-type": "spot",
    "karpenter.sh/nodepool": "general",
    "nodewright.io/nodeclaim": "general-x7k2p",
    "nodewright.io/nodepool": "general",
    "team": "payments",
}
TAINTS = (Taint("dedicated", "NoSchedule", "payments"), Taint("node.cilium.io/agent-not-ready", "NoExecute"))
KUBELET = KubeletConfiguration(
    max_pods=58,
    kube_reserved=Resources.of(cpu="100m", memory="1Gi"),
    system_reserved=Resources.of(cpu="50m", memory="256Mi"),
    eviction_hard={"memory.available": "5%", "nodefs.available": "10%"},
    cluster_dns=("172.20.0.10",),
)


def bootstrap(**changes: Any) -> Bootstrap:
    fields: dict[str, Any] = {"cluster": CLUSTER, "labels": LABELS, "taints": TAINTS, "kubelet": KUBELET}
    fields.update(changes)
    return Bootstrap(**fields)


def mime_parts(text: str) -> list[tuple[str, str]]:
    message = message_from_string(text)
    assert message.is_multipart()
    return [(str(part["Content-Type"]), str(part.get_payload())) for part in message.walk() if not part.is_multipart()]


def nodeconfigs(text: str) -> list[dict[str, Any]]:
    return [yaml.safe_load(body) for kind, body in mime_parts(text) if kind == NODECONFIG_CONTENT_TYPE]


# --- labels and taints the node registers with --------------------------------------------------


def test_node_labels_follow_karpenter_and_name_the_claim() -> None:
    claim = NodeClaim(
        name="general-x7k2p",
        nodepool="general",
        requirements=Requirements.parse(
            [
                {"key": wk.ZONE, "operator": "In", "values": ["us-east-1a"]},
                {"key": wk.INSTANCE_FAMILY, "operator": "In", "values": ["m5"]},
                {"key": wk.INSTANCE_TYPE, "operator": "In", "values": ["m5.large"]},
                {"key": wk.CAPACITY_TYPE, "operator": "In", "values": ["spot", "on-demand"]},
                {"key": wk.INSTANCE_CPU, "operator": "Gt", "values": ["1"]},
            ]
        ),
        labels={"node-role.kubernetes.io/worker": "", "app": "api"},
    )
    pool = node_pool("general", labels={"team": "payments"})

    labels = node_labels(claim, pool, "spot")

    assert labels == {
        "app": "api",
        wk.CAPACITY_TYPE: "spot",
        wk.NODEPOOL: "general",
        wk.INSTANCE_FAMILY: "m5",
        wk.INSTANCE_TYPE: "m5.large",
        wk.NW_NODECLAIM: "general-x7k2p",
        wk.NW_NODEPOOL: "general",
        "team": "payments",
    }
    assert list(labels) == sorted(labels)  # deterministic order, so equal claims hash equally
    assert wk.NW_NODECLAIM not in node_labels(claim, pool, "spot", claim_label=False)


@pytest.mark.parametrize(
    ("key", "allowed"),
    [
        ("team", True),
        ("karpenter.k8s.aws/instance-family", True),
        ("node.kubernetes.io/instance-type", True),
        ("topology.kubernetes.io/zone", True),
        ("kubernetes.io/arch", True),
        ("node.kubernetes.io/lifecycle", True),
        ("node-role.kubernetes.io/worker", False),
        ("kubernetes.io/role", False),
        ("example.k8s.io/thing", False),
    ],
    ids=str,
)
def test_kubelet_may_only_set_its_allowed_kubernetes_io_labels(key: str, allowed: bool) -> None:
    assert kubelet_may_set(key) is allowed


def test_taints_are_followed_by_startup_taints_without_duplicates() -> None:
    shared = Taint("dedicated", "NoSchedule", "payments")
    startup = Taint("node.cilium.io/agent-not-ready", "NoExecute")
    claim = NodeClaim(name="c", nodepool="p", taints=(shared,), startup_taints=(startup,))
    pool = node_pool("p", taints=[shared], startup_taints=(startup,))
    assert node_taints(claim, pool) == (shared, startup)


# --- AL2023 (nodeadm) -------------------------------------------------------------------------


def test_al2023_nodeconfig_carries_cluster_labels_taints_and_kubelet_settings() -> None:
    text = render("AL2023", bootstrap())

    (config,) = nodeconfigs(text)
    assert config["apiVersion"] == "node.eks.aws/v1alpha1"
    assert config["kind"] == "NodeConfig"
    assert config["spec"]["cluster"] == {
        "name": "prod",
        "apiServerEndpoint": CLUSTER.endpoint,
        "certificateAuthority": CLUSTER.certificate_authority,
        "cidr": "172.20.0.0/16",
    }
    kubelet = config["spec"]["kubelet"]
    assert kubelet["flags"] == [
        "--node-labels=karpenter.sh/capacity-type=spot,karpenter.sh/nodepool=general,"
        "nodewright.io/nodeclaim=general-x7k2p,nodewright.io/nodepool=general,team=payments"
    ]
    assert kubelet["config"] == {
        "maxPods": 58,
        "clusterDNS": ["172.20.0.10"],
        "kubeReserved": {"cpu": "100m", "memory": "1Gi"},
        "systemReserved": {"cpu": "50m", "memory": "256Mi"},
        "evictionHard": {"memory.available": "5%", "nodefs.available": "10%"},
        "registerWithTaints": [
            {"key": "dedicated", "value": "payments", "effect": "NoSchedule"},
            {"key": "node.cilium.io/agent-not-ready", "effect": "NoExecute"},
        ],
    }


def test_al2023_appends_the_nodeclass_user_data_after_ours() -> None:
    shell = "#!/bin/bash\necho hello > /tmp/hello\n"
    custom_config = (
        "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\n"
        "spec:\n  kubelet:\n    config:\n      shutdownGracePeriod: 30s\n"
    )

    with_shell = mime_parts(render("AL2023", bootstrap(custom_user_data=shell)))
    with_config = mime_parts(render("AL2023", bootstrap(custom_user_data=custom_config)))

    assert [kind for kind, _ in with_shell] == [NODECONFIG_CONTENT_TYPE, 'text/x-shellscript; charset="us-ascii"']
    assert "echo hello" in with_shell[1][1]
    assert [kind for kind, _ in with_config] == [NODECONFIG_CONTENT_TYPE, NODECONFIG_CONTENT_TYPE]
    assert yaml.safe_load(with_config[1][1])["spec"]["kubelet"]["config"]["shutdownGracePeriod"] == "30s"


def test_al2023_copies_a_mime_archive_part_by_part() -> None:
    custom = (
        "MIME-Version: 1.0\n"
        'Content-Type: multipart/mixed; boundary="BOUNDARY"\n\n'
        "--BOUNDARY\n"
        'Content-Type: text/x-shellscript; charset="us-ascii"\n\n'
        "#!/bin/bash\necho one\n"
        "--BOUNDARY\n"
        "Content-Type: text/cloud-config\n\n"
        "runcmd: [echo two]\n"
        "--BOUNDARY--\n"
    )
    parts = mime_parts(render("AL2023", bootstrap(custom_user_data=custom)))
    assert [kind for kind, _ in parts] == [
        NODECONFIG_CONTENT_TYPE,
        'text/x-shellscript; charset="us-ascii"',
        "text/cloud-config",
    ]
    assert "echo one" in parts[1][1]
    assert "echo two" in parts[2][1]


def test_user_data_is_the_same_for_the_same_input() -> None:
    reordered = dict(reversed(list(LABELS.items())))
    assert render("AL2023", bootstrap()) == render("AL2023", bootstrap(labels=reordered))


# --- Bottlerocket (TOML) ----------------------------------------------------------------------


def test_bottlerocket_settings_carry_cluster_labels_taints_and_kubelet_settings() -> None:
    settings = tomllib.loads(render("Bottlerocket", bootstrap()))["settings"]["kubernetes"]
    assert settings["cluster-name"] == "prod"
    assert settings["api-server"] == CLUSTER.endpoint
    assert settings["cluster-certificate"] == CLUSTER.certificate_authority
    assert settings["node-labels"] == LABELS
    assert settings["node-taints"] == {
        "dedicated": ["payments:NoSchedule"],
        "node.cilium.io/agent-not-ready": [":NoExecute"],
    }
    assert settings["max-pods"] == 58
    assert settings["cluster-dns-ip"] == "172.20.0.10"
    assert settings["kube-reserved"] == {"cpu": "100m", "memory": "1Gi"}
    assert settings["system-reserved"] == {"cpu": "50m", "memory": "256Mi"}
    assert settings["eviction-hard"] == {"memory.available": "5%", "nodefs.available": "10%"}


def test_bottlerocket_keeps_the_nodeclass_settings_but_ours_win() -> None:
    custom = (
        "[settings.kubernetes]\n"
        'cluster-name = "someone-else"\n'
        "[settings.kubernetes.node-labels]\n"
        '"owner" = "platform"\n'
        "[settings.host-containers.admin]\n"
        "enabled = true\n"
        "[settings.autoscaling]\n"
        "should-wait = true\n"
    )
    document = tomllib.loads(render("Bottlerocket", bootstrap(custom_user_data=custom)))
    kubernetes = document["settings"]["kubernetes"]
    assert kubernetes["cluster-name"] == "prod"
    assert kubernetes["node-labels"] == {"owner": "platform", **LABELS}
    assert document["settings"]["host-containers"]["admin"]["enabled"] is True
    # Nodes join no Auto Scaling group: waiting for one would block the kubelet.
    assert document["settings"]["autoscaling"]["should-wait"] is False


def test_bottlerocket_rejects_user_data_that_is_not_toml() -> None:
    with pytest.raises(InvalidBootstrap, match="not valid Bottlerocket TOML"):
        render("Bottlerocket", bootstrap(custom_user_data="#!/bin/bash\necho hi"))


def test_toml_writer_round_trips_nested_tables_and_quoted_keys() -> None:
    document = {
        "settings": {
            "kubernetes": {"max-pods": 10, "node-labels": {"a.b/c": "d"}, "flag": True, "dns": ["1.2.3.4"]},
            "motd": 'say "hi"',
        }
    }
    assert tomllib.loads(dump_toml(document)) == document


# --- AL2 (bootstrap.sh) ----------------------------------------------------------------------


def test_al2_bootstrap_passes_labels_and_taints_as_kubelet_extra_args() -> None:
    script = al2_bootstrap_script(bootstrap())
    assert script.startswith("#!/bin/bash -xe\n")
    assert (
        f"/etc/eks/bootstrap.sh 'prod' --apiserver-endpoint '{CLUSTER.endpoint}'"
        f" --b64-cluster-ca '{CLUSTER.certificate_authority}'"
    ) in script
    assert "--dns-cluster-ip '172.20.0.10'" in script
    assert "--use-max-pods false" in script
    extra = script.split("--kubelet-extra-args '", 1)[1].split("'", 1)[0]
    assert (
        '--node-labels="karpenter.sh/capacity-type=spot,karpenter.sh/nodepool=general,'
        'nodewright.io/nodeclaim=general-x7k2p,nodewright.io/nodepool=general,team=payments"'
    ) in extra
    assert '--register-with-taints="dedicated=payments:NoSchedule,node.cilium.io/agent-not-ready=:NoExecute"' in extra
    assert "--max-pods=58" in extra
    assert '--kube-reserved="cpu=100m,memory=1Gi"' in extra
    assert '--eviction-hard="memory.available<5%,nodefs.available<10%"' in extra


def test_al2_runs_the_nodeclass_user_data_before_bootstrapping() -> None:
    parts = mime_parts(render("AL2", bootstrap(custom_user_data="#!/bin/bash\necho first\n")))
    assert len(parts) == 2
    assert "echo first" in parts[0][1]
    assert "/etc/eks/bootstrap.sh" in parts[1][1]


def test_al2_without_kubelet_settings_lets_bootstrap_compute_max_pods() -> None:
    script = al2_bootstrap_script(bootstrap(kubelet=None, taints=()))
    assert "--use-max-pods" not in script
    assert "--register-with-taints" not in script


# --- other families and bad input ------------------------------------------------------------


def test_custom_family_gets_the_nodeclass_user_data_unchanged() -> None:
    assert render("Custom", bootstrap(custom_user_data="#!/bin/bash\nmy-bootstrap\n")) == "#!/bin/bash\nmy-bootstrap\n"


def test_windows_is_refused() -> None:
    with pytest.raises(InvalidBootstrap, match="Windows2022"):
        render("Windows2022", bootstrap())


@pytest.mark.parametrize(
    "changes",
    [
        {"labels": {"team": "pay'; rm -rf /"}},
        {"labels": {"bad key": "x"}},
        {"taints": (Taint("dedicated", "NoSchedule", "a b"),)},
        {"kubelet": KubeletConfiguration(cluster_dns=("not-an-ip",))},
        {"kubelet": KubeletConfiguration(eviction_hard={"memory.available": "5%'"})},
    ],
    ids=["label-value", "label-key", "taint-value", "cluster-dns", "eviction"],
)
def test_values_that_would_break_quoting_are_refused(changes: dict[str, Any]) -> None:
    for family in ("AL2023", "AL2", "Bottlerocket"):
        with pytest.raises(InvalidBootstrap):
            render(family, bootstrap(**changes))
