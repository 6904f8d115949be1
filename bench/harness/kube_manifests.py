"""A canned EKS cluster as the API server returns it: nodes, pods, daemonsets and PDBs as JSON.

Role: the Kubernetes-facing benchmarks (`bench.kube_snapshot`, `bench.api_load`) serve and parse
the same realistic objects: pods as `kubectl get -o json` shows a real EKS cluster's (managedFields,
env, probes, volumes, container statuses, the default tolerations; for some deployments spread
constraints, affinity, init containers and limits), nodes with EKS's labels and conditions.
Deterministic: object `i` is the same on every run.
"""

from __future__ import annotations

import base64
from typing import Any

ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
TYPES = ("m6i.2xlarge", "c6i.4xlarge", "r6i.2xlarge", "m7g.xlarge")
# Only the PEM marker matters: the server speaks plain HTTP, so the CA file is never used.
DUMMY_CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n").decode()
CREATED = "2025-03-01T10:00:00Z"


# ---------------------------------------------------------------------- the canned cluster


def node(i: int) -> dict[str, Any]:
    zone = ZONES[i % len(ZONES)]
    name = f"ip-10-0-{i // 250}-{i % 250}.ec2.internal"
    return {
        "metadata": {
            "name": name,
            "uid": f"6c1f0e6e-0000-4000-8000-{i:012d}",
            "resourceVersion": str(100000 + i),
            "creationTimestamp": CREATED,
            "labels": {
                "beta.kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/instance-type": TYPES[i % len(TYPES)],
                "beta.kubernetes.io/os": "linux",
                "failure-domain.beta.kubernetes.io/region": "us-east-1",
                "failure-domain.beta.kubernetes.io/zone": zone,
                "karpenter.sh/capacity-type": "spot" if i % 3 else "on-demand",
                "karpenter.sh/nodepool": "default",
                "karpenter.k8s.aws/instance-category": "m",
                "karpenter.k8s.aws/instance-family": "m6i",
                "karpenter.k8s.aws/instance-generation": "6",
                "karpenter.k8s.aws/instance-size": "2xlarge",
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "node.kubernetes.io/instance-type": TYPES[i % len(TYPES)],
                "topology.kubernetes.io/region": "us-east-1",
                "topology.kubernetes.io/zone": zone,
            },
            "annotations": {
                "alpha.kubernetes.io/provided-node-ip": f"10.0.{i // 250}.{i % 250}",
                "karpenter.sh/nodepool-hash": "6821555240594823858",
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
            "managedFields": [
                {
                    "apiVersion": "v1",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:status": {"f:conditions": {}, "f:images": {}, "f:nodeInfo": {}}},
                    "manager": "kubelet",
                    "operation": "Update",
                    "subresource": "status",
                    "time": CREATED,
                }
            ],
        },
        "spec": {"providerID": f"aws:///{zone}/i-0{i:016x}"},
        "status": {
            "addresses": [
                {"address": f"10.0.{i // 250}.{i % 250}", "type": "InternalIP"},
                {"address": name, "type": "Hostname"},
            ],
            "allocatable": {
                "cpu": "7910m",
                "ephemeral-storage": "95551679124",
                "hugepages-1Gi": "0",
                "hugepages-2Mi": "0",
                "memory": "31482732Ki",
                "pods": "58",
            },
            "capacity": {
                "cpu": "8",
                "ephemeral-storage": "104845292Ki",
                "hugepages-1Gi": "0",
                "hugepages-2Mi": "0",
                "memory": "32408428Ki",
                "pods": "58",
            },
            "conditions": [
                {"type": kind, "status": "False", "reason": f"Kubelet{kind}", "lastHeartbeatTime": CREATED}
                for kind in ("MemoryPressure", "DiskPressure", "PIDPressure")
            ]
            + [{"type": "Ready", "status": "True", "reason": "KubeletReady", "lastHeartbeatTime": CREATED}],
            "images": [
                {"names": [f"602401143452.dkr.ecr.us-east-1.amazonaws.com/image-{k}@sha256:{'a' * 64}"], "sizeBytes": 1}
                for k in range(8)
            ],
            "nodeInfo": {
                "architecture": "amd64",
                "containerRuntimeVersion": "containerd://1.7.27",
                "kernelVersion": "6.1.132-147.221.amzn2023.x86_64",
                "kubeletVersion": "v1.31.7-eks-473151a",
                "operatingSystem": "linux",
                "osImage": "Amazon Linux 2023.7.20250414",
            },
        },
    }


def pod(i: int, node_name: str) -> dict[str, Any]:
    app = f"service-{i % 40}"
    ns = f"team-{i % 8}"
    pending = not node_name
    container: dict[str, Any] = {
        "name": app,
        "image": f"123456789012.dkr.ecr.us-east-1.amazonaws.com/{app}:v1.{i % 7}.3",
        "imagePullPolicy": "IfNotPresent",
        "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
        "env": [
            {"name": "SERVICE_NAME", "value": app},
            {"name": "LOG_LEVEL", "value": "info"},
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}},
        ],
        "resources": {
            "requests": {"cpu": ("100m", "250m", "500m", "1")[i % 4], "memory": ("128Mi", "512Mi", "1Gi")[i % 3]}
        },
        "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080, "scheme": "HTTP"}, "periodSeconds": 10},
        "livenessProbe": {"httpGet": {"path": "/live", "port": 8080, "scheme": "HTTP"}, "periodSeconds": 10},
        "volumeMounts": [
            {"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "name": "kube-api-access", "readOnly": True}
        ],
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
    }
    if i % 5 == 0:
        container["resources"]["limits"] = {"memory": "2Gi"}
    spec: dict[str, Any] = {
        "containers": [container],
        "dnsPolicy": "ClusterFirst",
        "enableServiceLinks": True,
        "preemptionPolicy": "PreemptLowerPriority",
        "priority": 0,
        "restartPolicy": "Always",
        "schedulerName": "default-scheduler",
        "securityContext": {},
        "serviceAccount": "default",
        "serviceAccountName": "default",
        "terminationGracePeriodSeconds": 30,
        "tolerations": [
            {
                "effect": "NoExecute",
                "key": "node.kubernetes.io/not-ready",
                "operator": "Exists",
                "tolerationSeconds": 300,
            },
            {
                "effect": "NoExecute",
                "key": "node.kubernetes.io/unreachable",
                "operator": "Exists",
                "tolerationSeconds": 300,
            },
        ],
        "volumes": [
            {
                "name": "kube-api-access",
                "projected": {
                    "defaultMode": 420,
                    "sources": [
                        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                        {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}},
                    ],
                },
            }
        ],
    }
    if node_name:
        spec["nodeName"] = node_name
    if i % 40 < 8:
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": app}},
            }
        ]
    if 8 <= i % 40 < 12:
        spec["affinity"] = {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 100,
                        "podAffinityTerm": {
                            "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": [app]}]},
                            "topologyKey": "kubernetes.io/hostname",
                        },
                    }
                ]
            },
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}
                    ]
                }
            },
        }
    if 12 <= i % 40 < 14:
        spec["initContainers"] = [
            {"name": "migrate", "image": "migrate:1", "resources": {"requests": {"cpu": "200m", "memory": "256Mi"}}}
        ]
    conditions = (
        [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/300 nodes are available"}]
        if pending
        else [
            {"type": kind, "status": "True", "lastTransitionTime": CREATED}
            for kind in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")
        ]
    )
    status: dict[str, Any] = {
        "phase": "Pending" if pending else "Running",
        "qosClass": "Burstable",
        "conditions": conditions,
    }
    if not pending:
        status.update(
            hostIP="10.0.1.17",
            podIP=f"10.0.{i // 250 % 250}.{i % 250}",
            startTime=CREATED,
            containerStatuses=[
                {
                    "name": app,
                    "containerID": f"containerd://{'c' * 64}",
                    "image": container["image"],
                    "imageID": f"{container['image']}@sha256:{'b' * 64}",
                    "ready": True,
                    "restartCount": 0,
                    "started": True,
                    "state": {"running": {"startedAt": CREATED}},
                }
            ],
        )
    name = f"{app}-7d9f8c6b5-{i:05d}"
    return {
        "metadata": {
            "name": name,
            "namespace": ns,
            "uid": f"0b6a1e2c-0000-4000-8000-{i:012d}",
            "resourceVersion": str(200000 + i),
            "creationTimestamp": CREATED,
            "generateName": f"{app}-7d9f8c6b5-",
            "labels": {"app": app, "pod-template-hash": "7d9f8c6b5", "team": ns},
            "annotations": {"kubectl.kubernetes.io/restartedAt": CREATED},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "blockOwnerDeletion": True,
                    "controller": True,
                    "kind": "ReplicaSet",
                    "name": f"{app}-7d9f8c6b5",
                    "uid": f"rs-{i % 40}",
                }
            ],
            "managedFields": [
                {
                    "apiVersion": "v1",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {
                        "f:metadata": {"f:generateName": {}, "f:labels": {"f:app": {}}, "f:ownerReferences": {}},
                        "f:spec": {"f:containers": {f'k:{{"name":"{app}"}}': {"f:image": {}, "f:env": {}}}},
                    },
                    "manager": "kube-controller-manager",
                    "operation": "Update",
                    "time": CREATED,
                },
                {
                    "apiVersion": "v1",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:status": {"f:conditions": {}, "f:containerStatuses": {}, "f:podIP": {}}},
                    "manager": "kubelet",
                    "operation": "Update",
                    "subresource": "status",
                    "time": CREATED,
                },
            ],
        },
        "spec": spec,
        "status": status,
    }


