"""What blocks a node's disruption, as data: the kind of blocker and the names of what blocks.

Pure. The disruption engine returns one `Blocker` per node a blocker holds, beside its reason
text (`DisruptionResult.blockers`); the consolidator's `DisruptionBlocked` Event is chosen from
it (`nodewright.model.event.disruption_rejected`), not from the words of the text.
"""

from __future__ import annotations

from dataclasses import dataclass

from nodewright.model.errors import InvalidValue

# The node carries karpenter.sh/do-not-disrupt: names is the node.
DO_NOT_DISRUPT_NODE = "do-not-disrupt-node"
# A pod on the node carries karpenter.sh/do-not-disrupt: names is the pod's key.
DO_NOT_DISRUPT_POD = "do-not-disrupt-pod"
# A pod's PodDisruptionBudget allows no eviction now (or several select it): names are the budgets.
PDB = "pdb"
# The NodePool's disruption budgets allow no more disruptions for the reason: names is the NodePool.
BUDGET = "budget"
# The node's last drain stalled on PodDisruptionBudgets and was given up: no names.
STALLED_DRAIN = "stalled-drain"
KINDS = (DO_NOT_DISRUPT_NODE, DO_NOT_DISRUPT_POD, PDB, BUDGET, STALLED_DRAIN)


@dataclass(frozen=True, slots=True)
class Blocker:
    """One blocker of a node's disruption: `kind` (one of KINDS) and the `names` it concerns
    (namespace/name for pods and PodDisruptionBudgets, the name for nodes and NodePools).
    """

    kind: str
    names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise InvalidValue(f"disruption blocker kind {self.kind!r} is not one of {', '.join(KINDS)}")
