"""User data that makes an instance join the cluster as the node its claim describes. Pure.

Role: string building only (no I/O, no clock), so every byte a node boots with is unit-tested.
`render(ami_family, bootstrap)` returns the plain text; the launch template base64-encodes it.

Per AMI family, following Karpenter's AWS provider:

- AL2023: a MIME multipart archive whose first part is a nodeadm `NodeConfig`
  (`application/node.eks.aws`): cluster name, API endpoint, CA and service CIDR; the kubelet
  config (maxPods, clusterDNS, kubeReserved, systemReserved, eviction thresholds,
  registerWithTaints) and the `--node-labels` flag. The EC2NodeClass `userData` follows as further
  parts: a MIME archive is copied part by part, a YAML mapping becomes a NodeConfig part, anything
  else a shell script part (nodeadm merges the NodeConfigs in order).
- Bottlerocket: TOML. The EC2NodeClass `userData` is parsed and our `settings.kubernetes` keys
  (cluster-name, api-server, cluster-certificate, node-labels, node-taints, max-pods,
  cluster-dns-ip, reserved resources, eviction thresholds) overwrite its values; its other
  settings are kept. `settings.autoscaling.should-wait` is forced off: nodes join no Auto
  Scaling group, so waiting would block the kubelet forever.
- AL2: `/etc/eks/bootstrap.sh` with `--kubelet-extra-args '--node-labels=... --register-with-taints=...'`
  in a MIME archive after the EC2NodeClass `userData` (which runs first, as in Karpenter).
- Custom: the EC2NodeClass `userData` unchanged (the AMI's owner bootstraps it).

Labels and taints end up inside shell and TOML quoting, so every one is checked against
Kubernetes' syntax first: `InvalidBootstrap` (a ValueError) names the bad value instead of
producing a script that breaks at boot.
"""

from __future__ import annotations

import ipaddress
import json
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from email import message_from_string
from email.message import Message
from typing import Any

import yaml

from nodewright.model import labels as wk
from nodewright.model.cluster import ClusterInfo
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.nodeclass import KubeletConfiguration
from nodewright.model.nodepool import NodePool
from nodewright.model.resources import Resources
from nodewright.model.taints import EFFECTS, Taint

MIME_BOUNDARY = "//"
NODECONFIG_CONTENT_TYPE = "application/node.eks.aws"
SHELL_CONTENT_TYPE = 'text/x-shellscript; charset="us-ascii"'
NODECONFIG_API_VERSION = "node.eks.aws/v1alpha1"

# Labels in the kubernetes.io / k8s.io domains the kubelet may set on its own node; any other key
# in those domains makes the kubelet refuse to start (NodeRestriction).
_KUBELET_LABELS = frozenset(
    {
        "kubernetes.io/hostname",
        "kubernetes.io/os",
        "kubernetes.io/arch",
        "beta.kubernetes.io/os",
        "beta.kubernetes.io/arch",
        "beta.kubernetes.io/instance-type",
        "node.kubernetes.io/instance-type",
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/region",
    }
)
_KUBELET_LABEL_DOMAINS = ("kubelet.kubernetes.io", "node.kubernetes.io")
# Set on the node by the cloud (the AWS cloud controller) or the kubelet itself, not by us.
_SET_BY_CLOUD = frozenset({wk.ZONE, wk.REGION, wk.HOSTNAME})

_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_PREFIX = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_LABEL_KEY = re.compile(rf"^({_PREFIX}/)?{_NAME}$")
_LABEL_VALUE = re.compile(rf"^({_NAME})?$")
_KUBELET_MAP_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]*$")
_KUBELET_MAP_VALUE = re.compile(r"^[0-9][0-9.]*(%|[A-Za-z]{0,2})?$")


class InvalidBootstrap(ValueError):
    """A label, taint or kubelet setting that cannot be written into user data safely."""


@dataclass(frozen=True, slots=True)
class Bootstrap:
    """Everything user data carries: the cluster, the node's labels and taints, kubelet settings.

    `taints` are the node's taints followed by its startup taints (both are registered by the
    kubelet; startup taints are later removed by whoever they belong to).
    """

    cluster: ClusterInfo
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    kubelet: KubeletConfiguration | None = None
    custom_user_data: str | None = None


# --- labels and taints -------------------------------------------------------------------------


