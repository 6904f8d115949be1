"""NodePools whose EC2NodeClass names a node role the deployment may not pass: held back and reported.

Role: `RoleCheckedConfiguration` wraps the controllers' `Configuration` port. Its `load()` leaves
out each NodePool whose EC2NodeClass's `role` the deployment may not pass (`config.noderoles`:
its own node role and the deploy key `nodeRoles`), so nothing plans or launches from it and no
other role is used in its place, and reports each one where a Karpenter user looks:

* a decision record `nodepool-refused` (the NodePool, the NodeClass, the sentence naming the role
  and the fix) and a Warning Event `NodeRoleNotAllowed` on the NodePool, once per container each
  time the reason changes (the Event folds into a series anyway; the log is the record);
* `refused()`, which the claim mirror writes into the NodePool's status as `NodeClassReady=False`
  and `Ready=False` with the same reason (configSource=crd).

A NodeClass's `instanceProfile` is not checked here (its role is known only from IAM): the launch
refuses it with the same sentence (`adapters.aws.instance_profiles`).
"""

from __future__ import annotations

from nodewright.config.noderoles import ROLE_NOT_ALLOWED, NodeRoles, refused_pools
from nodewright.model.capacitybuffer import CapacityBuffer, PodTemplate
from nodewright.model.event import WARNING, Event, ObjectRef
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodeoverlay import NodeOverlay
from nodewright.model.nodepool import NodePool
from nodewright.ports import Clock, Configuration, EventRecorder, Observer


class RoleCheckedConfiguration:
    """A `Configuration` without the NodePools whose node role is refused (module docstring)."""

    def __init__(
        self, config: Configuration, roles: NodeRoles, events: EventRecorder, clock: Clock, observer: Observer
    ) -> None:
        self.config = config
        self.roles = roles
        self.events = events
        self.clock = clock
        self.observer = observer
        self._refused: dict[str, str] = {}  # by NodePool, as of the last load
        self._reported: dict[str, str] = {}  # by NodePool: the reason last reported by this container

    def load(self) -> tuple[list[NodePool], dict[str, EC2NodeClass]]:
        """The wrapped configuration's NodePools minus the refused ones, and every EC2NodeClass."""
        nodepools, nodeclasses = self.config.load()
        self._refused = refused_pools(nodepools, nodeclasses, self.roles)
        for pool in nodepools:
            why = self._refused.get(pool.name)
            if why is None or self._reported.get(pool.name) == why:
                continue
            self._reported[pool.name] = why
            self.observer.decision(
                "nodepool-refused", nodepool=pool.name, nodeclass=pool.node_class_ref.name, reason=why
            )
            event = Event(ObjectRef.nodepool(pool.name), WARNING, ROLE_NOT_ALLOWED, why, "Provisioning")
            self.events.record(event, self.clock.now())
        for name in set(self._reported) - set(self._refused):
            del self._reported[name]
        return [p for p in nodepools if p.name not in self._refused], nodeclasses

    def overlays(self) -> list[NodeOverlay]:
        """The wrapped configuration's NodeOverlays."""
        return self.config.overlays()

    def buffers(self) -> tuple[tuple[CapacityBuffer, ...], tuple[PodTemplate, ...]]:
        """The wrapped configuration's CapacityBuffers and PodTemplates."""
        return self.config.buffers()

    def refused(self) -> dict[str, str]:
        """The NodePools the last `load()` left out, with why (for their status)."""
        return dict(self._refused)
