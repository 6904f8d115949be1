"""What Nodewright knows about the EKS cluster it scales (from DescribeCluster). Pure."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ClusterInfo:
    """The cluster's API endpoint and CA (for the client and node user data), its Kubernetes
    version (for AMI lookups), and its service CIDR (for nodeadm's NodeConfig).
    """

    name: str
    endpoint: str
    certificate_authority: str  # base64 PEM, as DescribeCluster returns it
    version: str  # "1.31"
    service_cidr: str = "10.100.0.0/16"
    ip_family: str = "ipv4"