def kubelet_may_set(key: str) -> bool:
    """True when the kubelet is allowed to register its node with label `key`."""
    domain = key.partition("/")[0] if "/" in key else ""
    if not domain.endswith(("kubernetes.io", "k8s.io")):
        return True
    if key in _KUBELET_LABELS:
        return True
    return any(domain == d or domain.endswith("." + d) for d in _KUBELET_LABEL_DOMAINS)


def node_labels(
    claim: NodeClaim, nodepool: NodePool, capacity_type: str, *, claim_label: bool = True
) -> dict[str, str]:
    """The labels the node registers with, as Karpenter gives them.

    Every key the claim's requirements fix to one value (zone, region and hostname excepted: the
    cloud sets those), the NodePool's template labels, the claim's own labels, then
    `karpenter.sh/capacity-type` (the capacity type being launched), `karpenter.sh/nodepool`,
    `nodewright.io/nodepool` and, with `claim_label`, `nodewright.io/nodeclaim`. Keys the kubelet
    may not set are left out (they would stop it from starting).
    """
    labels: dict[str, str] = {}
    for key, value in claim.requirements.labels().items():
        if key not in _SET_BY_CLOUD:
            labels[key] = value
    labels.update(nodepool.labels)
    labels.update(claim.labels)
    labels[wk.CAPACITY_TYPE] = capacity_type
    labels[wk.NODEPOOL] = nodepool.name
    labels[wk.NW_NODEPOOL] = nodepool.name
    if claim_label:
        labels[wk.NW_NODECLAIM] = claim.name
    return {key: labels[key] for key in sorted(labels) if kubelet_may_set(key)}


def node_taints(claim: NodeClaim, nodepool: NodePool) -> tuple[Taint, ...]:
    """Taints then startup taints of the claim and its NodePool, without duplicates, in order."""
    out: list[Taint] = []
    for taint in (*claim.taints, *nodepool.taints, *claim.startup_taints, *nodepool.startup_taints):
        if taint not in out:
            out.append(taint)
    return tuple(out)


def validate(bootstrap: Bootstrap) -> None:
    """Raise InvalidBootstrap for a label, taint or kubelet value that is not valid Kubernetes syntax."""
    for key, value in bootstrap.labels.items():
        if not _LABEL_KEY.match(key) or len(key.rpartition("/")[0]) > 253:
            raise InvalidBootstrap(f"label key {key!r} is not a valid Kubernetes label key")
        if not _LABEL_VALUE.match(value):
            raise InvalidBootstrap(f"label {key}={value!r}: not a valid Kubernetes label value")
    for taint in bootstrap.taints:
        if not _LABEL_KEY.match(taint.key):
            raise InvalidBootstrap(f"taint key {taint.key!r} is not a valid Kubernetes taint key")
        if not _LABEL_VALUE.match(taint.value):
            raise InvalidBootstrap(f"taint {taint.key}={taint.value!r}: not a valid taint value")
        if taint.effect not in EFFECTS:
            raise InvalidBootstrap(f"taint {taint.key}: effect {taint.effect!r} is not one of {', '.join(EFFECTS)}")
    kubelet = bootstrap.kubelet
    if kubelet is None:
        return
    for address in kubelet.cluster_dns:
        try:
            ipaddress.ip_address(address)
        except ValueError:
            raise InvalidBootstrap(f"kubelet clusterDNS {address!r} is not an IP address") from None
    for name, thresholds in (("evictionHard", kubelet.eviction_hard), ("evictionSoft", kubelet.eviction_soft)):
        for signal, threshold in thresholds.items():
            if not _KUBELET_MAP_KEY.match(signal) or not _KUBELET_MAP_VALUE.match(threshold):
                raise InvalidBootstrap(f"kubelet {name} {signal}={threshold!r} is not a valid threshold")


