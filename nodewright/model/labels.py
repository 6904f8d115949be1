"""Well-known label and annotation keys, shared with Karpenter so manifests mean the same here."""

from __future__ import annotations

from types import MappingProxyType

# Kubernetes
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
HOSTNAME = "kubernetes.io/hostname"
ARCH = "kubernetes.io/arch"
OS = "kubernetes.io/os"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
WINDOWS_BUILD = "node.kubernetes.io/windows-build"

# Karpenter (karpenter.sh)
CAPACITY_TYPE = "karpenter.sh/capacity-type"
NODEPOOL = "karpenter.sh/nodepool"
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
# The ReplicaSet controller deletes pods with a lower cost first when it scales down.
POD_DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"

# Karpenter AWS (karpenter.k8s.aws)
INSTANCE_CATEGORY = "karpenter.k8s.aws/instance-category"
INSTANCE_FAMILY = "karpenter.k8s.aws/instance-family"
INSTANCE_GENERATION = "karpenter.k8s.aws/instance-generation"
INSTANCE_SIZE = "karpenter.k8s.aws/instance-size"
INSTANCE_CPU = "karpenter.k8s.aws/instance-cpu"
INSTANCE_CPU_MANUFACTURER = "karpenter.k8s.aws/instance-cpu-manufacturer"
INSTANCE_MEMORY = "karpenter.k8s.aws/instance-memory"
INSTANCE_NETWORK_BANDWIDTH = "karpenter.k8s.aws/instance-network-bandwidth"
INSTANCE_EBS_BANDWIDTH = "karpenter.k8s.aws/instance-ebs-bandwidth"
INSTANCE_GPU_NAME = "karpenter.k8s.aws/instance-gpu-name"
INSTANCE_GPU_MANUFACTURER = "karpenter.k8s.aws/instance-gpu-manufacturer"
INSTANCE_GPU_COUNT = "karpenter.k8s.aws/instance-gpu-count"
INSTANCE_GPU_MEMORY = "karpenter.k8s.aws/instance-gpu-memory"
INSTANCE_ACCELERATOR_NAME = "karpenter.k8s.aws/instance-accelerator-name"
INSTANCE_ACCELERATOR_MANUFACTURER = "karpenter.k8s.aws/instance-accelerator-manufacturer"
INSTANCE_ACCELERATOR_COUNT = "karpenter.k8s.aws/instance-accelerator-count"
INSTANCE_HYPERVISOR = "karpenter.k8s.aws/instance-hypervisor"
INSTANCE_LOCAL_NVME = "karpenter.k8s.aws/instance-local-nvme"
INSTANCE_ENCRYPTION_IN_TRANSIT = "karpenter.k8s.aws/instance-encryption-in-transit-supported"
INSTANCE_CAPABILITY_FLEX = "karpenter.k8s.aws/instance-capability-flex"  # "true" for the *-flex types
INSTANCE_TENANCY = "karpenter.k8s.aws/instance-tenancy"  # "default": Nodewright launches shared tenancy
INSTANCE_CPU_SUSTAINED_CLOCK_SPEED_MHZ = "karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz"
# Set on nodes launched into a capacity reservation (Karpenter's labels; only reserved nodes have
# them). Well known: a NodePool or pod may require them, and each offering decides them
# (`Offering.allowed_by`: a reserved offering has its reservation's values, any other has neither).
CAPACITY_RESERVATION_ID = "karpenter.k8s.aws/capacity-reservation-id"
CAPACITY_RESERVATION_TYPE = "karpenter.k8s.aws/capacity-reservation-type"
CAPACITY_RESERVATION_INTERRUPTIBLE = "karpenter.k8s.aws/capacity-reservation-interruptible"  # "true" / "false"

