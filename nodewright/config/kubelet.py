"""The `kubelet` block of an EC2NodeClass: validate it into `KubeletConfiguration` and print it back. Pure.

Karpenter's v1 rules: reserved resources only of cpu, memory, ephemeral-storage and pid; eviction
thresholds only of the kubelet's signals, as quantities or percentages; every soft eviction paired
with a grace period and the other way round; the image GC high threshold above the low one;
clusterDNS entries are IP addresses. What the block changes in a node's allocatable is
`nodewright.engine.catalog`'s.
"""

import ipaddress
import re
from collections.abc import Mapping
from typing import Any

from nodewright.config import fields as f
from nodewright.config.problems import At, show
from nodewright.model.duration import format_duration
from nodewright.model.nodeclass import (
    KubeletConfiguration,
)
from nodewright.model.resources import Resources

RESERVED_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pid")
EVICTION_SIGNALS = (
    "memory.available",
    "nodefs.available",
    "nodefs.inodesFree",
    "imagefs.available",
    "imagefs.inodesFree",
    "pid.available",
)
_EVICTION_VALUE = re.compile(r"^((\d{1,2}(\.\d{1,2})?|100(\.0{1,2})?)%|[+-]?\d+(\.\d+)?(Ki|Mi|Gi|Ti|Pi|Ei|[kMGTPE])?)$")
_GRACE = re.compile(r"^([0-9]+(\.[0-9]+)?(s|m|h))+$")
_KUBELET = (
    "maxPods",
    "podsPerCore",
    "kubeReserved",
    "systemReserved",
    "evictionHard",
    "evictionSoft",
    "evictionSoftGracePeriod",
    "evictionMaxPodGracePeriod",
    "clusterDNS",
    "cpuCFSQuota",
    "imageGCHighThresholdPercent",
    "imageGCLowThresholdPercent",
)


def _reserved(at: At, value: Any) -> Resources | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        f.wrong_type(at, dict, value)
        return None
    out: dict[str, int] = {}
    for key, raw in value.items():
        at_key = at / str(key)
        if key not in RESERVED_RESOURCES:
            at_key.error(f"{show(key)} is not one of {', '.join(RESERVED_RESOURCES)}")
            continue
        if not isinstance(raw, str):
            f.wrong_type(at_key, str, raw)
            continue
        milli = f.quantity(at_key, raw)
        if milli is not None:
            out[str(key)] = milli
    return Resources(out)


def _signal_rule(at: At, key: str) -> None:
    if key not in EVICTION_SIGNALS:
        at.error(f"{show(key)} is not one of {', '.join(EVICTION_SIGNALS)}")


def _eviction(at: At, value: Any) -> dict[str, str]:
    found = f.string_map(at, value, key_rule=_signal_rule) or {}
    for key, text in found.items():
        if not _EVICTION_VALUE.match(text):
            (at / key).error(f"{show(text)} is not a quantity (e.g. 100Mi) or a percentage (e.g. 10%)")
    return found


def parse_kubelet(at: At, value: Any) -> KubeletConfiguration | None:
    start = at.mark()
    kubelet = f.kube_obj(at, value, _KUBELET)
    if kubelet is None:
        return None
    grace_raw = f.string_map(
        at / "evictionSoftGracePeriod", kubelet.get("evictionSoftGracePeriod"), key_rule=_signal_rule
    )
    grace: dict[str, float] = {}
    for key, text in (grace_raw or {}).items():
        parsed = f.duration(at / "evictionSoftGracePeriod" / key, text, pattern=_GRACE, examples="30s, 1m30s")
        if parsed is not None and parsed[0] is not None:
            grace[key] = parsed[0]
    soft = _eviction(at / "evictionSoft", kubelet.get("evictionSoft"))
    for key in soft:
        if key not in (grace_raw or {}):
            (at / "evictionSoft" / key).error("needs a matching evictionSoftGracePeriod entry")
    for key in grace_raw or {}:
        if key not in soft:
            (at / "evictionSoftGracePeriod" / key).error("needs a matching evictionSoft entry")
    high = f.integer(
        at / "imageGCHighThresholdPercent", kubelet.get("imageGCHighThresholdPercent"), minimum=0, maximum=100
    )
    low = f.integer(
        at / "imageGCLowThresholdPercent", kubelet.get("imageGCLowThresholdPercent"), minimum=0, maximum=100
    )
    if high is not None and low is not None and high <= low:
        (at / "imageGCHighThresholdPercent").error(
            f"must be greater than imageGCLowThresholdPercent ({low}), got {high}"
        )
    cluster_dns = f.string_list(at / "clusterDNS", kubelet.get("clusterDNS")) or ()
    for index, address in enumerate(cluster_dns):
        try:
            ipaddress.ip_address(address)
        except ValueError:
            (at / "clusterDNS" / index).error(f"{show(address)} is not an IP address")
    parsed_kubelet = KubeletConfiguration(
        max_pods=f.integer(at / "maxPods", kubelet.get("maxPods"), minimum=0),
        pods_per_core=f.integer(at / "podsPerCore", kubelet.get("podsPerCore"), minimum=0),
        kube_reserved=_reserved(at / "kubeReserved", kubelet.get("kubeReserved")),
        system_reserved=_reserved(at / "systemReserved", kubelet.get("systemReserved")),
        eviction_hard=_eviction(at / "evictionHard", kubelet.get("evictionHard")),
        eviction_soft=soft,
        eviction_soft_grace_period=grace,
        eviction_max_pod_grace_period=f.integer(
            at / "evictionMaxPodGracePeriod", kubelet.get("evictionMaxPodGracePeriod")
        ),
        cluster_dns=tuple(cluster_dns),
        cpu_cfs_quota=f.boolean(at / "cpuCFSQuota", kubelet.get("cpuCFSQuota")),
        image_gc_high_threshold_percent=high,
        image_gc_low_threshold_percent=low,
    )
    return None if at.failed_since(start) else parsed_kubelet


def render_kubelet(kubelet: KubeletConfiguration) -> dict[str, Any]:
    pairs: tuple[tuple[str, Any], ...] = (
        ("maxPods", kubelet.max_pods),
        ("podsPerCore", kubelet.pods_per_core),
        (
            "kubeReserved",
            {k: str(v) for k, v in kubelet.kube_reserved.format().items()} if kubelet.kube_reserved else None,
        ),
        (
            "systemReserved",
            {k: str(v) for k, v in kubelet.system_reserved.format().items()} if kubelet.system_reserved else None,
        ),
        ("evictionHard", dict(kubelet.eviction_hard) or None),
        ("evictionSoft", dict(kubelet.eviction_soft) or None),
        (
            "evictionSoftGracePeriod",
            {k: format_duration(v) for k, v in kubelet.eviction_soft_grace_period.items()} or None,
        ),
        ("evictionMaxPodGracePeriod", kubelet.eviction_max_pod_grace_period),
        ("clusterDNS", list(kubelet.cluster_dns) or None),
        ("cpuCFSQuota", kubelet.cpu_cfs_quota),
        ("imageGCHighThresholdPercent", kubelet.image_gc_high_threshold_percent),
        ("imageGCLowThresholdPercent", kubelet.image_gc_low_threshold_percent),
    )
    return {key: value for key, value in pairs if value is not None}