def _label_arg(labels: Mapping[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def _taint_arg(taints: Sequence[Taint]) -> str:
    return ",".join(f"{t.key}={t.value}:{t.effect}" for t in taints)


def _quantities(resources: Resources | None) -> dict[str, str]:
    if not resources:
        return {}
    return {name: str(value) for name, value in resources.format().items()}


def _duration(seconds: float) -> str:
    # Go duration syntax, as the kubelet's config parser reads it.
    whole = int(seconds)
    return f"{whole}s" if whole == seconds else f"{int(seconds * 1000)}ms"


# --- AL2023 (nodeadm) --------------------------------------------------------------------------


def nodeconfig(bootstrap: Bootstrap) -> dict[str, Any]:
    """The nodeadm NodeConfig document (as a mapping) for AL2023."""
    cluster = bootstrap.cluster
    kubelet_config: dict[str, Any] = {}
    k = bootstrap.kubelet
    if k is not None:
        if k.max_pods is not None:
            kubelet_config["maxPods"] = k.max_pods
        if k.pods_per_core is not None:
            kubelet_config["podsPerCore"] = k.pods_per_core
        if k.cluster_dns:
            kubelet_config["clusterDNS"] = list(k.cluster_dns)
        if k.kube_reserved:
            kubelet_config["kubeReserved"] = _quantities(k.kube_reserved)
        if k.system_reserved:
            kubelet_config["systemReserved"] = _quantities(k.system_reserved)
        if k.eviction_hard:
            kubelet_config["evictionHard"] = dict(sorted(k.eviction_hard.items()))
        if k.eviction_soft:
            kubelet_config["evictionSoft"] = dict(sorted(k.eviction_soft.items()))
        if k.eviction_soft_grace_period:
            kubelet_config["evictionSoftGracePeriod"] = {
                s: _duration(v) for s, v in sorted(k.eviction_soft_grace_period.items())
            }
        if k.eviction_max_pod_grace_period is not None:
            kubelet_config["evictionMaxPodGracePeriod"] = k.eviction_max_pod_grace_period
        if k.image_gc_high_threshold_percent is not None:
            kubelet_config["imageGCHighThresholdPercent"] = k.image_gc_high_threshold_percent
        if k.image_gc_low_threshold_percent is not None:
            kubelet_config["imageGCLowThresholdPercent"] = k.image_gc_low_threshold_percent
        if k.cpu_cfs_quota is not None:
            kubelet_config["cpuCFSQuota"] = k.cpu_cfs_quota
    if bootstrap.taints:
        kubelet_config["registerWithTaints"] = [t.to_manifest() for t in bootstrap.taints]
    kubelet: dict[str, Any] = {"config": kubelet_config}
    if bootstrap.labels:
        kubelet["flags"] = [f"--node-labels={_label_arg(bootstrap.labels)}"]
    return {
        "apiVersion": NODECONFIG_API_VERSION,
        "kind": "NodeConfig",
        "spec": {
            "cluster": {
                "name": cluster.name,
                "apiServerEndpoint": cluster.endpoint,
                "certificateAuthority": cluster.certificate_authority,
                "cidr": cluster.service_cidr,
            },
            "kubelet": kubelet,
        },
    }


def al2023_user_data(bootstrap: Bootstrap) -> str:
    """MIME multipart: our NodeConfig first, then the EC2NodeClass userData's parts."""
    validate(bootstrap)
    document = yaml.safe_dump(nodeconfig(bootstrap), sort_keys=False, default_flow_style=False)
    parts: list[tuple[dict[str, str], str]] = [
        ({"Content-Type": NODECONFIG_CONTENT_TYPE}, "# Nodewright generated NodeConfig\n" + document)
    ]
    parts.extend(_custom_parts(bootstrap.custom_user_data, yaml_is_nodeconfig=True))
    return mime_archive(parts)


# --- AL2 (bootstrap.sh) ------------------------------------------------------------------------


def kubelet_extra_args(bootstrap: Bootstrap) -> list[str]:
    """Kubelet command-line flags for bootstrap.sh's --kubelet-extra-args."""
    args: list[str] = []
    if bootstrap.labels:
        args.append(f'--node-labels="{_label_arg(bootstrap.labels)}"')
    if bootstrap.taints:
        args.append(f'--register-with-taints="{_taint_arg(bootstrap.taints)}"')
    k = bootstrap.kubelet
    if k is None:
        return args
    if k.max_pods is not None:
        args.append(f"--max-pods={k.max_pods}")
    if k.pods_per_core is not None:
        args.append(f"--pods-per-core={k.pods_per_core}")
    for flag, values, sep in (
        ("--system-reserved", _quantities(k.system_reserved), "="),
        ("--kube-reserved", _quantities(k.kube_reserved), "="),
        ("--eviction-hard", dict(k.eviction_hard), "<"),
        ("--eviction-soft", dict(k.eviction_soft), "<"),
        ("--eviction-soft-grace-period", {s: _duration(v) for s, v in k.eviction_soft_grace_period.items()}, "="),
    ):
        if values:
            args.append(f'{flag}="{",".join(f"{name}{sep}{value}" for name, value in sorted(values.items()))}"')
    if k.eviction_max_pod_grace_period is not None:
        args.append(f"--eviction-max-pod-grace-period={k.eviction_max_pod_grace_period}")
    if k.image_gc_high_threshold_percent is not None:
        args.append(f"--image-gc-high-threshold={k.image_gc_high_threshold_percent}")
    if k.image_gc_low_threshold_percent is not None:
        args.append(f"--image-gc-low-threshold={k.image_gc_low_threshold_percent}")
    if k.cpu_cfs_quota is not None:
        args.append(f"--cpu-cfs-quota={str(k.cpu_cfs_quota).lower()}")
    return args


def al2_bootstrap_script(bootstrap: Bootstrap) -> str:
    """The shell script calling /etc/eks/bootstrap.sh (no MIME wrapping)."""
    cluster = bootstrap.cluster
    k = bootstrap.kubelet
    head = "#!/bin/bash -xe\nexec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1\n"
    lines = [
        # bootstrap.sh does not accept "--flag=value": every value is a separate word.
        f"/etc/eks/bootstrap.sh '{cluster.name}' --apiserver-endpoint '{cluster.endpoint}'"
        f" --b64-cluster-ca '{cluster.certificate_authority}'",
    ]
    if cluster.ip_family == "ipv6":
        lines.append("--ip-family ipv6")
    if k is not None and k.cluster_dns:
        lines.append(f"--dns-cluster-ip '{k.cluster_dns[0]}'")
    if k is not None and k.max_pods is not None:
        # Otherwise bootstrap.sh computes the ENI-limited max pods, which would override ours.
        lines.append("--use-max-pods false")
    extra = kubelet_extra_args(bootstrap)
    if extra:
        lines.append(f"--kubelet-extra-args '{' '.join(extra)}'")
    return head + " \\\n".join(lines) + "\n"


def al2_user_data(bootstrap: Bootstrap) -> str:
    """MIME multipart: the EC2NodeClass userData's parts first, then the bootstrap script."""
    validate(bootstrap)
    parts = list(_custom_parts(bootstrap.custom_user_data, yaml_is_nodeconfig=False))
    parts.append(({"Content-Type": SHELL_CONTENT_TYPE}, al2_bootstrap_script(bootstrap)))
    return mime_archive(parts)


# --- Bottlerocket (TOML) -----------------------------------------------------------------------


def bottlerocket_settings(bootstrap: Bootstrap) -> dict[str, Any]:
    """The Bottlerocket settings document: the custom TOML with our kubernetes settings on top."""
    try:
        document: dict[str, Any] = tomllib.loads(bootstrap.custom_user_data or "")
    except tomllib.TOMLDecodeError as error:
        raise InvalidBootstrap(f"EC2NodeClass userData is not valid Bottlerocket TOML: {error}") from None
    settings = document.setdefault("settings", {})
    autoscaling = settings.get("autoscaling")
    if isinstance(autoscaling, dict) and "should-wait" in autoscaling:
        autoscaling["should-wait"] = False
    kubernetes = settings.setdefault("kubernetes", {})
    cluster = bootstrap.cluster
    kubernetes["cluster-name"] = cluster.name
    kubernetes["api-server"] = cluster.endpoint
    kubernetes["cluster-certificate"] = cluster.certificate_authority
    labels = dict(kubernetes.get("node-labels") or {})
    labels.update(bootstrap.labels)
    kubernetes["node-labels"] = dict(sorted(labels.items()))
    taints: dict[str, list[str]] = {}
    for taint in bootstrap.taints:
        taints.setdefault(taint.key, []).append(f"{taint.value}:{taint.effect}")
    kubernetes["node-taints"] = taints
    k = bootstrap.kubelet
    if k is not None:
        if k.max_pods is not None:
            kubernetes["max-pods"] = k.max_pods
        if k.cluster_dns:
            kubernetes["cluster-dns-ip"] = k.cluster_dns[0]
        if k.kube_reserved:
            kubernetes["kube-reserved"] = _quantities(k.kube_reserved)
        if k.system_reserved:
            kubernetes["system-reserved"] = _quantities(k.system_reserved)
        if k.eviction_hard:
            kubernetes["eviction-hard"] = dict(sorted(k.eviction_hard.items()))
        if k.eviction_max_pod_grace_period is not None:
            kubernetes["eviction-max-pod-grace-period"] = k.eviction_max_pod_grace_period
        if k.image_gc_high_threshold_percent is not None:
            kubernetes["image-gc-high-threshold-percent"] = str(k.image_gc_high_threshold_percent)
        if k.image_gc_low_threshold_percent is not None:
            kubernetes["image-gc-low-threshold-percent"] = str(k.image_gc_low_threshold_percent)
        if k.cpu_cfs_quota is not None:
            kubernetes["cpu-cfs-quota-enforced"] = k.cpu_cfs_quota
        # evictionSoft and podsPerCore are not Bottlerocket settings (Karpenter drops them too).
    return document


def bottlerocket_user_data(bootstrap: Bootstrap) -> str:
    """Bottlerocket TOML settings."""
    validate(bootstrap)
    return dump_toml(bottlerocket_settings(bootstrap))


# --- entry point -------------------------------------------------------------------------------


def render(ami_family: str, bootstrap: Bootstrap) -> str:
    """The user data text for `ami_family` (AL2023, AL2, Bottlerocket or Custom)."""
    if ami_family == "AL2023":
        return al2023_user_data(bootstrap)
    if ami_family == "AL2":
        return al2_user_data(bootstrap)
    if ami_family == "Bottlerocket":
        return bottlerocket_user_data(bootstrap)
    if ami_family == "Custom":
        return bootstrap.custom_user_data or ""
    raise InvalidBootstrap(f"amiFamily {ami_family!r} is not supported (AL2023, AL2, Bottlerocket, Custom)")


# --- MIME and TOML writers ---------------------------------------------------------------------


def mime_archive(parts: Iterable[tuple[Mapping[str, str], str]]) -> str:
    """A multipart/mixed archive with a fixed boundary, so equal inputs give equal bytes."""
    out = ["MIME-Version: 1.0", f'Content-Type: multipart/mixed; boundary="{MIME_BOUNDARY}"', ""]
    for headers, body in parts:
        out.append(f"--{MIME_BOUNDARY}")
        out.extend(f"{name}: {value}" for name, value in headers.items())
        out.append("")
        out.append(body.rstrip("\n"))
    out.append(f"--{MIME_BOUNDARY}--")
    return "\n".join(out) + "\n"


def _custom_parts(user_data: str | None, *, yaml_is_nodeconfig: bool) -> list[tuple[dict[str, str], str]]:
    if not user_data or not user_data.strip():
        return []
    stripped = user_data.lstrip()
    if stripped.startswith(("MIME-Version:", "Content-Type:")):
        return _mime_parts(message_from_string(stripped))
    content_type = SHELL_CONTENT_TYPE
    if yaml_is_nodeconfig and _is_yaml_mapping(user_data):
        content_type = NODECONFIG_CONTENT_TYPE
    return [({"Content-Type": content_type}, user_data)]


def _mime_parts(message: Message) -> list[tuple[dict[str, str], str]]:
    if not message.is_multipart():
        raise InvalidBootstrap("EC2NodeClass userData has MIME headers but is not a multipart archive")
    out: list[tuple[dict[str, str], str]] = []
    for part in message.walk():
        if part.is_multipart():
            continue
        payload = part.get_payload()
        out.append(({name: str(value) for name, value in part.items()}, str(payload)))
    return out


def _is_yaml_mapping(text: str) -> bool:
    try:
        return isinstance(yaml.safe_load(text), dict)
    except yaml.YAMLError:
        return False


_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.match(key) else json.dumps(key)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml_key(str(k))} = {_toml_value(v)}" for k, v in value.items()) + "}"
    if hasattr(value, "isoformat"):
        return str(value.isoformat())
    raise InvalidBootstrap(f"cannot write {type(value).__name__} as TOML")


def dump_toml(document: Mapping[str, Any]) -> str:
    """Write a TOML document: scalars and arrays inline, nested mappings as [dotted.tables]."""
    lines: list[str] = []
    _dump_table(document, (), lines)
    return "\n".join(lines).lstrip("\n") + "\n"


def _dump_table(table: Mapping[str, Any], path: tuple[str, ...], lines: list[str]) -> None:
    scalars = {k: v for k, v in table.items() if not isinstance(v, dict)}
    tables = {k: v for k, v in table.items() if isinstance(v, dict)}
    if path and (scalars or not tables):
        lines.append("")
        lines.append("[" + ".".join(_toml_key(p) for p in path) + "]")
    for key, value in scalars.items():
        lines.append(f"{_toml_key(str(key))} = {_toml_value(value)}")
    for key, value in tables.items():
        _dump_table(value, (*path, str(key)), lines)