# Deprecated and driver-specific keys that name the same thing as a well-known one. As Karpenter
# does (its NormalizedLabels), a requirement on an alias is a requirement on the canonical key
# (`Requirement.new` rewrites it), and a node carries both (`ALIASES_OF`).
NORMALIZED = MappingProxyType(
    {
        "beta.kubernetes.io/arch": ARCH,
        "beta.kubernetes.io/os": OS,
        "beta.kubernetes.io/instance-type": INSTANCE_TYPE,
        "failure-domain.beta.kubernetes.io/region": REGION,
        "failure-domain.beta.kubernetes.io/zone": ZONE,
        "topology.ebs.csi.aws.com/zone": ZONE,  # the node affinity of volumes the EBS CSI driver made
    }
)


def canonical(key: str) -> str:
    """The well-known key `key` stands for (itself unless it is one of NORMALIZED's aliases)."""
    return NORMALIZED.get(key, key)


def with_aliases(labels: dict[str, str]) -> dict[str, str]:
    """`labels` plus every alias of the canonical keys they set, as a node registers them."""
    out = dict(labels)
    for alias, key in NORMALIZED.items():
        if key in labels:
            out.setdefault(alias, labels[key])
    return out


# Nodewright's own
NW_NODEPOOL = "nodewright.io/nodepool"
NW_NODECLAIM = "nodewright.io/nodeclaim"
NW_DO_NOT_DISRUPT = "nodewright.io/do-not-disrupt"
NW_REBALANCE_POLICY = "nodewright.io/rebalance-policy"
NW_ZONE_BALANCE = "nodewright.io/zone-balance"
NW_DAEMONSET_OVERFLOW = "nodewright.io/daemonset-overflow"
DISRUPTED_TAINT_KEY = "nodewright.io/disrupted"
# Values of the disrupted taint: its pods are being replaced (the provisioner counts them as
# pending), or the node is only cordoned (a rebalance policy of Cordon: nothing moves).
DISRUPTED_REPLACE = "replace"
DISRUPTED_CORDON_ONLY = "cordon-only"
DISRUPTED_CONSOLIDATION = "consolidation"  # a consolidation command's candidate
KARPENTER_DISRUPTED_TAINT_KEY = "karpenter.sh/disrupted"

CAPACITY_TYPES = ("reserved", "spot", "on-demand")
# The labels only a reserved offering's nodes have: a node without them is not in a reservation.
RESERVATION_LABELS = (CAPACITY_RESERVATION_ID, CAPACITY_RESERVATION_TYPE, CAPACITY_RESERVATION_INTERRUPTIBLE)

# Keys that a node gets from its instance type or NodeClaim rather than from the NodePool
# template: a pod may require them even when the NodePool does not mention them.
WELL_KNOWN = frozenset(
    {
        ZONE,
        REGION,
        HOSTNAME,
        ARCH,
        OS,
        INSTANCE_TYPE,
        WINDOWS_BUILD,
        CAPACITY_TYPE,
        NODEPOOL,
        NW_NODEPOOL,
        INSTANCE_CATEGORY,
        INSTANCE_FAMILY,
        INSTANCE_GENERATION,
        INSTANCE_SIZE,
        INSTANCE_CPU,
        INSTANCE_CPU_MANUFACTURER,
        INSTANCE_MEMORY,
        INSTANCE_NETWORK_BANDWIDTH,
        INSTANCE_EBS_BANDWIDTH,
        INSTANCE_GPU_NAME,
        INSTANCE_GPU_MANUFACTURER,
        INSTANCE_GPU_COUNT,
        INSTANCE_GPU_MEMORY,
        INSTANCE_ACCELERATOR_NAME,
        INSTANCE_ACCELERATOR_MANUFACTURER,
        INSTANCE_ACCELERATOR_COUNT,
        INSTANCE_HYPERVISOR,
        INSTANCE_LOCAL_NVME,
        INSTANCE_ENCRYPTION_IN_TRANSIT,
        INSTANCE_CAPABILITY_FLEX,
        INSTANCE_TENANCY,
        INSTANCE_CPU_SUSTAINED_CLOCK_SPEED_MHZ,
        *NORMALIZED,
        CAPACITY_RESERVATION_ID,
        CAPACITY_RESERVATION_TYPE,
        CAPACITY_RESERVATION_INTERRUPTIBLE,
    }
)