def daemonset(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "kube-system", "uid": f"ds-{name}", "creationTimestamp": CREATED},
        "spec": {
            "selector": {"matchLabels": {"k8s-app": name}},
            "template": {
                "metadata": {"labels": {"k8s-app": name}},
                "spec": {
                    "containers": [{"name": name, "resources": {"requests": {"cpu": "25m", "memory": "64Mi"}}}],
                    "tolerations": [{"operator": "Exists"}],
                    "priorityClassName": "system-node-critical",
                },
            },
        },
    }


def pdb(i: int) -> dict[str, Any]:
    return {
        "metadata": {"name": f"service-{i}", "namespace": f"team-{i % 8}", "uid": f"pdb-{i}"},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": f"service-{i}"}}},
        "status": {"disruptionsAllowed": 1, "currentHealthy": 10, "desiredHealthy": 9, "expectedPods": 10},
    }


def cluster_objects(pods: int, nodes: int) -> dict[str, list[dict[str, Any]]]:
    """The canned cluster: path of each list -> its items in the API server's key order."""
    node_items = [node(i) for i in range(nodes)]
    names = [n["metadata"]["name"] for n in node_items]
    pod_items = [pod(i, "" if i % 50 == 0 else names[i % nodes]) for i in range(pods)]
    pod_items.sort(key=lambda p: (p["metadata"]["namespace"], p["metadata"]["name"]))
    return {
        "/api/v1/nodes": sorted(node_items, key=lambda n: str(n["metadata"]["name"])),
        "/api/v1/pods": pod_items,
        "/apis/apps/v1/daemonsets": [daemonset(n) for n in ("aws-node", "ebs-csi-node", "kube-proxy", "node-exporter")],
        "/apis/policy/v1/poddisruptionbudgets": [pdb(i) for i in range(40)],
    }
