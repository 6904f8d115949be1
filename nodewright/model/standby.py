"""Standby capacity: the names a standby instance, its claim and its Node carry. Pure.

A CapacityBuffer whose `provisioningStrategy` is `STANDBY_CAPACITY` asks for its room as
*standby* instances: launched, joined and initialized, then stopped (`nodewright.engine.standby`
decides, `nodewright.controllers.standby` acts, `docs/standby.md` explains). While one is stopped:

* its claim's state is `STOPPED` (neither in flight nor initialized: no disruption method, no
  repair and no NodePool budget counts it);
* its Node keeps the `STANDBY_LABEL` (the buffer's `namespace.name`) and carries `STANDBY_TAINT`
  and `spec.unschedulable`, so nothing is placed there and no scheduler counts it as capacity.

When pending pods fit one, the provisioner starts it (StartInstances): its claim's state becomes
`STARTING`, holding those pods, the Node loses the taint and the cordon, and the claim is
initialized again once the kubelet reports Ready.
"""

from __future__ import annotations

from nodewright.model.taints import Taint

# The CapacityBuffer strategy (GKE spells its own `buffer.gke.io/standby-capacity`).
STANDBY_CAPACITY = "nodewright.io/standby-capacity"
# On the claim and the Node of every standby instance: the buffer it serves, `namespace.name`
# (a label value cannot hold a slash; namespaces and names are DNS labels, so a dot is unambiguous).
STANDBY_LABEL = "nodewright.io/standby"
STANDBY_TAINT_KEY = "nodewright.io/standby"
STANDBY_TAINT = Taint(STANDBY_TAINT_KEY, "NoSchedule", "stopped")
# Claim states of a standby instance after its warm-up (`nodewright.model.nodeclaim.STATES`).
STOPPED = "standby"
STARTING = "starting"


def buffer_key(namespace: str, name: str) -> str:
    """The `STANDBY_LABEL` value of a buffer's instances."""
    return f"{namespace}.{name}"
